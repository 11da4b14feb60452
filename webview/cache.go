package webview

import (
	"sync"

	"github.com/mailfs/mailfs/maildir"
)

// A folderCache keeps what the overview read of each folder — a mailbox's
// unread mail and its total, a channel's posts — with the folder's stamp
// ([maildir.Store.Stamp]) taken before the read. A render asks for each
// folder's stamp and reads again only those whose stamp moved: after a
// send, one folder, not the town.
//
// It answers from a read only under a settled stamp, by the store's own
// rule (that of its folder index): every change made through the
// directory moves the stamp, and a folder changed too recently for its
// stamp to be trusted is read again next time (from what was read, for a
// read that can tell which of it still stands). What a stamp cannot show is a file
// rewritten in place under its own name: it shows when its folder next
// changes, as in the index.
//
// A cache may have a budget: the sum of the sizes its reads say they
// hold. A read that would take it past the budget is used once and not
// kept (its folder is read again next time), so that a town larger than
// the budget costs time, never memory without bound.
type folderCache struct {
	mu      sync.Mutex
	entries map[folderKey]*cached
	budget  int64 // 0: none
	size    int64 // the sizes of the entries kept
	reads   int   // folders read (not answered from the cache), for tests
}

// A folderKey names a folder and what was read of it: a box, or its
// archive, for one page's use (the overview's, the activity page's).
type folderKey struct {
	box      maildir.Address
	archived bool
	use      string
}

type cached struct {
	stamp   maildir.FolderStamp
	settled bool // the stamp was settled: the value stands while it does
	value   any
	size    int64
}

func newFolderCache() *folderCache { return &folderCache{entries: map[folderKey]*cached{}} }

// newBudgetCache is a folderCache that keeps reads whose sizes add up to
// at most budget.
func newBudgetCache(budget int64) *folderCache {
	c := newFolderCache()
	c.budget = budget
	return c
}

// get returns what read returns for box b's folder: from the cache when
// the folder has not changed since it was read under a settled stamp,
// else read again (and kept).
func (c *folderCache) get(st *maildir.Store, b maildir.Address, read func() (any, error)) (any, error) {
	return c.getKey(st, folderKey{box: b}, read)
}

// getKey is get of what use read of box k.box (or its archive).
func (c *folderCache) getKey(st *maildir.Store, k folderKey, read func() (any, error)) (any, error) {
	return c.getSized(st, k, func(any) (any, int64, error) {
		v, err := read()
		return v, 0, err
	})
}

// getSized is getKey of a read that says how much it holds, counted
// against the cache's budget, and is given what was read of the folder
// before (nil if nothing is kept): a read that can tell which of it still
// stands reads only the rest. What it is given is kept even when its
// stamp was not settled, for that use only.
func (c *folderCache) getSized(st *maildir.Store, k folderKey, read func(old any) (any, int64, error)) (any, error) {
	stamp, settled, err := st.Stamp(k.box, k.archived)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	e := c.entries[k]
	c.mu.Unlock()
	if e != nil && e.settled && e.stamp == stamp {
		return e.value, nil
	}
	var old any
	if e != nil {
		old = e.value
	}
	v, size, err := read(old)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	if err != nil {
		return nil, err
	}
	if was := c.entries[k]; was != nil {
		c.size -= was.size
		delete(c.entries, k)
	}
	if c.budget == 0 || c.size+size <= c.budget {
		c.entries[k] = &cached{stamp: stamp, settled: settled, value: v, size: size}
		c.size += size
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
	v, err := s.cache.get(s.Store, box, func() (any, error) {
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

// channelRead is a channel's post count and its latest post.
type channelRead struct {
	posts  int
	latest *maildir.Message
}

// channelRead returns channel c's count and latest post, through the
// cache: a channel keeps every post by default, so reading them all at
// every render would grow without bound.
func (s *Server) channelRead(c string) (*channelRead, error) {
	box := maildir.Address{Kind: maildir.KindChannel, Name: c}
	v, err := s.cache.get(s.Store, box, func() (any, error) {
		posts, err := s.Store.List(box, maildir.ListOptions{All: true})
		if err != nil {
			return nil, err
		}
		r := &channelRead{posts: len(posts)}
		if len(posts) > 0 {
			r.latest = posts[len(posts)-1]
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*channelRead), nil
}
