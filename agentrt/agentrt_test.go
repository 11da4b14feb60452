package agentrt_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/agentrt"
)

// TestNoPackageNamesARuntimeByHand: outside agentrt, no Go file (tests
// aside) spells a runtime's name — as a string literal, or in a struct
// tag's enum or default — so that the runtimes are one list, and a new
// one is added in one place. (Help text, prose, may name them.)
func TestNoPackageNamesARuntimeByHand(t *testing.T) {
	names := map[string]bool{}
	for _, rt := range append(agentrt.Installable(), agentrt.HookFormats()...) {
		names[string(rt)] = true
	}
	// agentrt.Tmux is left out: "tmux" is also the program live runs.
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "agentrt" || strings.HasPrefix(n, ".") && n != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if n.Tag != nil {
					tag, _ := strconv.Unquote(n.Tag.Value)
					for _, key := range []string{"enum", "default"} {
						for _, v := range strings.Split(reflect.StructTag(tag).Get(key), ",") {
							if names[v] {
								t.Errorf("%s: a %s tag names the runtime %q: use a kong variable from agentrt", fset.Position(n.Pos()), key, v)
							}
						}
					}
				}
				return false
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && names[s] {
					t.Errorf("%s: %q is a runtime's name: use agentrt's constant", fset.Position(n.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLiveDoesNotImportSetup: live reads a runtime's settings through
// agentrt, not through the installer.
func TestLiveDoesNotImportSetup(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list imports with")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/mailfs/mailfs/live").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if slices.Contains(deps, "github.com/mailfs/mailfs/setup") {
		t.Error("live imports setup (directly or through another package)")
	}
	if !slices.Contains(deps, "github.com/mailfs/mailfs/agentrt") {
		t.Errorf("live does not import agentrt: not the import graph expected:\n%s", out)
	}
}

func TestInbound(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	write := func(path, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v, f := agentrt.ClaudeInbound(home, dir); v != "" || f != "" {
		t.Fatalf("no settings: %q from %q", v, f)
	}
	write(filepath.Join(home, "settings.json"), `{"crossSessionInbound": "accept"}`)
	write(filepath.Join(dir, ".claude", "settings.local.json"), "{\n// held here\n\"crossSessionInbound\": \"hold\",\n}")
	if v, f := agentrt.ClaudeInbound(home, dir); v != "hold" || !strings.HasSuffix(f, "settings.local.json") {
		t.Fatalf("claude: %q from %q, want the local file's hold", v, f)
	}
	write(filepath.Join(home, "settings.json"), `{"agents": {"crossSessionInbound": "sometimes"}}`)
	if v, _ := agentrt.QwenInbound(home, dir); v != "hold" {
		t.Fatalf("qwen, an unknown value: %q, want hold", v)
	}
	write(filepath.Join(dir, ".qwen", "settings.json"), `{"agents": {"crossSessionInbound": "refuse"}}`)
	if v, f := agentrt.QwenInbound(home, dir); v != "refuse" || !strings.HasSuffix(f, filepath.Join(".qwen", "settings.json")) {
		t.Fatalf("qwen: %q from %q, want the workspace's refuse", v, f)
	}
}
