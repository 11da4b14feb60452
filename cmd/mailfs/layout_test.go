package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Imports point down (docs/layout.md): a package of internal/ imports
// nothing of mailfs outside internal/; no library imports a command or
// cmd/internal/; cmd/internal/ is imported only from cmd/.
func TestImportsPointDown(t *testing.T) {
	const mod = "github.com/mailfs/mailfs/"
	pkgs := goListImports(t, "../../...")
	for self, imports := range pkgs {
		self = strings.TrimPrefix(self, mod)
		for _, imp := range imports {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			dep := strings.TrimPrefix(imp, mod)
			switch {
			case strings.HasPrefix(self, "internal/") && !strings.HasPrefix(dep, "internal/"):
				t.Errorf("%s, a leaf of internal/, imports %s", self, dep)
			case !strings.HasPrefix(self, "cmd/") && strings.HasPrefix(dep, "cmd/"):
				t.Errorf("%s, a library, imports %s", self, dep)
			}
		}
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list listed %d packages", len(pkgs))
	}
}

// goListImports runs go list with args and returns each package it
// lists with the packages that package imports.
func goListImports(t *testing.T, args ...string) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-json=ImportPath,Imports"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][]string{}
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(out)))
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p.Imports
	}
	return pkgs
}
