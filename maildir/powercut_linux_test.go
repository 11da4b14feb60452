package maildir_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// A power cut keeps what was fsynced and drops the rest. powerModel
// watches every fsync a store makes (durable.WithFsync) and knows, at
// any moment, what was made durable: each folder's entries as of its last
// fsync (or as they were when the model started), each file's content as
// of its last fsync (or as it was at the start; a file never synced since
// it was made is empty). cuts writes out the trees a cut then may leave.
type powerModel struct {
	root string
	dirs map[string]map[string]entry // folder (relative) -> name -> entry, as durable
	data map[uint64][]byte           // inode -> content, as durable
}

type entry struct {
	ino uint64
	dir bool
}

// newPowerModel takes the tree at root as durable (the setup before it
// synced everything it wrote).
func newPowerModel(t *testing.T, root string) *powerModel {
	m := &powerModel{root: root, dirs: map[string]map[string]entry{}, data: map[uint64][]byte{}}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			m.listDir(p)
		case e.Type().IsRegular():
			m.readFile(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *powerModel) rel(p string) string {
	r, _ := filepath.Rel(m.root, p)
	return filepath.ToSlash(r)
}

func (m *powerModel) listDir(p string) {
	ents, _ := os.ReadDir(p)
	list := map[string]entry{}
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(p, e.Name()), &st) == nil && (e.IsDir() || e.Type().IsRegular()) {
			list[e.Name()] = entry{st.Ino, e.IsDir()}
		}
	}
	m.dirs[m.rel(p)] = list
}

func (m *powerModel) readFile(p string) {
	var st unix.Stat_t
	if unix.Lstat(p, &st) != nil {
		return
	}
	data, err := os.ReadFile(p)
	if err == nil {
		m.data[st.Ino] = data
	}
}

// fsync records what fsync(fd) makes durable, then makes it so.
func (m *powerModel) fsync(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		m.listDir(p)
	} else if data, err := os.ReadFile(p); err == nil {
		m.data[st.Ino] = data
	}
	return unix.Fsync(fd)
}

// cuts returns the trees a cut now could leave, each written out once
// (a tree equal to one already returned is not written again): every
// file's content as fsynced (a file never synced since it was made reads
// empty, as LazyFS leaves it), and the folders' entries in every mix of
// the two outcomes a cut may have for each folder changed since its last
// fsync — its entries as of that fsync, or as they are now (a journal
// wrote its names out, not the unsynced data behind them). Every subset
// of the changed folders is tried when there are at most six, else
// none, all, each one alone and each one left out.
//
// With oneCallMoves, a name moved from one folder to another by one
// rename(2) (renameat2's move) goes whole or not at all: the two folders
// keep or lose their changes together, as a journaling file system
// commits one call. The fallbacks' move is two calls, link then unlink,
// in two folders: there each folder goes its own way.
func (m *powerModel) cuts(t *testing.T, seen map[string]bool, oneCallMoves bool) []string {
	now := &powerModel{root: m.root, dirs: map[string]map[string]entry{}}
	filepath.WalkDir(m.root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			now.listDir(p)
		}
		return nil
	})
	group := map[string]string{} // changed folder -> the first folder of its group
	var find func(rel string) string
	find = func(rel string) string {
		if g := group[rel]; g != rel {
			group[rel] = find(g)
		}
		return group[rel]
	}
	left, came := map[uint64]string{}, map[uint64]string{} // inode -> folder it left, came into
	for rel, list := range now.dirs {
		if maps.Equal(list, m.dirs[rel]) {
			continue
		}
		group[rel] = rel
		for _, e := range m.dirs[rel] {
			if !e.dir && !slices.Contains(slices.Collect(maps.Values(list)), e) {
				left[e.ino] = rel
			}
		}
		for _, e := range list {
			if !e.dir && !slices.Contains(slices.Collect(maps.Values(m.dirs[rel])), e) {
				came[e.ino] = rel
			}
		}
	}
	if oneCallMoves {
		for ino, from := range left {
			if to, ok := came[ino]; ok && to != from {
				group[find(from)] = find(to)
			}
		}
	}
	var groups []string
	for rel := range group {
		if find(rel) == rel {
			groups = append(groups, rel)
		}
	}
	slices.Sort(groups)
	var mixes [][]bool // per group: its folders' names as now
	if len(groups) <= 6 {
		for bits := range 1 << len(groups) {
			mix := make([]bool, len(groups))
			for i := range mix {
				mix[i] = bits&(1<<i) != 0
			}
			mixes = append(mixes, mix)
		}
	} else {
		for i := -1; i <= len(groups); i++ {
			one, allBut := make([]bool, len(groups)), make([]bool, len(groups))
			for j := range groups {
				one[j] = i == len(groups) || j == i
				allBut[j] = i >= 0 && i < len(groups) && j != i
			}
			mixes = append(mixes, one, allBut)
		}
	}
	var out []string
	for _, mix := range mixes {
		dirs := maps.Clone(m.dirs)
		for i, g := range groups {
			if !mix[i] {
				continue
			}
			for rel := range group {
				if find(rel) == g {
					dirs[rel] = now.dirs[rel]
				}
			}
		}
		if img := m.image(t, dirs, seen); img != "" {
			out = append(out, img)
		}
	}
	return out
}

// image writes the tree whose folders hold dirs, with the files' contents
// as fsynced, into a new folder, hard links kept, and returns its path;
// or "" when seen already holds that tree.
func (m *powerModel) image(t *testing.T, dirs map[string]map[string]entry, seen map[string]bool) string {
	var sig strings.Builder
	var walk func(rel string)
	walk = func(rel string) {
		for _, name := range slices.Sorted(maps.Keys(dirs[rel])) {
			e, sub := dirs[rel][name], path.Join(rel, name)
			if e.dir {
				fmt.Fprintf(&sig, "%s/\n", sub)
				walk(sub)
			} else {
				fmt.Fprintf(&sig, "%s %d %x\n", sub, e.ino, sha256.Sum256(m.data[e.ino]))
			}
		}
	}
	walk(".")
	if seen[sig.String()] {
		return ""
	}
	seen[sig.String()] = true
	out := filepath.Join(t.TempDir(), ".chipset")
	written := map[uint64]string{}
	var build func(rel, dst string)
	build = func(rel, dst string) {
		os.Mkdir(dst, 0o700)
		for name, e := range dirs[rel] {
			p := filepath.Join(dst, name)
			switch {
			case e.dir:
				build(path.Join(rel, name), p)
			case written[e.ino] != "":
				os.Link(written[e.ino], p)
			default:
				os.WriteFile(p, m.data[e.ino], 0o600) // nil: never synced, empty
				written[e.ino] = p
			}
		}
	}
	build(".", out)
	return out
}

// A power cut at every step of a keyed send, a mark, a move and a delete,
// on both rename paths, then fsck --repair and the client's retry: nothing
// acknowledged is lost or undone, nothing is delivered twice, nothing
// deleted comes back (#53 Must show: the power-cut test). The steps are
// every fsync the store makes (durable.WithFsync) and every point of
// durable's fault injection (durable.WithFault: before each system call
// of a write, the fallbacks' link-then-unlink and swap included); at each,
// every mix of the folders changed since their last fsync keeping or
// losing their unsynced names is tried, with every unsynced file's data
// lost (powerModel.cuts).
func TestPowerCutAtEveryStep(t *testing.T) {
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	type op struct {
		name  string
		setup func(t *testing.T, ts *testStore) string // returns the id the op acts on
		run   func(s *maildir.Store, id string) error
		check func(t *testing.T, s *maildir.Store, id string) string // "" or what is wrong
	}
	keyed := &maildir.Message{From: "mayor", To: "toast", CC: []string{"nux"}, Subject: "keyed"}
	ops := []op{
		{"keyed send", func(t *testing.T, ts *testStore) string { return "" },
			func(s *maildir.Store, _ string) error { _, _, err := s.SendOnce(keyed, "job-1"); return err },
			func(t *testing.T, s *maildir.Store, _ string) string {
				for _, a := range []string{"toast", "nux"} {
					if n := countSubject(t, s, a, "keyed"); n != 1 {
						return fmt.Sprintf("%s holds %d copies", a, n)
					}
				}
				return ""
			}},
		{"mark", func(t *testing.T, ts *testStore) string { return ts.send(t, "mayor", "toast", "to mark").ID },
			func(s *maildir.Store, id string) error { _, err := s.MarkRead(toast, id); return err },
			func(t *testing.T, s *maildir.Store, id string) string {
				if where := liveNames(s, id); fmt.Sprint(where) != "[state/mail/toast]" {
					return fmt.Sprintf("names %v", where)
				}
				if m, err := s.Get(toast, id); err != nil || !m.Read {
					return fmt.Sprintf("not read: %v", err)
				}
				return ""
			}},
		{"move", func(t *testing.T, ts *testStore) string { return ts.send(t, "mayor", "toast", "to archive").ID },
			func(s *maildir.Store, id string) error { return first(s.Archive(toast, []string{id})) },
			func(t *testing.T, s *maildir.Store, id string) string {
				if where := liveNames(s, id); fmt.Sprint(where) != "[state/mail/toast/archive]" {
					return fmt.Sprintf("names %v", where)
				}
				return ""
			}},
		{"delete", func(t *testing.T, ts *testStore) string { return ts.send(t, "mayor", "toast", "to delete").ID },
			func(s *maildir.Store, id string) error {
				if err := s.Delete(toast, id); err != nil && !strings.Contains(err.Error(), "not found") {
					return err
				}
				return nil
			},
			func(t *testing.T, s *maildir.Store, id string) string {
				if where := liveNames(s, id); len(where) != 0 {
					return fmt.Sprintf("deleted, yet at %v", where)
				}
				return ""
			}},
	}
	for _, mode := range []string{"renameat2", "fallback"} {
		for _, o := range ops {
			t.Run(mode+"/"+o.name, func(t *testing.T) {
				ts := newStore(t)
				id := o.setup(t, ts)
				// Acknowledged before: a restore after an archive, and a
				// delete; neither may be undone by what follows.
				kept := ts.send(t, "mayor", "toast", "restored").ID
				gone := ts.send(t, "mayor", "toast", "deleted").ID
				if err := first(ts.Archive(toast, []string{kept})); err != nil {
					t.Fatal(err)
				}
				if err := first(ts.Restore(toast, []string{kept})); err != nil {
					t.Fatal(err)
				}
				if err := ts.Delete(toast, gone); err != nil {
					t.Fatal(err)
				}
				ts.Send(&maildir.Message{From: "mayor", To: "nux", Subject: "make nux's mailbox"})
				unix.Sync()
				model := newPowerModel(t, ts.dir)
				var images []string
				seen := map[string]bool{}
				points := 0
				cut := func() { points++; images = append(images, model.cuts(t, seen, mode == "renameat2")...) }
				opts := []durable.Option{
					durable.WithFsync(func(fd int) error {
						cut() // just before this fsync
						return model.fsync(fd)
					}),
					durable.WithFault(func(durable.Step, string) error {
						cut() // at every step of every write: before its system call
						return nil
					}),
				}
				if mode == "fallback" {
					opts = append(opts, durable.WithFallback())
				}
				s := ts.reopen(t, opts...)
				if err := o.run(s.Store, id); err != nil {
					t.Fatal(err)
				}
				cut() // after it returned
				if points < 3 {
					t.Fatalf("only %d cut points", points)
				}
				for i, img := range images {
					if _, err := fsck.Check(context.Background(), img, fsck.Options{Repair: true, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}); err != nil {
						t.Fatalf("cut %d: fsck: %v", i, err)
					}
					var retry *maildir.Store
					if mode == "fallback" {
						retry, _ = maildir.OpenWith(img, durable.WithFallback())
					} else {
						retry, _ = maildir.Open(img)
					}
					if err := o.run(retry, id); err != nil {
						t.Fatalf("cut %d of %d: the retry: %v", i, len(images), err)
					}
					if bad := o.check(t, retry, id); bad != "" {
						t.Errorf("cut %d of %d: %s", i, len(images), bad)
					}
					if where := liveNames(retry, kept); fmt.Sprint(where) != "[state/mail/toast]" {
						t.Errorf("cut %d: the acknowledged restore undone: %v", i, where)
					}
					if where := liveNames(retry, gone); len(where) != 0 {
						t.Errorf("cut %d: the acknowledged delete undone: %v", i, where)
					}
					retry.Close()
				}
				t.Logf("%d cut points, %d distinct trees", points, len(images))
			})
		}
	}
}

// liveNames lists the folders of toast (its mailbox, its archive) that
// hold a name of message id, quarantine aside.
func liveNames(s *maildir.Store, id string) []string {
	var out []string
	for _, rel := range []string{"state/mail/toast", "state/mail/toast/archive"} {
		if _, err := os.Lstat(filepath.Join(s.Dir(), filepath.FromSlash(rel), id+".json")); err == nil {
			out = append(out, rel)
		}
	}
	return out
}

// countSubject counts agent's messages (mailbox and archive) with subject.
func countSubject(t *testing.T, s *maildir.Store, agent, subject string) int {
	n := 0
	for _, rel := range []string{"state/mail/" + agent, "state/mail/" + agent + "/archive"} {
		ents, _ := os.ReadDir(filepath.Join(s.Dir(), filepath.FromSlash(rel)))
		for _, e := range ents {
			if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			data, _ := os.ReadFile(filepath.Join(s.Dir(), filepath.FromSlash(rel), e.Name()))
			if m, err := maildir.Parse(data); err == nil && m.Subject == subject {
				n++
			}
		}
	}
	return n
}
