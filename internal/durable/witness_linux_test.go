package durable_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

// CreateWitnessed says a folder saw nothing but its own create's rename —
// and says no to any other change to the folder's entries between its two
// stats: another writer's file moved in or made, one removed, one renamed
// within the folder or out of it, a file made in the folder moved
// elsewhere. The other change is made at
// the create's rename step (WithFault), inside the witness's window.
func TestCreateWitnessed(t *testing.T) {
	var during func(dir string)
	at := durable.StepRename
	top := t.TempDir()
	root, d := box(t, top, durable.WithFault(func(s durable.Step, path string) error {
		if s == at && during != nil {
			during(filepath.Join(top, filepath.Dir(path))) // path is the root's
		}
		return nil
	}))
	dir := filepath.Join(root.Path(), "box")
	expect, err := d.ProbeWitness()
	if err != nil || expect <= 0 {
		t.Fatalf("ProbeWitness: %d, %v", expect, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the probe left %v behind", ents)
	}
	os.WriteFile(filepath.Join(dir, "old.json"), []byte("{}"), 0o600)
	os.WriteFile(filepath.Join(dir, "old2.json"), []byte("{}"), 0o600)
	outside := t.TempDir()
	cases := []struct {
		what  string
		do    func(dir string)
		alone bool
	}{
		{"nothing else", nil, true},
		{"a script's drop (temp, then rename)", func(dir string) {
			os.WriteFile(filepath.Join(dir, ".tmp"), []byte("{}"), 0o600)
			os.Rename(filepath.Join(dir, ".tmp"), filepath.Join(dir, "c.json"))
		}, false},
		{"a file moved in from elsewhere", func(dir string) {
			os.WriteFile(filepath.Join(outside, "x"), []byte("{}"), 0o600)
			os.Rename(filepath.Join(outside, "x"), filepath.Join(dir, "x.json"))
		}, false},
		{"an rm", func(dir string) { os.Remove(filepath.Join(dir, "old.json")) }, false},
		{"a rename within the folder", func(dir string) { os.Rename(filepath.Join(dir, "old2.json"), filepath.Join(dir, "old3.json")) }, false},
		{"a rename out of it", func(dir string) { os.Rename(filepath.Join(dir, "old2.json"), filepath.Join(outside, "gone.json")) }, false},
		// What an entry holds is not watched: it moves no stamp, and no
		// index ever saw it at once (the documented limit of rewrites in
		// place).
		{"a write in place", func(dir string) {
			f, _ := os.OpenFile(filepath.Join(dir, "old2.json"), os.O_WRONLY, 0)
			f.Write([]byte("{ }"))
			f.Close()
		}, true},
		{"a chmod", func(dir string) { os.Chmod(filepath.Join(dir, "old2.json"), 0o640) }, true},
		{"nothing else, again", nil, true},
	}
	n := 0
	for _, step := range []durable.Step{durable.StepCreateTemp, durable.StepRename} {
		at = step
		for _, c := range cases {
			// What the cases change, made anew (before the window opens).
			os.WriteFile(filepath.Join(dir, "old.json"), []byte("{}"), 0o600)
			os.Remove(filepath.Join(dir, "old3.json"))
			os.WriteFile(filepath.Join(dir, "old2.json"), []byte("{}"), 0o600)
			os.Chmod(filepath.Join(dir, "old2.json"), 0o600)
			during = c.do
			n++
			name := fmt.Sprintf("m%d.json", n)
			w, err := d.CreateWitnessed(name, []byte("{}"), expect)
			if err != nil {
				t.Fatalf("%s at %v: %v", c.what, step, err)
			}
			if w.Alone != c.alone {
				t.Errorf("%s at %v: alone %v, want %v", c.what, step, w.Alone, c.alone)
			}
			if w.Alone && w.Before == w.After {
				t.Errorf("%s: the folder's stamp did not move across the rename", c.what)
			}
		}
	}
	// The witness watches the folder itself, wherever it goes: moved
	// away (which changes none of its entries), and then written to there.
	at = durable.StepRename
	during = func(dir string) {
		os.Rename(dir, dir+".moved")
		os.WriteFile(filepath.Join(dir+".moved", "there.json"), []byte("{}"), 0o600)
	}
	if w, err := d.CreateWitnessed("late.json", []byte("{}"), expect); err != nil || w.Alone {
		t.Errorf("the folder moved away and was written to during the create: alone %v (%v)", w.Alone, err)
	}
}

// Under the rename fallback (link and unlink) there is no witness, nor
// without a count of what a create raises: Alone is false, and the create
// is made all the same.
func TestCreateWitnessedFallback(t *testing.T) {
	root, d := box(t, t.TempDir(), durable.WithFallback())
	w, err := d.CreateWitnessed("a.json", []byte("{}"), 6)
	if err != nil || w.Alone {
		t.Fatalf("alone %v, %v; want a create and no word", w.Alone, err)
	}
	// And without a count learnt, none either.
	_, d2 := box(t, t.TempDir())
	if w, err := d2.CreateWitnessed("a.json", []byte("{}"), 0); err != nil || w.Alone {
		t.Fatalf("with no count: alone %v, %v", w.Alone, err)
	}
	if _, err := os.Stat(filepath.Join(root.Path(), "box", "a.json")); err != nil {
		t.Fatal(err)
	}
}

// box opens a root at dir with opts and makes its folder "box"; both are
// closed when the test ends.
func box(t *testing.T, dir string, opts ...durable.Option) (*durable.Root, *durable.Dir) {
	t.Helper()
	root, err := durable.OpenRoot(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	d, err := root.MkdirAll("box")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return root, d
}
