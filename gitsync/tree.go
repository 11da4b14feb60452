package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// duplicates returns the message ids among pulled that are also in
// another folder (a mailbox, an archive, a queue, a channel), as
// "id: path, path". It reads folders, never files.
func duplicates(root string, pulled []string) ([]string, error) {
	want := map[string]bool{}
	for _, p := range pulled {
		if isMessage(p) {
			want[strings.TrimSuffix(path.Base(p), ".json")] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	places := map[string][]string{}
	r, err := chipset.New(root) // the root's one guarded, no-follow way in
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, top := range []string{maildir.MailDir, maildir.QueueDir, maildir.ChannelDir} {
		boxes, err := listDir(r, top)
		if err != nil {
			return nil, err
		}
		for _, b := range boxes {
			if !b.IsDir() || strings.HasPrefix(b.Name(), ".") {
				continue
			}
			for _, folder := range []string{top + "/" + b.Name(), top + "/" + b.Name() + "/" + maildir.ArchiveDir} {
				names, err := listDir(r, folder)
				if err != nil {
					return nil, err
				}
				for _, n := range names {
					if id, ok := strings.CutSuffix(n.Name(), ".json"); ok && want[id] {
						places[id] = append(places[id], folder+"/"+n.Name())
					}
				}
			}
		}
	}
	var out []string
	for _, id := range slices.Sorted(maps.Keys(places)) {
		if ps := places[id]; len(ps) > 1 {
			out = append(out, id+": "+strings.Join(ps, ", "))
		}
	}
	return out, nil
}

// listDir lists the folder rel of root r (names and types only), none
// when it does not exist.
func listDir(r *chipset.Root, rel string) ([]fs.DirEntry, error) {
	d, err := r.Dir(rel)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var out []fs.DirEntry
	err = d.Each(func(e fs.DirEntry) { out = append(out, e) })
	return out, err
}

// prune deletes, from the working tree, archived mail of local homes
// older than PruneAfter that is committed (at head): the next commit
// records the deletion, and history keeps the file for Recall.
func (s *Syncer) prune(ctx context.Context, g *git, head string) ([]string, error) {
	after := s.PruneAfter
	if after == 0 {
		after = DefaultPruneAfter
	}
	if after < 0 || head == "" {
		return nil, nil
	}
	// The candidates, from the working tree: archived mail of local homes
	// older than the cutoff. Most syncs find none and ask git nothing.
	cutoff := s.now().Add(-after)
	type candidate struct {
		box  maildir.Address
		name string
	}
	var rels []string
	cands := map[string]candidate{}
	for _, top := range []struct {
		dir  string
		kind maildir.Kind
	}{{maildir.MailDir, maildir.KindAgent}, {maildir.ChannelDir, maildir.KindChannel}} {
		// Through the store's guarded root (no link followed), as every
		// listing of the root is (#53 What to build 1).
		boxes, err := listDir(s.Store.Root(), top.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, b := range boxes {
			box := maildir.Address{Kind: top.kind, Name: b.Name()}
			if !b.IsDir() || !maildir.ValidAgent(box.Name) || s.Store.MayChange(box) != nil {
				continue
			}
			arch := path.Join(top.dir, box.Name, maildir.ArchiveDir)
			d, err := s.Store.Root().Dir(arch)
			if d == nil || err != nil {
				continue // none, or gone
			}
			d.Each(func(f fs.DirEntry) {
				name := f.Name()
				if !f.Type().IsRegular() || strings.HasPrefix(name, ".") {
					return
				}
				t, ok := maildir.ParseStamp(name)
				if !ok {
					st, err := d.Lstat(name)
					if err != nil {
						return // gone already
					}
					t = st.ModTime
				}
				if t.Before(cutoff) {
					rel := path.Join(arch, name)
					rels = append(rels, rel)
					cands[rel] = candidate{box, name}
				}
			})
			d.Close()
		}
	}
	var pruned []string
	// Only what a commit holds: history must keep what leaves the tree.
	for chunk := range slices.Chunk(rels, 500) {
		tracked, err := g.paths(ctx, append([]string{"ls-tree", "-z", "--name-only", head, "--"}, chunk...)...)
		if err != nil {
			return pruned, err
		}
		for _, p := range tracked {
			c, ok := cands[p]
			if !ok {
				continue
			}
			if err := s.Store.Delete(c.box, strings.TrimSuffix(c.name, ".json")); err != nil && !errors.Is(err, maildir.ErrNotFound) {
				return pruned, err
			}
			pruned = append(pruned, p)
		}
	}
	if len(pruned) > 0 {
		s.step("pruned %d archived messages older than %s from the working tree", len(pruned), after)
	}
	return pruned, nil
}

// ErrNotInHistory is returned by Recall for an id that no commit removed
// from an archive.
var ErrNotInHistory = errors.New("gitsync: no pruned message has that id")

// Recall brings back a message that pruning took out of the working tree:
// the file as it was when it left, into the archive it left, by a write
// that never replaces a file. It returns the path, relative to the root.
// A recall is an add: any host may make it.
func (s *Syncer) Recall(ctx context.Context, id string) (string, error) {
	id = strings.TrimSuffix(id, ".json")
	if _, err := maildir.ParseID(id); err != nil {
		return "", err
	}
	bin := s.Git
	if bin == "" {
		bin = "git"
	}
	host, _ := s.Store.LocalHost()
	g := &git{dir: s.Store.Dir(), bin: bin, env: environ(host, true)}
	out, err := g.run(ctx, "log", "--all", "-1", "--format=%H", "--name-only", "--diff-filter=D", "--",
		":(glob)"+maildir.MailDir+"/*/"+maildir.ArchiveDir+"/"+id+".json", ":(glob)"+maildir.ChannelDir+"/*/"+maildir.ArchiveDir+"/"+id+".json")
	if err != nil {
		return "", err
	}
	lines := strings.Fields(out)
	if len(lines) < 2 {
		return "", fmt.Errorf("%w: %s", ErrNotInHistory, id)
	}
	commit, p := lines[0], lines[1]
	data, err := g.run(ctx, "show", commit+"^:"+p)
	if err != nil {
		return "", err
	}
	d, done, err := s.folder(path.Dir(p), true)
	if err != nil {
		return "", err
	}
	defer done()
	if err := d.Create(path.Base(p), []byte(data)); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return p, nil
}

// folder opens the folder rel below the root (made, with create), with
// the root's no-follow confinement, and returns the function that closes
// it.
func (s *Syncer) folder(rel string, create bool) (*durable.Dir, func(), error) {
	f, err := s.openFolders()
	if err != nil {
		return nil, nil, err
	}
	d, err := f.dir(rel, create)
	if err != nil {
		f.close()
		return nil, nil, err
	}
	return d, f.close, nil
}
