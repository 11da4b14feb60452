package maildir

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// Reply answers message id in agent's mailbox (or its archive): r goes
// from agent to the original's sender, as [Store.ReplyTo] builds it. agent
// must be an agent: queues and channels do not reply.
func (s *Store) Reply(b Address, id string, r *Message) ([]*Message, error) {
	if b.Kind != KindAgent {
		return nil, fmt.Errorf("%w: %s is %s; only an agent replies (claim the item into a mailbox first)", ErrWrongKind, b, article(b.Kind))
	}
	orig, err := s.Get(b, id)
	if err != nil {
		return nil, err
	}
	reply := *r
	reply.From = b.Name
	return s.ReplyTo(orig, &reply)
}

// ReplyTo sends r as the answer to orig: to orig's sender, in orig's
// thread, with ReplyTo set to orig's id. r.From is the sender; left empty,
// it is the agent whose mailbox holds orig. An empty Subject becomes "Re: "
// and the original's; an empty Type becomes "reply"; r.Body, r.Priority,
// r.CC and r.Extra are the caller's. It returns the delivered copies, as
// [Store.Send] does. Every entry point that replies (the command line, Gas
// City, hooks) builds the reply here.
func (s *Store) ReplyTo(orig *Message, r *Message) ([]*Message, error) {
	reply, err := s.reply(orig, r)
	if err != nil {
		return nil, err
	}
	return s.Send(reply)
}

// ReplyOnce is [Store.ReplyTo] with an idempotency key, as [Store.SendOnce]
// is [Store.Send] with one: a retried reply with the same key from the same
// sender within [OnceWindow] delivers nothing and returns the first
// reply's copies, with again set.
func (s *Store) ReplyOnce(orig *Message, r *Message, key string) (sent []*Message, again bool, err error) {
	reply, err := s.reply(orig, r)
	if err != nil {
		return nil, false, err
	}
	return s.SendOnce(reply, key)
}

// reply builds the answer r to orig that ReplyTo sends.
func (s *Store) reply(orig *Message, r *Message) (*Message, error) {
	if orig.From == "" {
		return nil, fmt.Errorf("%w: %s has no sender to reply to", ErrInvalidMessage, orig.Path)
	}
	if _, err := s.agentOf(orig.From); err != nil {
		return nil, fmt.Errorf("%w: %s cannot be answered: its sender %q is not an agent address", ErrInvalidMessage, orig.Path, orig.From)
	}
	reply := *r
	if reply.From == "" {
		if orig.Box.Kind != KindAgent {
			return nil, fmt.Errorf("%w: %s is in %s: say who replies", ErrWrongKind, orig.ID, orig.Box)
		}
		reply.From = orig.Box.Name
	}
	// The sender as it wrote itself (Gas City's providers reply to
	// original.From), unless a group, queue or channel bears that name:
	// then the agent, prefixed.
	reply.To = orig.From
	if a, err := s.Resolve(orig.From); err != nil || a.Kind != KindAgent {
		reply.To = "agent:" + orig.From
	}
	reply.Thread = orig.Thread
	reply.Thread = cmp.Or(reply.Thread, orig.ID)
	reply.ReplyTo = orig.ID
	if reply.Subject == "" {
		reply.Subject = orig.Subject
		if !strings.HasPrefix(strings.ToLower(reply.Subject), "re:") {
			reply.Subject = "Re: " + reply.Subject
		}
	}
	reply.Type = cmp.Or(reply.Type, "reply")
	return &reply, nil
}

// Find returns the message with id in any mailbox, queue or channel, or
// their archives, for callers that have an id but no recipient. id is
// resolved as [Store.Get] does, across all of them; an id present in
// several folders is ambiguous.
func (s *Store) Find(id string) (*Message, error) { return s.find(id, true) }

// find is Find; with prefixes false an id that is no message's whole id is
// not found, without the listing of every folder that a prefix costs.
func (s *Store) find(id string, prefixes bool) (*Message, error) {
	if _, err := ParseID(id); err != nil {
		return nil, err
	}
	boxes, err := s.boxes()
	if err != nil {
		return nil, err
	}
	// Exact ids first: per box one open and one lstat (two in its archive),
	// no listing; each kind's parent folder is opened once.
	var found []*Message
	parents := map[string]*durable.Dir{}
	defer func() {
		for _, d := range parents {
			d.Close()
		}
	}()
	for _, a := range boxes {
		dir := path.Dir(a.Dir(false))
		parent, ok := parents[dir]
		if !ok {
			if parent, err = s.root.Dir(dir); err != nil {
				return nil, err
			}
			parents[dir] = parent
		}
		if parent == nil {
			continue
		}
		m, err := s.findExact(a, id, parent)
		if err != nil {
			return nil, err
		}
		if m != nil {
			found = append(found, m)
		}
	}
	if len(found) == 0 && prefixes {
		for _, a := range boxes {
			m, err := s.Get(a, id)
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return nil, err
			}
			found = append(found, m)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: no mailbox holds %q", ErrNotFound, id)
	case 1:
		return found[0], nil
	}
	c := make([]string, len(found))
	for i, m := range found {
		c[i] = m.Box.String() + "/" + m.ID
	}
	return nil, &AmbiguousError{ID: id, Candidates: c}
}

// findExact returns the message whose id is exactly id in box b or its
// archive, or nil. parent is b's parent folder, already open.
func (s *Store) findExact(b Address, id string, parent *durable.Dir) (*Message, error) {
	f, err := s.openFolders(b, true, parent)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	i, name, err := f.find(id, true)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotMessage) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := s.load(f.dirs[i], b, i == 1, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return m, err
}

// Thread returns every message of the conversation that id belongs to, in
// every mailbox, queue and channel and their archives, oldest first. id may be any message of the
// thread (resolved as [Find] does) or the thread's id itself.
//
// A whole message id is looked up exactly; an id that is no message's is
// first taken as a thread key, through each folder's thread index; only
// when no message belongs to such a thread is it resolved as a prefix,
// which lists every folder.
func (s *Store) Thread(id string) ([]*Message, error) {
	if _, err := ParseID(id); err != nil {
		return nil, err
	}
	m, err := s.find(id, false)
	switch {
	case err == nil:
		return s.threadOf(threadKey(m), id)
	case !errors.Is(err, ErrNotFound):
		return nil, err
	}
	thread, err := s.threadOf(id, id)
	if !errors.Is(err, ErrNotFound) {
		return thread, err
	}
	if m, ferr := s.Find(id); ferr == nil {
		return s.threadOf(threadKey(m), id)
	} else if !errors.Is(ferr, ErrNotFound) {
		return nil, ferr
	}
	return nil, err
}

// threadOf returns the messages of thread key in every folder, oldest
// first; id is what the caller asked for, for the error.
func (s *Store) threadOf(key, id string) ([]*Message, error) {
	boxes, err := s.boxes()
	if err != nil {
		return nil, err
	}
	var thread []*Message
	in := func(m *Message) bool { return m.Thread == key || m.ID == key }
	for _, a := range boxes {
		for _, archived := range []bool{false, true} {
			msgs, err := s.threadIn(a, archived, key, in)
			if err != nil {
				return nil, err
			}
			thread = append(thread, msgs...)
		}
	}
	if len(thread) == 0 {
		return nil, fmt.Errorf("%w: no message belongs to thread %q", ErrNotFound, id)
	}
	sortByTime(thread)
	return thread, nil
}

// threadIn returns the messages of thread key in one folder of box a:
// through its thread index (see threadNames), or by reading every file
// when the index is off.
func (s *Store) threadIn(a Address, archived bool, key string, in func(*Message) bool) ([]*Message, error) {
	if !s.indexOn() {
		return s.readFolderIf(context.Background(), a, archived, nil, in)
	}
	d, err := s.openFolder(a, archived)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	names, err := s.threadNames(d, a, archived, key)
	if err != nil {
		return nil, err
	}
	// The message whose id is the key belongs too, whatever thread its
	// file now names (a script may have moved it to another): the index
	// files it under that other thread.
	if root := key + ".json"; idProblem(key) == "" && !slices.Contains(names, root) {
		names = append(names, root)
	}
	var msgs []*Message
	s.loadNames(context.Background(), d, a, archived, names, nil, func(name string, m *Message, _ durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		case in(m):
			msgs = append(msgs, m)
		}
	})
	return msgs, nil
}

// boxes returns every folder of messages: the mailboxes, then the queues,
// then the channels.
func (s *Store) boxes() ([]Address, error) {
	agents, err := s.Agents()
	if err != nil {
		return nil, err
	}
	var out []Address
	for _, a := range agents {
		out = append(out, Address{Kind: KindAgent, Name: a})
	}
	for _, kind := range []Kind{KindQueue, KindChannel} {
		names, err := s.names(kind)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out = append(out, Address{Kind: kind, Name: n})
		}
	}
	return out, nil
}
