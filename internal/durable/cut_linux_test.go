//go:build linux

package durable_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/internal/durable"
)

// A power cut at any fsync of a move between two folders on the fallbacks
// (link, then unlink: two system calls in two folders) leaves the file
// under one of its names. The cut is the town soak's (townsim, "Power
// cuts"): the folder being fsynced loses what changed in it since its last
// fsync, and every other folder keeps its changes, as each unsynced change
// may or may not survive. Unlinking the old name before the new one is
// durable lost the message when the cut came at the new folder's fsync:
// four of 16,276 sends in a 30-minute soak, archived on the fallback host.
func TestAFallbackMoveSurvivesACutAtEveryFsync(t *testing.T) {
	for _, order := range []string{"destination first", "source first"} {
		for cut := 1; ; cut++ {
			lost, cutMade := fallbackMoveCut(t, cut, order == "source first")
			if !cutMade {
				if cut == 1 {
					t.Fatalf("%s: the move made no fsync at all", order)
				}
				break
			}
			if lost != "" {
				t.Errorf("%s, cut at fsync %d: %s", order, cut, lost)
			}
		}
	}
}

// fallbackMoveCut moves a file from folder src to folder dst on the
// fallbacks, then syncs both folders (srcFirst: in that order), as the
// store's verbs do, cutting the power at the cut-th fsync. It returns what
// was lost ("" for nothing) and whether the cut came at all.
func fallbackMoveCut(t *testing.T, cut int, srcFirst bool) (lost string, cutMade bool) {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"src", "dst"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "m.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	ino := func(p string) uint64 {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	folders := map[uint64]string{ino(filepath.Join(dir, "src")): "src", ino(filepath.Join(dir, "dst")): "dst"}
	file := ino(filepath.Join(dir, "src", "m.json"))
	// What a cut would leave of each folder: its names as of its last
	// fsync (as set up, before the move).
	listing := func(sub string) map[string]uint64 {
		ents, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for _, e := range ents {
			out[e.Name()] = ino(filepath.Join(dir, sub, e.Name()))
		}
		return out
	}
	synced := map[string]map[string]uint64{"src": listing("src"), "dst": listing("dst")}
	n := 0
	fsync := func(fd int) error {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		sub, ok := folders[st.Ino]
		if !ok {
			return unix.Fsync(fd)
		}
		n++
		if n == cut {
			cutMade = true
			after := map[string]map[string]uint64{"src": listing("src"), "dst": listing("dst")}
			after[sub] = synced[sub] // the cut drops this folder's unsynced names
			for _, names := range after {
				for _, i := range names {
					if i == file {
						return unix.EIO
					}
				}
			}
			lost = fmt.Sprintf("the message is under no name after the cut (src %v, dst %v)", keys(after["src"]), keys(after["dst"]))
			return unix.EIO
		}
		if err := unix.Fsync(fd); err != nil {
			return err
		}
		synced[sub] = listing(sub)
		return nil
	}
	r, err := durable.OpenRoot(dir, durable.WithFallback(), durable.WithFsync(fsync))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	src, err := r.Open("src")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := r.Open("dst")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if err := src.Move("m.json", dst, "m.json"); err != nil {
		return lost, cutMade // the cut stopped the move itself
	}
	first, second := dst, src
	if srcFirst {
		first, second = src, dst
	}
	if err := first.Sync(); err != nil {
		return lost, cutMade
	}
	second.Sync()
	return lost, cutMade
}

func keys(m map[string]uint64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
