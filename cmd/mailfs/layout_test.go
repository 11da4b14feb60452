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
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		self := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
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
	if n < 20 {
		t.Fatalf("go list listed %d packages", n)
	}
}
