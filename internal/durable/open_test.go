package durable_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// Every way mailfs opens a file it did not just create — a read, a head,
// a read at an offset, an append to a log (a send's adds note), a chmod,
// a lock file (live's deliverer lock) —
// goes through one open that never blocks and takes only a regular file:
// a FIFO in the place of a note, with or without a reader, is refused at
// once (Why 7: a FIFO at a mailbox's adds note hung every send into it).
func TestOpensNeverBlockOnAFIFO(t *testing.T) {
	r, dir := openRoot(t)
	d := mkdir(t, r, "index")
	fifo := filepath.Join(dir, "index", "state~mail~toast.adds")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ops := map[string]func() error{
		"ReadFile":        func() error { _, _, err := d.ReadFile("state~mail~toast.adds", 1<<20); return err },
		"Head":            func() error { _, err := d.Head("state~mail~toast.adds", 10); return err },
		"ReadAt":          func() error { _, err := d.ReadAt("state~mail~toast.adds", 5, 10); return err },
		"AppendEphemeral": func() error { return d.AppendEphemeral("state~mail~toast.adds", []byte("note\n")) },
		"Chmod":           func() error { return d.Chmod("state~mail~toast.adds", 0o600) },
		"TryLockFile":     func() error { _, err := d.TryLockFile("state~mail~toast.adds"); return err },
	}
	for _, reader := range []bool{false, true} {
		if reader { // a process holding the FIFO open for reading
			f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
		}
		for name, op := range ops {
			done := make(chan error, 1)
			go func() { done <- op() }()
			select {
			case err := <-done:
				if !errors.Is(err, durable.ErrNotRegular) {
					t.Errorf("%s with a reader %v: %v, want ErrNotRegular", name, reader, err)
				}
			case <-time.After(10 * time.Second):
				// Unblock it, so that the test ends, then fail.
				if f, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
					defer f.Close()
				}
				<-done
				t.Errorf("%s with a reader %v blocked on a FIFO", name, reader)
			}
		}
	}
}
