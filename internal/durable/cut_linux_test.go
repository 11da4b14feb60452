//go:build linux

package durable_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/internal/durable"
)

// A power cut at any fsync of a move between two folders on the fallbacks
// (link, then unlink: two system calls in two folders) leaves the file
// under one of its names. The cut is the town soak's (townsim, "Power
// cuts"): the folder being fsynced loses what changed in it since its last
// fsync, and every other folder keeps its changes, as each unsynced change
// may or may not survive. Unlinking the old name before the new one was
// durable lost the message when the cut came at the new folder's fsync:
// four of 16,276 sends in a 30-minute soak, archived on the fallback host.
// (renameat2's move is one call, which the model cannot split: it is not
// tried here.)
func TestAFallbackMoveSurvivesACutAtEveryFsync(t *testing.T) {
	for _, order := range []string{"destination first", "source first"} {
		for cut := 1; ; cut++ {
			m := newCutModel(t, cut, durable.WithFallback())
			src, dst := m.open("src"), m.open("dst")
			if err := src.Move("m.json", dst, "m.json"); err == nil {
				first, second := dst, src
				if order == "source first" {
					first, second = src, dst
				}
				if first.Sync() == nil {
					second.Sync()
				}
			}
			if !m.cutMade {
				if cut == 1 {
					t.Fatalf("%s: the move made no fsync at all", order)
				}
				break
			}
			if m.lost != "" {
				t.Errorf("%s, cut at fsync %d: %s", order, cut, m.lost)
			}
		}
	}
}

// RemoveSecond, ending a move cut short between its link and its unlink
// (fsck's repair), makes the name it keeps in another folder durable
// before the name it removes goes: the move was stopped before that
// folder's fsync, so without it a cut after the repair could drop the
// kept name, the removal being durable.
func TestRemoveSecondMakesTheKeptNameDurable(t *testing.T) {
	for _, opts := range [][]durable.Option{nil, {durable.WithFallback()}} {
		for cut := 1; ; cut++ {
			m := newCutModel(t, cut, opts...)
			// The move's link, never fsynced (the model's dst is as set up).
			if err := os.Link(filepath.Join(m.dir, "src", "m.json"), filepath.Join(m.dir, "dst", "m.json")); err != nil {
				t.Fatal(err)
			}
			src, dst := m.open("src"), m.open("dst")
			judged, err := src.Lstat("m.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := src.RemoveSecond("m.json", dst, "m.json", judged); err == nil {
				src.Sync()
			}
			if !m.cutMade {
				// No cut during it: one now, every folder as of its last fsync.
				m.cutAll()
				if m.lost != "" {
					t.Errorf("fallback %v, a cut after the repair: %s", opts != nil, m.lost)
				}
				break
			}
			if m.lost != "" {
				t.Errorf("fallback %v, cut at fsync %d: %s", opts != nil, cut, m.lost)
			}
		}
	}
}

// A cutModel is a root of two folders, src and dst, with src/m.json in
// it, all fsynced, that cuts the power at its cut-th folder fsync: the
// folder being fsynced is left as of its last fsync, the others as they
// are (the town soak's cut). It records whether the message is then
// under no name.
type cutModel struct {
	t       *testing.T
	dir     string
	r       *durable.Root
	folders map[uint64]string            // folder inode -> name
	synced  map[string]map[string]uint64 // folder -> its names as of its last fsync
	file    uint64                       // the message's inode
	n, cut  int
	cutMade bool
	lost    string
}

func newCutModel(t *testing.T, cut int, opts ...durable.Option) *cutModel {
	t.Helper()
	m := &cutModel{t: t, dir: t.TempDir(), cut: cut, folders: map[uint64]string{}, synced: map[string]map[string]uint64{}}
	for _, sub := range []string{"src", "dst"} {
		if err := os.Mkdir(filepath.Join(m.dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
		m.folders[m.ino(filepath.Join(m.dir, sub))] = sub
	}
	if err := os.WriteFile(filepath.Join(m.dir, "src", "m.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.file = m.ino(filepath.Join(m.dir, "src", "m.json"))
	for _, sub := range []string{"src", "dst"} {
		m.synced[sub] = m.listing(sub)
	}
	r, err := durable.OpenRoot(m.dir, append(opts, durable.WithFsync(m.fsync))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	m.r = r
	return m
}

func (m *cutModel) open(sub string) *durable.Dir {
	d, err := m.r.Open(sub)
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { d.Close() })
	return d
}

func (m *cutModel) ino(p string) uint64 {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		m.t.Fatal(err)
	}
	return st.Ino
}

func (m *cutModel) listing(sub string) map[string]uint64 {
	ents, err := os.ReadDir(filepath.Join(m.dir, sub))
	if err != nil {
		m.t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, e := range ents {
		out[e.Name()] = m.ino(filepath.Join(m.dir, sub, e.Name()))
	}
	return out
}

// fsync stands in for fsync(2): the cut at the cut-th folder fsync.
func (m *cutModel) fsync(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	sub, ok := m.folders[st.Ino]
	if !ok {
		return unix.Fsync(fd)
	}
	m.n++
	if m.n == m.cut {
		m.cutMade = true
		m.judge(map[string]bool{sub: true})
		return unix.EIO
	}
	if err := unix.Fsync(fd); err != nil {
		return err
	}
	m.synced[sub] = m.listing(sub)
	return nil
}

// cutAll is a cut that drops every folder's unsynced names.
func (m *cutModel) cutAll() { m.judge(map[string]bool{"src": true, "dst": true}) }

// judge records whether the message is under no name once the folders
// dropped lose their unsynced names.
func (m *cutModel) judge(dropped map[string]bool) {
	after := map[string]map[string]uint64{}
	for _, sub := range []string{"src", "dst"} {
		after[sub] = m.listing(sub)
		if dropped[sub] {
			after[sub] = m.synced[sub]
		}
		if slices.Contains(slices.Collect(maps.Values(after[sub])), m.file) {
			return
		}
	}
	m.lost = fmt.Sprintf("the message is under no name after the cut (src %v, dst %v)",
		slices.Sorted(maps.Keys(after["src"])), slices.Sorted(maps.Keys(after["dst"])))
}
