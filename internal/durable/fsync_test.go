package durable_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/internal/durable"
)

// Every durable operation makes its fsync calls: the file's (the data) and
// the directory's (the name). The fault steps stand in for the calls in
// the fault tests; this counts the calls themselves, so that removing one
// fails a test even where its step stays.
func TestDurableWritesFsync(t *testing.T) {
	var files, dirs int
	count := func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			dirs++
		} else {
			files++
		}
		return unix.Fsync(fd)
	}
	r, _ := openRoot(t, durable.WithFsync(count))
	check := func(what string, wantFiles, wantDirs int, do func() error) {
		t.Helper()
		files, dirs = 0, 0
		if err := do(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if files != wantFiles || dirs != wantDirs {
			t.Errorf("%s: %d file and %d directory fsyncs, want %d and %d", what, files, dirs, wantFiles, wantDirs)
		}
	}
	var d *durable.Dir
	check("MkdirAll of two new folders", 0, 2, func() (err error) { d, err = r.MkdirAll("a/b"); return err })
	t.Cleanup(func() { d.Close() })
	check("Create", 1, 1, func() error { return d.Create("x.json", []byte("1")) })
	check("Replace", 1, 1, func() error { return d.Replace("x.json", []byte("2")) })
	check("Exchange", 1, 1, func() error { return d.Exchange("x.json", []byte("3"), nil) })
	check("CreateEphemeral (no fsync, by design)", 0, 0, func() error { return d.CreateEphemeral("y.json", []byte("1")) })
	check("Sync", 0, 1, d.Sync)
	check("ReplaceUnsynced (the batch syncs once, by design)", 0, 0, func() error { return d.ReplaceUnsynced("z.json", []byte("1")) })
	check("SyncFS (one sync, through the root's folder)", 0, 1, r.SyncFS)
	check("MkSub of a new folder", 0, 1, func() error {
		s, err := d.MkSub("c")
		if err == nil {
			s.Close()
		}
		return err
	})
}

// A batch written with ReplaceUnsynced is whole and in place at once, and
// SyncFS makes it durable in one call (syncfs(2) on Linux); a failing sync
// is reported, naming the call.
func TestSyncFSMakesABatchDurable(t *testing.T) {
	if !durable.CanSyncFS {
		r, _ := openRoot(t)
		if err := r.SyncFS(); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("SyncFS without syncfs(2): %v, want ErrUnsupported", err)
		}
		return
	}
	r, _ := openRoot(t)
	d, err := r.MkdirAll("box")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := range 20 {
		if err := d.ReplaceUnsynced(fmt.Sprintf("%02d.json", i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.SyncFS(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		data, _, err := d.ReadFile(fmt.Sprintf("%02d.json", i), 100)
		if err != nil || string(data) != fmt.Sprint(i) {
			t.Fatalf("file %d: %q %v", i, data, err)
		}
	}
	failing, _ := openRoot(t, durable.WithFsync(func(int) error { return unix.EIO }))
	if err := failing.SyncFS(); !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), "syncfs") {
		t.Fatalf("a failing sync: %v", err)
	}
}
