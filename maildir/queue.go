package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

var (
	// ErrQueueEmpty is returned by [Store.Claim] when no item waits.
	ErrQueueEmpty = errors.New("queue empty")

	// ErrNotFromQueue is returned by [Store.Release] for a message that did
	// not come from a work queue.
	ErrNotFromQueue = errors.New("not a work-queue item")
)

// Claim moves the oldest item waiting in the work queue into agent's
// mailbox and returns it there. The move is one rename that never replaces
// a file: among any number of concurrent claimants each item goes to
// exactly one, and a claimant that dies mid-way leaves the item in the
// queue or in its mailbox, never in neither. Both folders are fsynced before
// Claim returns. An empty queue gives [ErrQueueEmpty].
func (s *Store) Claim(queue, agent string) (*Message, error) {
	q, err := s.Resolve(queue)
	if err == nil && q.Kind != KindQueue {
		err = fmt.Errorf("%w %q: claim from a work queue, queue:NAME", ErrInvalidAddress, queue)
	}
	if err != nil {
		return nil, err
	}
	a, err := s.agent(agent)
	if err != nil {
		return nil, err
	}
	src, err := s.openFolder(q, false)
	if src == nil {
		if err == nil {
			err = fmt.Errorf("%w: nothing waits in %s", ErrQueueEmpty, q)
		}
		return nil, err
	}
	defer src.Close()
	var names []string
	if err := s.eachName(src, false, func(n string) { names = append(names, n) }); err != nil {
		return nil, err
	}
	slices.Sort(names) // stamped names sort oldest first
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	dst, err := r.MkdirAll(a.Dir(false))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	for _, name := range names {
		switch err := src.Move(name, dst, name); {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrExist):
			continue // another claimant won it (or the agent holds that id)
		case err != nil:
			return nil, err
		}
		if err := syncBoth(src, dst); err != nil {
			return nil, err
		}
		m, err := s.load(dst, a, false, name)
		if err != nil {
			// Not a message: put it back as it was, and go on.
			if merr := dst.Move(name, src, name); merr == nil {
				syncBoth(dst, src)
			}
			s.warn(src.Join(name), unwrapPath(err))
			continue
		}
		return m, nil
	}
	return nil, fmt.Errorf("%w: nothing waits in %s", ErrQueueEmpty, q)
}

// Release moves message id, claimed from a work queue, from agent's mailbox
// back to that queue, marked unread for the next claimant. A message that
// did not come from a queue gives [ErrNotFromQueue].
func (s *Store) Release(agent, id string) (*Message, error) {
	a, err := s.agent(agent)
	if err != nil {
		return nil, err
	}
	m, err := s.Get(a.String(), id)
	if err != nil {
		return nil, err
	}
	q, err := ParseAddress(m.To)
	if err != nil || q.Kind != KindQueue {
		return nil, fmt.Errorf("%w: %s was sent to %q, not to a queue", ErrNotFromQueue, m.ID, m.To)
	}
	if m.Read {
		if _, err := s.MarkUnread(a.String(), m.ID); err != nil {
			return nil, err
		}
	}
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	src, err := r.Open(a.Dir(m.Archived))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := r.MkdirAll(q.Dir(false))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	name := m.ID + ".json"
	if err := src.Move(name, dst, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &fs.PathError{Op: "release", Path: src.Join(name), Err: ErrClash}
		}
		return nil, err
	}
	if err := syncBoth(src, dst); err != nil {
		return nil, err
	}
	return s.load(dst, q, false, name)
}

// agent resolves addr, which must name an agent.
func (s *Store) agent(addr string) (Address, error) {
	a, err := s.Resolve(addr)
	if err == nil && a.Kind != KindAgent {
		err = fmt.Errorf("%w %q: not an agent", ErrInvalidAddress, addr)
	}
	return a, err
}

// Queues returns the names of the work queues, sorted.
func (s *Store) Queues() ([]string, error) { return s.names(KindQueue) }

// names lists the folders of queues or channels.
func (s *Store) names(kind Kind) ([]string, error) {
	dir := QueueDir
	if kind == KindChannel {
		dir = ChannelDir
	}
	d, err := s.root.Dir(dir)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	err = d.Each(func(e fs.DirEntry) {
		if n := e.Name(); e.IsDir() && !strings.HasPrefix(n, ".") && ValidAgent(n) {
			names = append(names, n)
		}
	})
	slices.Sort(names)
	return names, err
}
