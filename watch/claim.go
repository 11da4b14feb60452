package watch

import (
	"context"
	"errors"
	"fmt"
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

// Claimed is what [Claim] did.
type Claimed struct {
	// Item is the item, in the agent's mailbox; nil when Claim only asked
	// the queue's home for one (Request).
	Item *maildir.Message
	// Held is set when Item is one the agent already held (claimed, not
	// yet marked read) and Claim handed it back instead of a second.
	Held bool
	// Home is the queue's home host when this host is not it.
	Home string
	// Request is the claim request waiting for the agent at the home:
	// made by this Claim (Fresh), or one made earlier.
	Request *maildir.Request
	Fresh   bool
	// ServeErr is why serving the requests waiting on the queue's home
	// first failed; the claim went on.
	ServeErr error
}

// Claim is the claim verb, as the CLI's claim and the MCP server's claim
// tool both run it: one code path, so an agent gets the same answer
// through either.
//
//   - An item claimed from q for agent as and not yet marked done (read)
//     is handed back first, wherever the agent's mailbox is this host's:
//     a worker stopped between its claim and reading the id does not take
//     a second item and strand the first.
//   - On q's home, the claim requests other hosts' agents left wait
//     longer than this claim: they are served first, then the oldest item
//     left is claimed.
//   - Elsewhere, an item a request brought and the agent has not done is
//     returned; else, while this host's copy of q holds an item (or ask
//     is set: the caller will wait for one), a request is left for the
//     home (or the one waiting is reused) and returned with Item nil: the
//     home serves it at its next sync, and the item arrives with the next
//     sync here. [WaitServed] waits for it; a later Claim returns it.
//
// An empty queue is [maildir.ErrQueueEmpty].
func Claim(s *maildir.Store, q, as maildir.Address, ask bool) (*Claimed, error) {
	if q.Kind == maildir.KindQueue && s.MayChange(as) == nil {
		m, err := s.Held(q, as)
		if err != nil || m != nil {
			return &Claimed{Item: m, Held: m != nil}, err
		}
	}
	out := &Claimed{}
	if q.Kind == maildir.KindQueue && s.MayChange(q) == nil {
		_, out.ServeErr = s.ServeQueue(q)
	}
	m, err := s.Claim(q, as)
	var nh *maildir.NotHomeError
	if !errors.As(err, &nh) || nh.Home == "" || nh.Host == "" {
		out.Item = m
		return out, err
	}
	out.Home = nh.Home
	if out.Item, err = Served(s, q, as); err != nil || out.Item != nil {
		return out, err
	}
	if more, err := Waiting(s, q); err != nil {
		return out, err
	} else if !more && !ask {
		return out, fmt.Errorf("%w (this host's copy of %s, homed on %s)", maildir.ErrQueueEmpty, q, nh.Home)
	}
	out.Request, out.Fresh, err = s.RequestClaim(q, as)
	return out, err
}
