package town

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

func touch(t *testing.T, path string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Every program finds the root the same way: the flag, else $MAILFS_ROOT
// (empty is unset), else (for the Gas City provider) the city's, else the
// nearest .chipset above the working directory; a bad host name or index
// setting is said, not silently used.
func TestOpenIsTheOnePath(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	touch(t, filepath.Join(city, "city.toml"))
	wd := filepath.Join(city, "rigs", "a")
	os.MkdirAll(filepath.Join(base, "work", ".chipset"), 0o700)
	os.MkdirAll(wd, 0o755)
	t.Chdir(wd)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	// A finder of the root near the working directory, as the Gas City
	// provider's finds the city's (package citytown).
	nearCity := func(_ func(string) string, wd string) string {
		if filepath.Dir(filepath.Dir(wd)) == city {
			return filepath.Join(city, ".chipset")
		}
		return ""
	}
	root := func(flag string, near bool) string {
		t.Helper()
		var find func(func(string) string, string) string
		if near {
			find = nearCity
		}
		r, err := Root(flag, find, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got := root("/x/.chipset", true); got != "/x/.chipset" {
		t.Fatalf("the flag: %s", got)
	}
	env["MAILFS_ROOT"] = "/env/.chipset"
	if got := root("", true); got != "/env/.chipset" {
		t.Fatalf("$MAILFS_ROOT: %s", got)
	}
	env["MAILFS_ROOT"] = ""
	if got := root("", true); got != filepath.Join(city, ".chipset") {
		t.Fatalf("the city: %s", got)
	}
	if got := root("", false); got != filepath.Join(wd, ".chipset") {
		t.Fatalf("no city, no .chipset above: %s", got)
	}
	var warned []error
	env["MAILFS_INDEX"] = "maybe"
	s, q, err := Open(Config{Root: filepath.Join(base, "work", ".chipset"), Getenv: getenv, Warn: func(err error) { warned = append(warned, err) }})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	q.Close()
	if len(warned) != 1 || s.NoIndex {
		t.Fatalf("an unknown $MAILFS_INDEX: warned %v, index off %v", warned, s.NoIndex)
	}
	env["MAILFS_HOST"] = "../x"
	if _, _, err := Open(Config{Getenv: getenv}); !errors.Is(err, maildir.ErrInvalidHost) {
		t.Fatalf("a bad $MAILFS_HOST: %v", err)
	}
}

// The store and the nudge queues of a town share one open of its root:
// a hook that sends, enqueues and claims holds one descriptor of the root,
// and the queues' Close leaves it to the store's.
func TestOneOpenOfTheRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	s, q, err := Open(Config{Root: dir, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "ping"}, 0); err != nil {
		t.Fatal(err)
	}
	b, err := q.ClaimContext(context.Background(), "toast")
	if err != nil {
		t.Fatal(err)
	}
	b.Commit()
	opens := func() int {
		fds, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, fd := range fds {
			if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == dir {
				n++
			}
		}
		return n
	}
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to count descriptors in")
	}
	if n := opens(); n != 1 {
		t.Fatalf("the root is open %d times, want once", n)
	}
	q.Close()
	if n := opens(); n != 1 {
		t.Fatalf("after the queues' Close the root is open %d times, want once (the store's)", n)
	}
	if _, err := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, maildir.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}
