package maildir

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// maxRewrites bounds how often a mark starts again because the file moved
// or changed under it.
const maxRewrites = 16

// MarkRead sets "read" to true on message id in box b (or in its archive)
// and returns the message as it now is. id is resolved as [Store.Get] does.
//
// The rewrite is atomic and keeps every other key's value byte for byte. It
// is swapped in with an exchange that fails if the file has gone, so a mark
// racing with a delete or an archive never brings the message back: if the
// file was archived meanwhile, the mark follows it there; if it was deleted,
// MarkRead returns [ErrNotFound]. A message that is already read is not
// written at all.
func (s *Store) MarkRead(b Address, id string) (*Message, error) { return s.setRead(b, id, true) }

// MarkUnread sets "read" to false, as [Store.MarkRead] sets it to true.
func (s *Store) MarkUnread(b Address, id string) (*Message, error) { return s.setRead(b, id, false) }

func (s *Store) setRead(b Address, id string, read bool) (*Message, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	if err := s.MayChange(b); err != nil {
		return nil, err
	}
	for range maxRewrites {
		d, name, archived, err := s.locate(b, id)
		if err != nil {
			return nil, err
		}
		id = name // later rounds look for exactly this message
		m, err := s.rewriteRead(d, b, archived, name, read)
		d.Close()
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, durable.ErrChanged) {
			continue // moved, deleted or rewritten meanwhile: look again
		}
		return m, err
	}
	return nil, fmt.Errorf("marking %s/%s: the file kept changing; try again", b, id)
}

func (s *Store) rewriteRead(d *durable.Dir, b Address, archived bool, name string, read bool) (*Message, error) {
	return s.rewrite(d, b, archived, name, func(m *Message, fields []field) []field {
		if m.Read == read {
			// Already so: write nothing, but leave the index right about
			// the message (it may have been rewritten in place).
			if s.indexOn() {
				folderindex.Forget(s.rules(archived), d.Path(), name)
			}
			return nil
		}
		m.Read = read
		return setField(fields, "read", marshalValue(read))
	})
}

// Delete removes message id from the folder of b (or its archive) and
// makes the removal durable. id is resolved as [Store.Get] does. A
// message that a move cut short left under its name in both the folder
// and its archive (one file, two names: the rename fallback's link and
// unlink) loses both names: a delete that reports success leaves nothing.
func (s *Store) Delete(b Address, id string) error {
	if err := s.check(b); err != nil {
		return err
	}
	if err := s.MayChange(b); err != nil {
		return err
	}
	f, err := s.openFolders(b, true, nil)
	if err != nil {
		return err
	}
	defer f.Close()
	i, name, err := f.find(id, false)
	if err != nil {
		return err
	}
	d, other := f.dirs[i], f.dirs[1-i]
	st, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return notFound(b, id)
	}
	if err != nil {
		return err
	}
	if err := d.Remove(name); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notFound(b, id)
		}
		return err
	}
	if other != nil && st.Nlink > 1 {
		if o, err := other.Lstat(name); err == nil && durable.Same(o, st) {
			if err := other.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			if err := other.Sync(); err != nil {
				return err
			}
		}
	}
	return d.Sync()
}
