package webview

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/maildir"
)

// A folderCache keeps what the overview read of each folder — a mailbox's
// unread mail and its total, a queue's waiting items, a channel's posts —
// with the folder's stamp (device, inode, modification and change times)
// taken before the read. A render stats each folder and reads again only
// those whose stamp moved: after a send, one folder, not the town.
//
// It trusts a stamp by the rule of the store's own folder index (see
// maildir.IndexDir): every change made through the directory — a send, a
// mark (a rewrite renamed over the file), an archive, a claim, a script's
// drop or mv, a git pull — moves the folder's change time, which no caller
// can set back; a folder changed within maildir.RacyWindow of its stat is
// not kept, as the clock may not have ticked. What the stamp cannot show
// is a file rewritten in place under its own name: it shows when its
// folder next changes, as in the index.
type folderCache struct {
	mu      sync.Mutex
	entries map[string]*cached // by the folder's path
}

type cached struct {
	stamp folderStamp
	value any
}

type folderStamp struct {
	dev, ino     uint64
	mtime, ctime int64
}

func newFolderCache() *folderCache { return &folderCache{entries: map[string]*cached{}} }

// get returns what read returns for the folder at path: from the cache
// when the folder has not changed since it was read, else read again (and
// kept, unless the folder changed too recently to trust its stamp).
func (c *folderCache) get(path string, now time.Time, read func() (any, error)) (any, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return read() // no folder (a registered agent without mail): nothing to keep
		}
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	key := folderStamp{dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
	c.mu.Lock()
	e := c.entries[path]
	c.mu.Unlock()
	if e != nil && e.stamp == key {
		return e.value, nil
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	if now.Sub(time.Unix(0, key.ctime)) > maildir.RacyWindow {
		c.mu.Lock()
		c.entries[path] = &cached{stamp: key, value: v}
		c.mu.Unlock()
	}
	return v, nil
}

// A boxRead is a mailbox's unread mail (bodies left out: the overview
// shows none) and how many messages it holds.
type boxRead struct {
	unread []*maildir.Message
	total  int
}

// mailboxRead returns agent a's unread mail and total, through the cache.
func (s *Server) mailboxRead(a string) (*boxRead, error) {
	box := maildir.Address{Kind: maildir.KindAgent, Name: a}
	path := filepath.Join(s.Store.Dir(), filepath.FromSlash(maildir.MailDir), a)
	v, err := s.cache.get(path, s.now(), func() (any, error) {
		unread, err := s.Store.List(box, maildir.ListOptions{})
		if err != nil {
			return nil, err
		}
		entries, _, err := s.Store.Entries(box, false)
		if err != nil {
			return nil, err
		}
		r := &boxRead{total: len(entries)}
		for _, m := range unread {
			slim := *m
			slim.Body = ""
			r.unread = append(r.unread, &slim)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*boxRead), nil
}
