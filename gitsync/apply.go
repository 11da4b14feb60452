package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
)

// apply writes changes (what other hosts did that this host's tree does
// not have yet) into the working tree through mailfs's own durable
// writes, never git's: each file is written whole under a temp name,
// fsynced and renamed into place, private (0600, folders 0700).
//
// Nothing a local writer did is undone. The changes are other hosts'
// adds, and rewrites and deletes of objects homed elsewhere, which no
// writer here changes. An add never replaces a file: one that a local
// writer (a script's drop) put at the same name since the snapshot is
// first renamed to carry this host's name, as settle does. Writes come
// before deletes, so a message moved elsewhere (an archive, a claim) is
// never missing from both places to a reader.
func (s *Syncer) apply(ctx context.Context, g *git, changes []change, rep *Report) error {
	if len(changes) == 0 {
		return nil
	}
	root, err := chipset.New(s.Store.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
	r, err := root.Open(true)
	if err != nil {
		return err
	}
	dirs := map[string]*durable.Dir{}
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	folder := func(p string, create bool) (*durable.Dir, error) {
		rel := path.Dir(p)
		if d := dirs[rel]; d != nil {
			return d, nil
		}
		var d *durable.Dir
		var err error
		if create {
			d, err = r.MkdirAll(rel)
		} else {
			d, err = r.Open(rel)
		}
		if err != nil {
			return nil, err
		}
		dirs[rel] = d
		return d, nil
	}

	var writes, deletes []change
	byBlob := map[string][]change{}
	for _, c := range changes {
		switch {
		case c.status == 'D':
			deletes = append(deletes, c)
		case !c.file():
			s.warnf("skipped %s from the remote: not a regular file (git mode %s)", c.path, c.mode)
		default:
			writes = append(writes, c)
			if len(byBlob[c.blob]) == 0 {
				byBlob[c.blob] = nil
			}
			byBlob[c.blob] = append(byBlob[c.blob], c)
		}
	}
	var ids []string
	for _, c := range writes {
		if !slices.Contains(ids, c.blob) {
			ids = append(ids, c.blob)
		}
	}
	if len(writes) > 0 {
		s.step("writing %d files that arrived", len(writes))
	}
	err = g.blobs(ctx, ids, func(id string, data []byte) error {
		for _, c := range byBlob[id] {
			d, err := folder(c.path, true)
			if err != nil {
				return fmt.Errorf("gitsync: %s: %w", c.path, err)
			}
			name := path.Base(c.path)
			if c.status != 'A' {
				if err := d.Replace(name, data); err != nil {
					return err
				}
				continue
			}
			err = d.Create(name, data)
			if !errors.Is(err, fs.ErrExist) {
				if err != nil {
					return err
				}
				continue
			}
			// A file of that name appeared here since the snapshot.
			local, _, rerr := d.ReadFile(name, 1<<30)
			if rerr == nil && bytes.Equal(local, data) {
				continue
			}
			to, err := s.rename(c.path, rep.Host)
			if err != nil {
				return err
			}
			s.step("renamed %s to %s: another host added that name first", c.path, to)
			rep.Renamed = append(rep.Renamed, [2]string{c.path, to})
			if err := d.Create(name, data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, c := range deletes {
		d, err := folder(c.path, false)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gitsync: %s: %w", c.path, err)
		}
		if err := d.Remove(path.Base(c.path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for _, d := range dirs {
		if err := d.Sync(); err != nil {
			return err
		}
	}
	return nil
}
