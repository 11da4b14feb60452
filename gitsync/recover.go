package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// recoverLeftovers puts right what a sync killed part-way left in the
// repository, before this sync starts, and says so on rep.Recovered. It
// runs under the host's sync lock, so no other sync is using git here.
//
// A sync of this version never lets git write the working tree, so a
// kill leaves at most git's lock files (index.lock, a ref's .lock) and
// the merge's own index: they are removed. An older mailfs rebased, with
// the uncommitted changes stashed: a rebase it left in progress
// (.git/rebase-merge or rebase-apply) is ended without touching the
// working tree, the branch is put back where it was, and the stashed
// changes (writes acknowledged to agents) are written back wherever the
// rebase had undone them. The stash is also kept in git's stash list.
func (s *Syncer) recoverLeftovers(ctx context.Context, g *git, rep *Report) error {
	gitDir := filepath.Join(g.dir, ".git")
	note := func(format string, args ...any) {
		s.warnf(format, args...)
		rep.Recovered = append(rep.Recovered, fmt.Sprintf(format, args...))
	}
	var locks []string
	for _, name := range []string{"index.lock", "HEAD.lock", "ORIG_HEAD.lock", "FETCH_HEAD.lock", "packed-refs.lock",
		"config.lock", "shallow.lock", "mailfs-merge-index", "mailfs-merge-index.lock", journalFile + ".tmp"} {
		locks = append(locks, filepath.Join(gitDir, name))
	}
	temps, _ := filepath.Glob(filepath.Join(gitDir, durable.TempPrefix+"*"+durable.TempSuffix)) // a journal's temp
	locks = append(locks, temps...)
	_ = filepath.WalkDir(filepath.Join(gitDir, "refs"), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(p, ".lock") {
			locks = append(locks, p)
		}
		return nil
	})
	for _, p := range locks {
		if err := os.Remove(p); err == nil {
			rel, _ := filepath.Rel(g.dir, p)
			if !strings.HasPrefix(filepath.Base(p), "mailfs-merge-index") {
				note("removed %s, left by a sync that was stopped", filepath.ToSlash(rel))
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	// Only this host's syncs write its tombstones, under the lock this
	// one holds: a temp there (or in a day's folder) is a stopped sync's.
	host := GoneDir + "/" + rep.Host
	var stale []string
	_ = filepath.WalkDir(filepath.Join(g.dir, filepath.FromSlash(host)), func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasPrefix(e.Name(), durable.TempPrefix) && strings.HasSuffix(e.Name(), durable.TempSuffix) {
			rel, _ := filepath.Rel(g.dir, p)
			stale = append(stale, filepath.ToSlash(rel))
		}
		return nil
	})
	for _, rel := range stale {
		d, done, err := s.folder(path.Dir(rel), false)
		if err == nil {
			err = d.Remove(path.Base(rel))
			done()
		}
		switch {
		case err == nil:
			note("removed %s, left by a sync that was stopped", rel)
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	j, err := readJournal(g)
	if err != nil {
		return err
	}
	if j != nil && !j.Ready {
		if err := s.unstage(j.Changes); err != nil {
			return err
		}
		if err := removeJournal(g); err != nil {
			return err
		}
		note("removed the half-written arrivals of a sync that was stopped")
	} else if j != nil {
		if err := s.finishLanding(ctx, g, j, rep); err != nil {
			return err
		}
		note("finished writing what a stopped sync had pulled (%.12s)", j.Commit)
	}
	for _, dir := range []string{"rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gitDir, dir)); err == nil {
			if err := s.endRebase(ctx, g, filepath.Join(gitDir, dir), note); err != nil {
				return err
			}
		}
	}
	return nil
}

// endRebase ends a rebase an older sync left, keeping the working tree:
// it puts back, file by file, what the rebase's checkout and its
// autostash took out of the tree, wherever nothing wrote since.
func (s *Syncer) endRebase(ctx context.Context, g *git, dir string, note func(string, ...any)) error {
	readFile := func(name string) string {
		data, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(data))
	}
	headName, orig, onto, stash := readFile("head-name"), readFile("orig-head"), readFile("onto"), readFile("autostash")
	if _, err := g.run(ctx, "rebase", "--quit"); err != nil { // keeps the stash in the stash list
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if stash != "" {
			_, _ = g.run(ctx, "stash", "store", "-m", "mailfs sync: changes a stopped rebase had stashed", stash)
		}
	}
	if strings.HasPrefix(headName, "refs/heads/") {
		if _, err := g.run(ctx, "symbolic-ref", "HEAD", headName); err != nil {
			return err
		}
	}
	if g.rev(ctx, "HEAD") != "" {
		if _, err := g.run(ctx, "reset", "-q"); err != nil { // the index only
			return err
		}
	}
	note("ended a rebase that a stopped sync left in .git/%s; the working tree was kept", filepath.Base(dir))
	n := 0
	for _, pair := range [][2]string{{onto, orig}, {stash + "^1", stash}} {
		if pair[0] == "" || pair[1] == "" || g.rev(ctx, pair[0]) == "" || g.rev(ctx, pair[1]) == "" {
			continue
		}
		changes, err := g.diff(ctx, pair[0], pair[1])
		if err != nil {
			return err
		}
		done, err := s.redo(ctx, g, changes)
		if err != nil {
			return err
		}
		n += done
	}
	if n > 0 {
		note("wrote back %d files that a stopped rebase had taken out of the tree", n)
	}
	return nil
}

// redo makes each change in the working tree where the file is still as
// it was before the change (absent, for an add); a file written since
// stays as it is. It returns how many it made.
func (s *Syncer) redo(ctx context.Context, g *git, changes map[string]change) (int, error) {
	var want []string
	for _, c := range changes {
		if c.old != zeroID {
			want = append(want, c.old)
		}
	}
	content := map[string][]byte{}
	if err := g.blobs(ctx, want, func(id string, data []byte) error { content[id] = data; return nil }); err != nil {
		return 0, err
	}
	var redo []change
	for _, c := range changes {
		if !c.file() && c.status != 'D' {
			continue
		}
		now, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(c.path)))
		undone := false
		switch {
		case errors.Is(err, fs.ErrNotExist):
			undone = c.old == zeroID
		case err == nil:
			undone = c.old != zeroID && bytes.Equal(now, content[c.old])
		}
		if !undone {
			continue
		}
		if c.status == 'A' {
			c.status = 'M' // a replace: the file may be there again by now
		}
		redo = append(redo, c)
	}
	if len(redo) == 0 {
		return 0, nil
	}
	host, _ := s.Store.LocalHost()
	return len(redo), s.apply(ctx, g, redo, &Report{Host: host})
}
