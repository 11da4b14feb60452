package gascity

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

func touch(t *testing.T, path string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// openTown opens the store as the mailfs programs do for Gas City
// (cmd/internal/citytown.Open): $MAILFS_ROOT, else the city's root, else
// the nearest .chipset above the working directory.
func openTown(func(error)) (*maildir.Store, error) {
	root := os.Getenv("MAILFS_ROOT")
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if root = CityRoot(os.Getenv, wd, nil); root == "" {
			root = maildir.FindRoot(wd)
		}
	}
	return maildir.Open(root)
}

// Agents working in different rigs of one city share one root: mail sent
// from one rig is in the inbox read from another.
func TestOneCityOneRoot(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	touch(t, filepath.Join(city, "city.toml"))
	t.Setenv("MAILFS_ROOT", "")
	call := func(wd, stdin string, args ...string) string {
		t.Helper()
		os.MkdirAll(wd, 0o755)
		t.Chdir(wd)
		var out, errb bytes.Buffer
		if code := Run(args, strings.NewReader(stdin), &out, &errb, openTown); code != 0 {
			t.Fatalf("%v in %s: %d %s", args, wd, code, errb.String())
		}
		return out.String()
	}
	call(filepath.Join(city, "rigs", "frontend"), `{"from":"frontend/polecat","subject":"done","body":"x"}`, "send", "mayor")
	call(filepath.Join(city, "rigs", "backend", "deep"), `{"from":"backend/witness","subject":"ok","body":"y"}`, "send", "mayor")
	if out := call(city, "", "inbox", "mayor"); strings.Count(out, `"id"`) != 2 {
		t.Fatalf("the mayor's inbox, read in the city, does not hold both rigs' mail: %s", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(city, "rigs", "frontend")); len(entries) != 0 {
		t.Fatalf("a root was made in the rig: %v", entries)
	}
}
