package townsim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cut's log is read as strace writes it, and the cut drops exactly the
// changes of the folder being synced that no fsync made durable: an
// exchange (a mark), and a fallback move's link and unlink; a change
// fsynced before is kept.
func TestACutDropsOnlyTheUnsyncedChanges(t *testing.T) {
	dir := t.TempDir()
	box := filepath.Join(dir, "state", "mail", "toast")
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(box, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(box, name))
		if err != nil {
			return "(none)"
		}
		return string(b)
	}
	for _, tc := range []struct {
		name  string
		setup func()
		log   string
		want  map[string]string
		drops int
	}{
		{"a mark's exchange, cut at its folder's fsync",
			func() { write("m.json", "read"); write(".t.tmp", "unread") },
			`20609 fsync(7<BOX/.t.tmp>) = 0
20609 renameat2(6<BOX>, ".t.tmp", 6<BOX>, "m.json", RENAME_EXCHANGE) = 0
20609 fsync(6<BOX> <unfinished ...>
20634 +++ killed by SIGKILL +++
20609 <... fsync resumed>)              = ?
20609 +++ killed by SIGKILL +++
`, map[string]string{"m.json": "unread", ".t.tmp": "read"}, 1},
		{"a send's rename, synced, then a cut at the next file's fsync",
			func() { write("s.json", "sent"); write(".u.tmp", "") },
			`1 renameat2(6<BOX>, ".s.tmp", 6<BOX>, "s.json", RENAME_NOREPLACE) = 0
1 fsync(6<BOX>) = 0
1 fsync(7<BOX/.u.tmp>) = ?
1 +++ killed by SIGKILL +++
`, map[string]string{"s.json": "sent"}, 0},
		{"a fallback move's link and unlink, cut at the folder's fsync",
			func() { write("f.json", "new") },
			`1 renameat2(6<BOX>, ".f.tmp", 6<BOX>, "f.json", RENAME_NOREPLACE) = -1 EINVAL (Invalid argument)
1 linkat(6<BOX>, ".f.tmp", 6<BOX>, "f.json", 0) = 0
1 unlinkat(6<BOX>, ".f.tmp", 0) = 0
1 fsync(6<BOX>) = ?
`, map[string]string{"f.json": "(none)", ".f.tmp": "new"}, 2},
		{"a fallback exchange (link aside, rename over, rename off the aside), cut at the folder's fsync",
			func() { write("m.json", "read"); write(".t.tmp", "unread") },
			`1 renameat2(6<BOX>, ".t.tmp", 6<BOX>, "m.json", RENAME_EXCHANGE) = -1 EINVAL (Invalid argument)
1 linkat(6<BOX>, "m.json", 6<BOX>, ".mailfs-swap.m.json", 0) = 0
1 renameat(6<BOX>, ".t.tmp", 6<BOX>, "m.json") = 0
1 renameat(6<BOX>, ".mailfs-swap.m.json", 6<BOX>, ".t.tmp") = 0
1 fsync(6<BOX> <unfinished ...>
1 <... fsync resumed>)              = ?
`, map[string]string{"m.json": "unread", ".t.tmp": "read", ".mailfs-swap.m.json": "(none)"}, 3},
		{"a plain rename over a name no other name keeps: nothing undone",
			func() { write("p.json", "new") },
			`1 renameat(6<BOX>, ".p.tmp", 6<BOX>, "p.json") = 0
1 fsync(6<BOX>) = ?
`, map[string]string{"p.json": "new"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.RemoveAll(box)
			os.MkdirAll(box, 0o700)
			tc.setup()
			log := filepath.Join(dir, "cut.log")
			if err := os.WriteFile(log, []byte(strings.ReplaceAll(tc.log, "BOX", box)), 0o600); err != nil {
				t.Fatal(err)
			}
			ops, at, cut := readCutLog(log)
			if !cut || at != box {
				t.Fatalf("read the cut at %q (%v), want %s", at, cut, box)
			}
			if n := undoUnsynced(ops, at); n != tc.drops {
				t.Errorf("dropped %d changes, want %d (ops %+v)", n, tc.drops, ops)
			}
			for name, want := range tc.want {
				if got := read(name); got != want {
					t.Errorf("%s holds %q after the cut, want %q", name, got, want)
				}
			}
		})
	}
	// A command that was not cut (it made fewer fsyncs) is no cut.
	log := filepath.Join(dir, "uncut.log")
	os.WriteFile(log, []byte("1 fsync(6<"+box+">) = 0\n1 +++ exited with 0 +++\n"), 0o600)
	if _, _, cut := readCutLog(log); cut {
		t.Error("a command that ended on its own was read as cut")
	}
}
