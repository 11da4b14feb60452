package chipset_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyChipsetOpensARoot holds mailfs to one guarded way into a root:
// outside tests, only this package calls durable.OpenRoot, so that every
// root is opened with the format guard, the confinement and the one link
// rule (Root.Linked), and every other directory through OpenOther. A
// package that opens a root its own way fails this, naming the file.
func TestOnlyChipsetOpensARoot(t *testing.T) {
	module, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	err = filepath.WalkDir(module, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "testdata" || strings.HasPrefix(e.Name(), ".") && path != module) {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(module, path)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		seen++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "OpenRoot" {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			inDurable := strings.HasPrefix(filepath.ToSlash(rel), "internal/durable/")
			inChipset := strings.HasPrefix(filepath.ToSlash(rel), "internal/chipset/")
			if ok && pkg.Name == "durable" && !inChipset && !inDurable {
				t.Errorf("%s: durable.OpenRoot outside internal/chipset: open a mailfs root with chipset.New, any other directory with chipset.OpenOther", fset.Position(sel.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("read only %d Go files under %s: not the module expected", seen, module)
	}
}
