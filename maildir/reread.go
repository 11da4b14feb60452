package maildir

import (
	"context"
	"errors"
	"io/fs"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// A FolderRead is what [Store.Reread] read of a folder: every message in
// it, and the file each came from, so that the next Reread of the folder
// reads only the files that are not the ones read.
type FolderRead struct {
	Messages []*Message // oldest first, as [Store.List] with All lists them
	files    map[string]readFile
}

// A readFile is a file Reread read: its name, inode number and change
// time, and the message it held.
type readFile struct {
	entry folderindex.Entry
	m     *Message
}

// Reread reads box b's folder (its archive when archived) as [Store.List]
// with All reads it, reading again only the files that are not those
// prev read (prev: an earlier Reread of the same folder, or nil). A file
// is taken as the one read only while its name, inode number and change
// time are those recorded — the folder index's rule ([IndexDir]): a
// rewrite, even in place, moves the change time, and an inode number
// alone is reused — and a file read within [RacyWindow] of its change is
// read again next time. Reread lists the folder and stats each file it
// knows: it is for a caller that keeps what it read of a folder under the
// folder's stamp ([Store.Stamp]) and calls Reread when the stamp moves, so
// that a send to a folder of 50,000 messages reads one file, not 50,000.
// The messages are shared with prev and with the next FolderRead: a
// caller changes none.
func (s *Store) Reread(b Address, archived bool, prev *FolderRead) (*FolderRead, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	d, err := s.openFolder(b, archived)
	if d == nil {
		if err != nil {
			return nil, err
		}
		return &FolderRead{}, nil // no folder: nothing in it
	}
	defer d.Close()
	rules := s.rules(archived)
	was := map[string]folderindex.Entry{}
	if prev != nil {
		for name, f := range prev.files {
			was[name] = f.entry
		}
	}
	same, load, err := folderindex.Relist(d, was, rules.Classify, func(name string, _ fs.FileMode, why error) { s.warn(d.Join(name), why) })
	if err != nil {
		return nil, err
	}
	out := &FolderRead{files: make(map[string]readFile, len(same)+len(load))}
	for _, e := range same {
		f := prev.files[e.Name]
		out.files[e.Name] = f
		out.Messages = append(out.Messages, f.m)
	}
	now := s.now()
	s.loadNames(context.Background(), d, b, archived, load, nil, func(name string, m *Message, st durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// gone since the listing: the folder's stamp moved too
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		default:
			out.Messages = append(out.Messages, m)
			if !folderindex.Racy(st, now, rules.Window) {
				out.files[name] = readFile{entry: folderindex.Entry{Name: name, Ino: st.Ino, Ctime: st.Ctime.UnixNano()}, m: m}
			}
		}
	})
	sortByTime(out.Messages)
	return out, nil
}
