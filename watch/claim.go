package watch

import (
	"context"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Served returns the oldest unread item in agent's mailbox that a claim
// request to queue q brought (its claim record names the queue and a
// request), or nil: an item claimed for the agent on the queue's home
// host, which a sync carried here, and which the agent has not yet done
// (marked read).
func Served(s *maildir.Store, q, agent maildir.Address) (*maildir.Message, error) {
	msgs, err := s.List(agent, maildir.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.Claim != nil && m.Claim.Request != "" && m.Claim.Queue == q.String() {
			return m, nil
		}
	}
	return nil, nil
}

// Waiting reports whether this host's copy of queue q holds an item no
// claim has taken.
func Waiting(s *maildir.Store, q maildir.Address) (bool, error) {
	items, err := s.List(q, maildir.ListOptions{})
	if err != nil {
		return false, err
	}
	for _, m := range items {
		if m.Claim == nil {
			return true, nil
		}
	}
	return false, nil
}

// WaitServed blocks, on a host that is not queue q's home, until an item
// a claim request brought is in agent's mailbox (see [Served]) and
// returns it; or until this host's copy of the queue holds no item a
// claim could still take, and returns [maildir.ErrQueueEmpty]; or until
// ctx ends. It watches the mailbox and the queue (a sync writes what
// arrives into both), and looks again every check as well, since an
// item leaving the queue is no new message.
func WaitServed(ctx context.Context, s *maildir.Store, q, agent maildir.Address, check time.Duration) (*maildir.Message, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := (&Watcher{Store: s, Boxes: []maildir.Address{agent, q}}).Watch(ctx)
	if err != nil {
		return nil, err
	}
	tick := time.NewTicker(check)
	defer tick.Stop()
	for {
		// Level-triggered: the watches are in place, then the state is
		// read, so nothing that lands is missed.
		if m, err := Served(s, q, agent); err != nil || m != nil {
			return m, err
		}
		if more, err := Waiting(s, q); err != nil {
			return nil, err
		} else if !more {
			return nil, maildir.ErrQueueEmpty
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case _, ok := <-events:
			if !ok {
				return nil, ctx.Err()
			}
		case <-tick.C:
		}
	}
}
