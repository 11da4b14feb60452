//go:build unix

package durable_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

func openRoot(t *testing.T, opts ...durable.Option) (*durable.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := durable.OpenRoot(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

func mkdir(t *testing.T, r *durable.Root, rel string) *durable.Dir {
	t.Helper()
	d, err := r.MkdirAll(rel)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// names lists a directory on disk, dot-files included.
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestMkdirAllPermsIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	r, dir := openRoot(t)
	mkdir(t, r, "a/b/c")
	for _, p := range []string{"a", "a/b", "a/b/c"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != durable.DirPerm {
			t.Errorf("%s: mode %v, want %v", p, got, durable.DirPerm)
		}
	}
}

func TestCreateWritesPrivateFileAndNeverReplaces(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	r, dir := openRoot(t)
	d := mkdir(t, r, "box")
	if err := d.Create("m.json", []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := d.Create("m.json", []byte("second"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second Create: got %v, want fs.ErrExist", err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "box", "m.json"))
	if err != nil || string(got) != "first" {
		t.Fatalf("content %q, %v; want the first write kept", got, err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "box", "m.json"))
	if fi.Mode().Perm() != durable.Perm {
		t.Errorf("mode %v, want %v", fi.Mode().Perm(), durable.Perm)
	}
	if n := names(t, filepath.Join(dir, "box")); len(n) != 1 {
		t.Errorf("directory holds %q, want only m.json (no temp left behind)", n)
	}
}

func TestConcurrentCreateOneWinner(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "box")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = d.Create("same.json", []byte{byte('a' + i)}) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("unexpected error %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d creators won, want exactly 1", won)
	}
	if n := names(t, filepath.Join(dir, "box")); len(n) != 1 {
		t.Errorf("directory holds %q, want one file", n)
	}
}

func TestExchange(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "box")
	path := filepath.Join(dir, "box", "m.json")

	t.Run("replaces an existing file", func(t *testing.T) {
		if err := d.Create("m.json", []byte("old")); err != nil {
			t.Fatal(err)
		}
		var seen []byte
		err := d.Exchange("m.json", []byte("new"), func(old []byte) bool { seen = old; return true })
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != "new" || string(seen) != "old" {
			t.Fatalf("file %q, check saw %q", got, seen)
		}
	})
	t.Run("undoes the swap when check refuses", func(t *testing.T) {
		err := d.Exchange("m.json", []byte("newer"), func([]byte) bool { return false })
		if !errors.Is(err, durable.ErrChanged) {
			t.Fatalf("got %v, want ErrChanged", err)
		}
		if got, _ := os.ReadFile(path); string(got) != "new" {
			t.Fatalf("file %q, want the swap undone", got)
		}
	})
	t.Run("never resurrects a removed file", func(t *testing.T) {
		os.Remove(path)
		err := d.Exchange("m.json", []byte("ghost"), nil)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("got %v, want fs.ErrNotExist", err)
		}
		if n := names(t, filepath.Join(dir, "box")); len(n) != 0 {
			t.Fatalf("directory holds %q, want nothing", n)
		}
	})
}

func TestReplaceKeepsTempInDir(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r, dir := openRoot(t)
	d := mkdir(t, r, "cfg")
	for _, s := range []string{"one", "two"} {
		if err := d.Replace("g.json", []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "cfg", "g.json")); string(got) != "two" {
		t.Fatalf("got %q, want the last write", got)
	}
	if n := names(t, os.Getenv("TMPDIR")); len(n) != 0 {
		t.Errorf("TMPDIR holds %q: temps must stay in the target directory", n)
	}
}

func TestMoveNeverReplaces(t *testing.T) {
	r, dir := openRoot(t)
	a, b := mkdir(t, r, "a"), mkdir(t, r, "b")
	a.Create("x", []byte("from a"))
	b.Create("x", []byte("already in b"))
	if err := a.Move("x", b, "x"); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("got %v, want fs.ErrExist", err)
	}
	if err := a.Move("gone", b, "y"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("got %v, want fs.ErrNotExist", err)
	}
	if err := a.Move("x", b, "x2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b", "x")); string(got) != "already in b" {
		t.Errorf("b/x = %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "b", "x2")); string(got) != "from a" {
		t.Errorf("b/x2 = %q", got)
	}
}

func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "box")
	box := filepath.Join(dir, "box")
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o600)
	os.Symlink(outside, filepath.Join(box, "link.json"))
	if err := syscall.Mkfifo(filepath.Join(box, "fifo.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(box, "sub.json"), 0o700)
	os.WriteFile(filepath.Join(box, "big.json"), bytes.Repeat([]byte("x"), 100), 0o600)

	for name, want := range map[string]error{
		"link.json": durable.ErrNotRegular,
		"fifo.json": durable.ErrNotRegular, // and it must not block
		"sub.json":  durable.ErrNotRegular,
		"big.json":  durable.ErrTooLarge,
		"none.json": fs.ErrNotExist,
		"../x":      durable.ErrBadName,
	} {
		data, _, err := d.ReadFile(name, 99)
		if !errors.Is(err, want) || data != nil {
			t.Errorf("ReadFile(%q) = %q, %v; want %v", name, data, err, want)
		}
	}
}

func TestWalkRefusesSymlinks(t *testing.T) {
	r, dir := openRoot(t)
	outside := t.TempDir()
	mkdir(t, r, "state/mail")
	os.Symlink(outside, filepath.Join(dir, "state", "mail", "evil"))
	os.Symlink("mail", filepath.Join(dir, "state", "inside"))

	for _, rel := range []string{"state/mail/evil", "state/mail/evil/archive", "state/inside/x"} {
		for _, create := range []bool{false, true} {
			open := r.Open
			if create {
				open = r.MkdirAll
			}
			d, err := open(rel)
			if !errors.Is(err, durable.ErrNotDir) {
				t.Errorf("open(%q, create=%v) = %v; want ErrNotDir", rel, create, err)
				if d != nil {
					d.Close()
				}
			}
		}
	}
	if n := names(t, outside); len(n) != 0 {
		t.Errorf("wrote %q outside the root", n)
	}
	for _, rel := range []string{"../x", "a//b", "a/./b", "/abs"} {
		if _, err := r.MkdirAll(rel); !errors.Is(err, durable.ErrBadName) {
			t.Errorf("MkdirAll(%q) = %v; want ErrBadName", rel, err)
		}
	}
}

func TestFaultAtEveryStepLeavesNothingVisible(t *testing.T) {
	for step := durable.StepCreateTemp; step < durable.StepDone; step++ {
		t.Run(step.String(), func(t *testing.T) {
			boom := errors.New("injected")
			r, dir := openRoot(t, durable.WithFault(func(s durable.Step, path string) error {
				if s == step {
					return boom
				}
				return nil
			}))
			d := mkdir(t, r, "box")
			if err := d.Create("m.json", []byte("x")); !errors.Is(err, boom) {
				t.Fatalf("Create = %v, want the injected error", err)
			}
			if n := names(t, filepath.Join(dir, "box")); len(n) != 0 {
				t.Fatalf("after a failed Create the directory holds %q", n)
			}
		})
	}
}

// Replace writes into the directory its handle was opened on, through that
// descriptor: a directory swapped for a symbolic link afterwards (here one
// that stays inside the root, which os.Root would follow) is never written
// through.
func TestReplaceNeverFollowsASwappedDirectory(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "state/groups")
	mkdir(t, r, "state/elsewhere")
	if err := os.Rename(filepath.Join(dir, "state/groups"), filepath.Join(dir, "state/moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("elsewhere", filepath.Join(dir, "state/groups")); err != nil {
		t.Fatal(err)
	}
	if err := d.Replace("g.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got := names(t, filepath.Join(dir, "state/elsewhere")); len(got) != 0 {
		t.Fatalf("Replace wrote through the symlink: %v", got)
	}
	if got := names(t, filepath.Join(dir, "state/moved")); len(got) != 1 || got[0] != "g.json" {
		t.Fatalf("the directory the handle names holds %v, want g.json", got)
	}
}

// ReplaceEphemeral replaces atomically, through a temp in the directory,
// and never reaches an fsync step; Replace reaches both.
func TestReplaceEphemeralSkipsOnlyTheSyncs(t *testing.T) {
	var steps []durable.Step
	r, dir := openRoot(t, durable.WithFault(func(s durable.Step, path string) error {
		steps = append(steps, s)
		return nil
	}))
	d := mkdir(t, r, "runtime")
	for _, s := range []string{"one", "two"} {
		if err := d.ReplaceEphemeral("seen.json", []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "runtime", "seen.json")); string(got) != "two" {
		t.Fatalf("got %q, want the last write", got)
	}
	if n := names(t, filepath.Join(dir, "runtime")); len(n) != 1 {
		t.Fatalf("directory holds %q, want the file alone", n)
	}
	if slices.Contains(steps, durable.StepSync) || slices.Contains(steps, durable.StepSyncDir) || !slices.Contains(steps, durable.StepRename) {
		t.Fatalf("ephemeral steps %v: want a rename and no fsync", steps)
	}
	steps = nil
	if err := d.Replace("seen.json", []byte("three")); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, durable.StepSync) || !slices.Contains(steps, durable.StepSyncDir) {
		t.Fatalf("durable steps %v: want both fsyncs", steps)
	}
}

// EachName lists what Each lists, names and types, over several buffers'
// worth of entries, and may be called again from the start.
func TestEachNameListsWhatEachLists(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "q")
	for i := range 3000 { // long names: more than one 32 KiB getdents buffer
		os.WriteFile(filepath.Join(dir, "q", fmt.Sprintf("2026-01-01T00-00-00.%09dZ-a-rather-long-sender-name.json", i)), nil, 0o600)
	}
	os.Mkdir(filepath.Join(dir, "q", "sub"), 0o700)
	os.Symlink("x", filepath.Join(dir, "q", "link.json"))
	want := map[string]bool{}
	d.Each(func(e fs.DirEntry) { want[e.Name()] = e.Type().IsRegular() })
	for range 2 {
		got := map[string]bool{}
		if err := d.EachName(func(name []byte, regular bool) { got[string(name)] = regular }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3002 || !maps.Equal(got, want) {
			t.Fatalf("EachName listed %d entries, Each %d; they differ", len(got), len(want))
		}
	}
}
