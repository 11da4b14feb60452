package maildir_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// contract names the exported names no other package of mailfs uses, each
// with why a library user needs it: what the format says (SPEC), what a
// method returns, what errors.Is and errors.As test for.
var contract = map[string]string{
	"RootName": "format: the root folder's name", "HostFile": "format: the host record",
	"OnceDir": "format: where keyed sends are recorded", "OnceName": "format: the name of a key's record", "OnceWindow": "documents SendOnce's window",
	"MaxKeyLen": "documents CheckKey's limit", "ErrBadKey": "errors.Is target",
	"StampLayout": "format: a message id's stamp", "ShortStampLayout": "format: the short stamp",
	"DefaultType": "format: a message's type when absent", "MaxAgentLen": "format: the longest name",
	"AllGroup": "format: the group of every agent", "NeglectedAfter": "documents Counts.Neglected",
	"Candidate": "the class Classify gives a message file",
	"Counts":    "returned by Store.Count", "Claim": "Message.Claim's type", "Request": "returned by Store.Requests",
	"Entry": "returned by Store.Entries", "Served": "returned by Store.ServeRequests", "Written": "returned by Store.Send",
	"AmbiguousError": "errors.As target", "NameError": "errors.As target",
	"ErrGroupCycle": "errors.Is target", "ErrUnfinishedMove": "errors.Is target", "ErrUnclaimable": "errors.Is target (a claim's warning, Claimable)", "ErrClaimHere": "errors.Is target", "ErrSameClaimant": "errors.Is target",
	"ErrStale": "errors.Is target (StaleError)", "Arrivals": "reads what NoteArrivals wrote, the order a claim on the home follows (runtime/arrivals, docs/routing.md)", "Reassign": "Release's twin: the reassign of any claimed item, done or not (ReassignSeen checks)",
	// Methods that satisfy an interface, or that a test outside uses.
	"MarshalText": "encoding.TextMarshaler", "UnmarshalText": "encoding.TextUnmarshaler", "MarshalJSON": "json.Marshaler",
	"Is": "errors.Is", "Unwrap": "errors.Unwrap", "Error": "error", "String": "fmt.Stringer",
	"Requests": "the claim requests waiting, for a caller that serves them", "Match": "what a Matcher is for",
}

// maildir's exported surface is what a user of the library needs: every
// exported name is used by another package of mailfs or is in contract
// (the format, a result type, an error to test for). A name only maildir
// uses is unexported (or moved under internal/), so that the surface does
// not grow by accident.
func TestExportedNamesHaveUsers(t *testing.T) {
	fset := token.NewFileSet()
	var names []string
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = append(names, s.Name.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	var outside strings.Builder // every other package's source
	err := filepath.WalkDir("..", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "testdata" || e.Name() == "maildir" || strings.HasPrefix(e.Name(), ".") && p != "..") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			data, err := os.ReadFile(p)
			outside.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\.([A-Z][A-Za-z0-9]*)\b`).FindAllStringSubmatch(outside.String(), -1) {
		used[m[1]] = true
	}
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		if !ast.IsExported(n) || used[n] || contract[n] != "" {
			continue
		}
		t.Errorf("maildir.%s is exported, but no other package uses it and it is not in contract: unexport it, or say why a library user needs it", n)
	}
	if len(names) < 100 {
		t.Fatalf("found only %d names: the test reads too little", len(names))
	}
}
