//go:build unix

package durable_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

// A write guard is asked before every kind of write, and its error fails
// the write with nothing touched; reading is never asked.
func TestWriteGuardIsAskedBeforeEveryWrite(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o700)
	os.WriteFile(filepath.Join(dir, "a", "f"), []byte("x"), 0o600)
	stop := errors.New("no writing here")
	var refuse bool
	asked := 0
	r, err := durable.OpenRoot(dir, durable.WithWriteGuard(func() error {
		asked++
		if refuse {
			return stop
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d, err := r.Open("a")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	refuse = true
	writes := map[string]func() error{
		"create":   func() error { return d.Create("g", []byte("y")) },
		"replace":  func() error { return d.Replace("f", []byte("y")) },
		"exchange": func() error { return d.Exchange("f", []byte("y"), func([]byte) bool { return true }) },
		"move":     func() error { return d.MoveOver("f", "h") },
		"touch":    func() error { return d.Touch("f") },
		"remove":   func() error { return d.Remove("f") },
		"chmod":    func() error { return d.Chmod("f", 0o644) },
		"mkdir":    func() error { _, err := r.MkdirAll("b/c"); return err },
		"mksub":    func() error { _, err := d.MkSub("s"); return err },
	}
	for name, w := range writes {
		if err := w(); !errors.Is(err, stop) {
			t.Errorf("%s under a refusing guard: %v", name, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "a"))
	if data, _ := os.ReadFile(filepath.Join(dir, "a", "f")); len(entries) != 1 || string(data) != "x" {
		t.Fatalf("a refused write touched the folder: %v, f holds %q", entries, data)
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Fatal("a refused MkdirAll made a folder")
	}
	before := asked
	if _, _, err := d.ReadFile("f", 10); err != nil || asked != before {
		t.Fatalf("reading asked the guard (%d times) or failed: %v", asked-before, err)
	}
	refuse = false
	if err := d.Create("g", []byte("y")); err != nil {
		t.Fatal(err)
	}
}

// Guards given more than once are all asked, in order: the first that
// refuses fails the write (a test's guard beside chipset's format guard,
// which chipset adds after the caller's options).
func TestWriteGuardsAreAllAsked(t *testing.T) {
	first, second := errors.New("first"), errors.New("second")
	for _, c := range []struct {
		a, b error
		want error
	}{{nil, nil, nil}, {first, nil, first}, {nil, second, second}, {first, second, first}} {
		var order []string
		r, err := durable.OpenRoot(t.TempDir(),
			durable.WithWriteGuard(func() error { order = append(order, "a"); return c.a }),
			durable.WithWriteGuard(func() error { order = append(order, "b"); return c.b }))
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.Open("")
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Create("f", []byte("x")); !errors.Is(err, c.want) || c.want == nil && err != nil {
			t.Errorf("guards %v, %v: the write says %v, want %v", c.a, c.b, err, c.want)
		}
		if want := map[bool]string{true: "[a]", false: "[a b]"}[c.a != nil]; fmt.Sprint(order) != want {
			t.Errorf("guards %v, %v: asked %v, want %s", c.a, c.b, order, want)
		}
		d.Close()
		r.Close()
	}
}
