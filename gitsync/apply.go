package gitsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
)

// journalFile records a landing under way (see land), in the
// repository's own folder.
const journalFile = "mailfs-apply.json"

// tempPrefix starts the name a file that arrived has until it is renamed
// into place: a dot-file, so readers and git ignore it.
const tempPrefix = ".mailfs-sync-"

// A journal is what land was doing when it was stopped.
type journal struct {
	Commit string `json:"commit"` // the commit the branch moves to
	Branch string `json:"branch"`
	Ready  bool   `json:"ready"` // every arriving file is written under its temp name
	// Snapshot is the tree the index holds: when it is the commit's, the
	// index needs no reset.
	Snapshot string      `json:"snapshot"`
	Changes  []change    `json:"-"`
	Raw      [][3]string `json:"changes"` // path, status, blob
}

// land makes the working tree, the index and the branch agree with
// commit, whose changes against this host's snapshot are changes (what
// the other hosts did). It is the one moment a sync writes the tree, and
// it can be stopped at any point:
//
//  1. the journal names the commit and the changes;
//  2. every arriving file is written whole, fsynced, under a dot-name
//     beside its place; the journal is marked ready;
//  3. each is renamed into place (an add never replaces a file a local
//     writer put there meanwhile: that one is renamed to carry this
//     host's name first, as settle does), deletes are made, folders
//     fsynced — under the claim lock, so a claim's cursor never misses an
//     item that arrives in a queue (see maildir.Store.LockQueues);
//  4. the branch and the index move to commit (reset --mixed: no file is
//     touched), and the journal goes.
//
// A sync stopped before 2 ends left nothing visible: the next one removes
// the dot-files. Stopped after, the next one finishes 3 and 4 before it
// starts: renames of files still under their dot-name, never a second
// write of a file an agent has changed or removed since. Writes come
// before deletes, so a message moved elsewhere (an archive, a claim) is
// never missing from both places to a reader.
//
// With no changes nothing is written, so there is nothing to journal: the
// branch and the index move (step 4), and a sync stopped before they do
// left the tree as it was, with this host's changes still uncommitted.
func (s *Syncer) land(ctx context.Context, g *git, commit, branch, snapshot string, changes []change, rep *Report) error {
	j := &journal{Commit: commit, Branch: branch, Snapshot: snapshot, Changes: changes}
	if len(changes) == 0 {
		return s.moveBranch(ctx, g, j)
	}
	if err := s.writeJournal(g, j); err != nil {
		return err
	}
	if err := s.stage(ctx, g, changes); err != nil {
		return err
	}
	j.Ready = true
	if err := s.writeJournal(g, j); err != nil {
		return err
	}
	return s.finishLanding(ctx, g, j, rep)
}

// finishLanding is steps 3 and 4 of land.
func (s *Syncer) finishLanding(ctx context.Context, g *git, j *journal, rep *Report) error {
	unlock, err := s.Store.LockQueues()
	if err != nil {
		return err
	}
	err = s.finish(j.Changes, rep)
	unlock()
	if err != nil {
		return err
	}
	if err := s.moveBranch(ctx, g, j); err != nil {
		return err
	}
	return removeJournal(g)
}

// moveBranch is step 4 of land without the journal: the branch and the
// index to j.Commit, no file touched.
func (s *Syncer) moveBranch(ctx context.Context, g *git, j *journal) error {
	head := g.head
	if head == "" {
		head = g.rev(ctx, "HEAD")
	}
	if head != j.Commit {
		if g.headRef() != "refs/heads/"+j.Branch {
			if _, err := g.run(ctx, "symbolic-ref", "HEAD", "refs/heads/"+j.Branch); err != nil {
				return err
			}
		}
		tree, err := g.tree(ctx, j.Commit)
		if err != nil {
			return err
		}
		if tree == j.Snapshot { // the index holds it already: the branch alone
			_, err = g.run(ctx, "update-ref", "refs/heads/"+j.Branch, j.Commit)
		} else {
			_, err = g.run(ctx, "reset", "-q", "--mixed", j.Commit) // the index, never a file
		}
		if err != nil {
			return err
		}
		g.head = j.Commit
	}
	return nil
}

// journalDir opens .git for the journal, which is written as durably as
// the mail it lands (temp, fsync, rename, directory fsync): a landing cut
// off by a power loss is finished at the next sync, not forgotten.
func journalDir(g *git) (d *durable.Dir, done func(), err error) {
	r, err := chipset.OpenOther(filepath.Join(g.dir, ".git"))
	if err != nil {
		return nil, nil, err
	}
	if d, err = r.Open("."); err != nil {
		r.Close()
		return nil, nil, err
	}
	return d, func() { d.Close(); r.Close() }, nil
}

// removeJournal removes the journal of a landing that is done, durably.
func removeJournal(g *git) error {
	d, done, err := journalDir(g)
	if err != nil {
		return err
	}
	defer done()
	if err := d.Remove(journalFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return d.Sync()
}

func (s *Syncer) writeJournal(g *git, j *journal) error {
	j.Raw = j.Raw[:0]
	for _, c := range j.Changes {
		j.Raw = append(j.Raw, [3]string{c.path, string(c.status), c.blob})
	}
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	d, done, err := journalDir(g)
	if err != nil {
		return err
	}
	defer done()
	return d.Replace(journalFile, data)
}

// readJournal returns the landing a stopped sync left, or nil.
func readJournal(g *git) (*journal, error) {
	data, err := os.ReadFile(filepath.Join(g.dir, ".git", journalFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j := &journal{}
	if err := json.Unmarshal(data, j); err != nil {
		return nil, fmt.Errorf("gitsync: .git/%s: %w", journalFile, err)
	}
	for _, r := range j.Raw {
		if r[1] == "" {
			continue
		}
		j.Changes = append(j.Changes, change{path: r[0], status: r[1][0], blob: r[2], mode: "100644"})
	}
	return j, nil
}

// folders opens the folders of a tree's paths, once each.
//
// It opens the root anew, not through the store's open root, which checks
// the root's set-up (.gitignore, format record) once only: through it,
// after an adopt of an emptied remote, runtime/host-id entered the tree
// (TestAnAdoptKeepsOtherHomesMailItHolds); a fresh open puts the set-up
// back before anything is written.
type folders struct {
	root *chipset.Root
	r    *durable.Root
	dirs map[string]*durable.Dir
}

func (s *Syncer) openFolders() (*folders, error) {
	root, err := chipset.New(s.Store.Dir())
	if err != nil {
		return nil, err
	}
	r, err := root.Open(true)
	if err != nil {
		root.Close()
		return nil, err
	}
	return &folders{root: root, r: r, dirs: map[string]*durable.Dir{}}, nil
}

// of returns the folder of path p, made if create.
func (f *folders) of(p string, create bool) (*durable.Dir, error) { return f.dir(path.Dir(p), create) }

// existing returns the folder of path p, or nil when it is not there.
func (f *folders) existing(p string) (*durable.Dir, error) {
	d, err := f.of(p, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("gitsync: %s: %w", p, err)
	}
	return d, nil
}

// dir returns the folder rel, made if create.
func (f *folders) dir(rel string, create bool) (*durable.Dir, error) {
	if d := f.dirs[rel]; d != nil {
		return d, nil
	}
	var d *durable.Dir
	var err error
	if create {
		d, err = f.r.MkdirAll(rel)
	} else {
		d, err = f.r.Open(rel)
	}
	if err != nil {
		return nil, err
	}
	f.dirs[rel] = d
	return d, nil
}

// sync fsyncs every folder opened.
func (f *folders) sync() error {
	for _, d := range f.dirs {
		if err := d.Sync(); err != nil {
			return err
		}
	}
	return nil
}

func (f *folders) close() {
	for _, d := range f.dirs {
		d.Close()
	}
	f.root.Close()
}

// stage writes each arriving file whole under its dot-name (step 2).
func (s *Syncer) stage(ctx context.Context, g *git, changes []change) error {
	f, err := s.openFolders()
	if err != nil {
		return err
	}
	defer f.close()
	byBlob := map[string][]change{}
	var ids []string
	for _, c := range changes {
		switch {
		case c.status == 'D':
		case !c.file():
			s.warnf("skipped %s from the remote: not a regular file (git mode %s)", c.path, c.mode)
		default:
			if byBlob[c.blob] == nil {
				ids = append(ids, c.blob)
			}
			byBlob[c.blob] = append(byBlob[c.blob], c)
		}
	}
	if len(ids) > 0 {
		s.step("writing the files that arrived")
	}
	// Each file is written by one of a few writers at once. On Linux the
	// whole batch is made durable by one syncfs(2) after the last write,
	// instead of an fsync per file (at 10k files, 3.3 s became 1.1 s);
	// elsewhere each writer fsyncs its file (an fsync waits on the disk,
	// not the CPU). Each folder is fsynced once, after all of them, before
	// the landing is marked ready.
	write := (*durable.Dir).ReplaceBatched
	if durable.CanSyncFS {
		write = (*durable.Dir).ReplaceUnsynced
	}
	type job struct {
		d    *durable.Dir
		name string
		data []byte
	}
	jobs := make(chan job)
	var wg sync.WaitGroup
	var once sync.Once
	var werr error
	failed := make(chan struct{})
	for range stageWriters {
		wg.Go(func() {
			for j := range jobs {
				if err := write(j.d, j.name, j.data); err != nil {
					once.Do(func() { werr = err; close(failed) })
				}
			}
		})
	}
	err = g.blobs(ctx, ids, func(id string, data []byte) error {
		for _, c := range byBlob[id] {
			d, err := f.of(c.path, true)
			if err != nil {
				return fmt.Errorf("gitsync: %s: %w", c.path, err)
			}
			select {
			case jobs <- job{d, tempPrefix + path.Base(c.path), data}:
			case <-failed:
				return werr
			}
		}
		return nil
	})
	close(jobs)
	wg.Wait()
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if durable.CanSyncFS {
		if err := f.r.SyncFS(); err != nil {
			return err
		}
	}
	return f.sync()
}

// stageWriters is how many arriving files are written at once.
const stageWriters = 8

// finish renames the staged files into place and makes the deletes
// (step 3). A file no longer under its dot-name was put in place by a
// sync that was stopped: it is left as it is now.
func (s *Syncer) finish(changes []change, rep *Report) error {
	f, err := s.openFolders()
	if err != nil {
		return err
	}
	defer f.close()
	written := func(c change) bool { return c.status != 'D' && c.file() }
	err = f.eachIn(changes, written, func(d *durable.Dir, c change) error {
		name, temp := path.Base(c.path), tempPrefix+path.Base(c.path)
		if c.status != 'A' {
			return ignoreGone(d.MoveOver(temp, name))
		}
		err := d.Move(temp, d, name)
		if !errors.Is(err, fs.ErrExist) {
			return ignoreGone(err)
		}
		// A file of that name appeared here since the snapshot.
		local, _, lerr := d.ReadFile(name, 1<<30)
		staged, _, serr := d.ReadFile(temp, 1<<30)
		if lerr == nil && serr == nil && bytes.Equal(local, staged) {
			return ignoreGone(d.Remove(temp))
		}
		to, err := s.rename(c.path, rep.Host)
		if err != nil {
			return err
		}
		s.step("renamed %s to %s: another host added that name first", c.path, to)
		rep.Renamed = append(rep.Renamed, [2]string{c.path, to})
		return d.Move(temp, d, name)
	})
	if err != nil {
		return err
	}
	deleted := func(c change) bool { return c.status == 'D' }
	err = f.eachIn(changes, deleted, func(d *durable.Dir, c change) error {
		return ignoreGone(d.Remove(path.Base(c.path)))
	})
	if err != nil {
		return err
	}
	return f.sync()
}

// unstage removes the dot-named files of a landing that never got ready.
func (s *Syncer) unstage(changes []change) error {
	f, err := s.openFolders()
	if err != nil {
		return err
	}
	defer f.close()
	staged := func(c change) bool { return c.status != 'D' }
	return f.eachIn(changes, staged, func(d *durable.Dir, c change) error {
		return ignoreGone(d.Remove(tempPrefix + path.Base(c.path)))
	})
}

// eachIn calls fn with each change keep accepts and its folder, passing
// over changes whose folder is not there; it stops at fn's first error.
func (f *folders) eachIn(changes []change, keep func(change) bool, fn func(*durable.Dir, change) error) error {
	for _, c := range changes {
		if !keep(c) {
			continue
		}
		d, err := f.existing(c.path)
		if err != nil {
			return err
		}
		if d == nil {
			continue
		}
		if err := fn(d, c); err != nil {
			return err
		}
	}
	return nil
}

// ignoreGone is err, but nil for a file that is not there (any more).
func ignoreGone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// apply writes changes into the working tree (stage, then finish),
// with no journal: for putting back what an older sync's rebase undid.
func (s *Syncer) apply(ctx context.Context, g *git, changes []change, rep *Report) error {
	if err := s.stage(ctx, g, changes); err != nil {
		return err
	}
	return s.finish(changes, rep)
}
