package maildir

import (
	"errors"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// The thread index: for each folder of messages (a box, or its archive),
// the thread each message file belongs to, so that [Store.Thread] reads a
// thread's own files and not the whole tree. It lives beside the folder
// index (runtime/index/<folder>.threads) and is kept by the same rules
// (see IndexDir): trusted while the folder's stamp is the one recorded,
// else rebuilt from a listing that rereads only the files whose name,
// inode and ctime it cannot vouch for. A lookup reads the header and the
// sorted table of thread hashes (12 bytes a message), and the records of
// the matches; a hash that collides costs one file read, since every
// message found is checked against the thread it is asked for.
// threadKey is the thread a message belongs to: its thread, else itself.
func threadKey(m *Message) string {
	if m.Thread != "" {
		return m.Thread
	}
	return m.ID
}

// threadNames returns the names of the files in folder d (of box b; an
// archive when archived) that may belong to the thread key, from the
// folder's thread index, rebuilding it first if it cannot be trusted.
func (s *Store) threadNames(d *durable.Dir, b Address, archived bool, key string) ([]string, error) {
	st, err := d.Stat()
	if err != nil {
		return nil, err
	}
	rel := d.Path()
	hash := folderindex.ThreadHash(key)
	if names, ok := s.lookupThread(rel, st, hash); ok {
		return names, nil
	}
	entries, err := s.rebuildThreads(d, b, archived, st)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Hash == hash {
			names = append(names, e.Name)
		}
	}
	return names, nil
}

// lookupThread answers from the thread index of folder rel, if it is
// there and describes the folder whose stat is st.
func (s *Store) lookupThread(rel string, st durable.Stat, hash uint64) ([]string, bool) {
	d, err := s.root.Dir(IndexDir)
	if d == nil || err != nil {
		return nil, false
	}
	defer d.Close()
	return folderindex.LookupThread(d, rel, st, hash)
}

// rebuildThreads lists folder d, reads what the old thread index cannot
// vouch for, writes the new index, and returns its entries. Files that
// are not messages are reported to Warn, as a reader of the folder does.
func (s *Store) rebuildThreads(d *durable.Dir, b Address, archived bool, st durable.Stat) ([]folderindex.ThreadEntry, error) {
	rel := d.Path()
	old := map[string]folderindex.ThreadEntry{}
	if idx, err := s.root.Dir(IndexDir); idx != nil && err == nil {
		old = folderindex.ReadThreads(idx, rel)
		idx.Close()
	}
	was := map[string]folderindex.Entry{}
	for name, e := range old {
		was[name] = e.Entry
	}
	now := time.Now()
	racy := s.dirRacy(st, now)
	same, load, err := s.relist(d, archived, was, func(name string, _ fs.FileMode, why error) { s.warn(d.Join(name), why) })
	if err != nil {
		return nil, err
	}
	entries := make([]folderindex.ThreadEntry, 0, len(same)+len(load))
	for _, k := range same {
		entries = append(entries, folderindex.ThreadEntry{Entry: k, Hash: old[k.Name].Hash})
	}
	s.loadNames(d, b, archived, load, nil, func(name string, m *Message, fst durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		default:
			ctime := fst.Ctime.UnixNano()
			if s.racyAt(fst, now) {
				ctime = -1 // read again at the next rebuild, which the next lookup makes
				racy = true
			}
			entries = append(entries, folderindex.ThreadEntry{Entry: folderindex.Entry{Name: name, Ino: fst.Ino, Ctime: ctime}, Hash: folderindex.ThreadHash(threadKey(m))})
		}
	})
	if idx, err := s.mkdir(IndexDir); err == nil {
		_ = idx.ReplaceEphemeral(folderindex.ThreadsName(rel), folderindex.EncodeThreads(folderindex.StampOf(st), racy, entries))
		idx.Close()
	}
	return entries, nil
}
