//go:build linux

package durable_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// In fallback mode a rewrite moves the file aside for an instant. A lookup
// that arrives then must wait for the rewrite, not report the file gone.
func TestLookupWaitsForAFallbackRewrite(t *testing.T) {
	r, dir := openRoot(t, durable.WithFallback())
	d := mkdir(t, r, "box")
	if err := d.Create("m.json", []byte("old")); err != nil {
		t.Fatal(err)
	}
	// Another handle plays the rewriter: lock, move the file aside.
	rewriter := mkdir(t, r, "box")
	unlock, err := rewriter.Lock()
	if err != nil {
		t.Fatal(err)
	}
	box := filepath.Join(dir, "box")
	if err := os.Rename(filepath.Join(box, "m.json"), filepath.Join(box, durable.SwapPrefix+"m.json")); err != nil {
		t.Fatal(err)
	}
	for _, lookup := range []func() error{
		func() error { _, err := d.Lstat("m.json"); return err },
		func() error { _, _, err := d.ReadFile("m.json", 100); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- lookup() }()
		waitForFlockWaiter(t)
		// Finish the rewrite: the new file under the name, then unlock.
		os.WriteFile(filepath.Join(box, "m.json"), []byte("new"), 0o600)
		unlock()
		if err := <-done; err != nil {
			t.Fatalf("a lookup during the rewrite: %v", err)
		}
		// Next lookup: set the scene again.
		if unlock, err = rewriter.Lock(); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(box, "m.json"))
	}
	unlock()
}

// waitForFlockWaiter waits until /proc/locks shows a process blocked on a
// flock ("->" marks waiters), with a deadline.
func waitForFlockWaiter(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open("/proc/locks")
		if err != nil {
			t.Skip("no /proc/locks here")
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "->") && strings.Contains(sc.Text(), "FLOCK") {
				f.Close()
				return
			}
		}
		f.Close()
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the lookup never waited for the lock")
}
