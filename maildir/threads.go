package maildir

import (
	"context"
	"errors"
	"io/fs"

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
// folder's thread index, rebuilding it first if it cannot be trusted: the
// files it cannot vouch for are read for their thread.
func (s *Store) threadNames(d *durable.Dir, b Address, archived bool, key string) ([]string, error) {
	st, err := d.Stat()
	if err != nil {
		return nil, err
	}
	plan, err := folderindex.PlanThread(d, st, s.rules(archived), folderindex.ThreadHash(key), func(name string, _ fs.FileMode, why error) {
		s.warn(d.Join(name), why)
	})
	if err != nil {
		return nil, err
	}
	s.loadNames(context.Background(), d, b, archived, plan.Read, nil, func(name string, m *Message, fst durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		default:
			plan.Record(name, fst, threadKey(m))
		}
	})
	plan.Save()
	return plan.Names, nil
}
