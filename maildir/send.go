package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// DefaultType is the type of a message sent without one.
const DefaultType = "message"

// maxSuffix bounds the "-2", "-3", … suffixes tried when an id is taken.
const maxSuffix = 10000

// Send delivers m to m.To and one copy to each agent in m.CC, and returns
// the delivered copies with their ID, Agent and Path set.
//
// Every address is checked before anything is written: one bad address
// refuses the whole send. Send fills in what the sender leaves out: Type
// [DefaultType], Priority [Normal], Timestamp now; Read is always false. A
// message without a Thread starts one: every copy gets the id of the first
// copy as its thread. Each copy has its own id.
//
// Each copy is written with [durable.Dir.Create]: a dot-temp in the
// recipient's mailbox, fsync, a rename that never replaces a file, an fsync
// of the mailbox. When Send returns a copy, that copy survives a power cut.
// If a later copy fails, the copies already delivered are returned with the
// error.
func (s *Store) Send(m *Message) ([]*Message, error) {
	c, rcpts, err := s.prepare(m)
	if err != nil {
		return nil, err
	}
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	t := s.stamp(len(rcpts))
	var sent []*Message
	for i, agent := range rcpts {
		msg := *c
		msg.Timestamp = t.Add(time.Duration(i)) // distinct ids for the copies
		if err := s.deliver(r, agent, &msg, c.Thread == ""); err != nil {
			return sent, err
		}
		if i == 0 && c.Thread == "" {
			c.Thread = msg.ID
		}
		sent = append(sent, &msg)
	}
	return sent, nil
}

// prepare checks m and returns the copy to deliver and its recipients.
func (s *Store) prepare(m *Message) (*Message, []string, error) {
	c := *m
	c.ID, c.Agent, c.Path, c.Archived, c.Read = "", "", "", false, false
	if c.From == "" {
		return nil, nil, fmt.Errorf("%w: no sender (set From)", ErrInvalidMessage)
	}
	var err error
	if c.From, err = ParseAgent(c.From); err != nil {
		return nil, nil, err
	}
	if c.To, err = ParseAgent(c.To); err != nil {
		return nil, nil, err
	}
	rcpts := []string{c.To}
	c.CC = nil
	for _, a := range m.CC {
		a, err := ParseAgent(a)
		if err != nil {
			return nil, nil, err
		}
		if !slices.Contains(rcpts, a) {
			rcpts = append(rcpts, a)
			c.CC = append(c.CC, a)
		}
	}
	if c.Type == "" {
		c.Type = DefaultType
	}
	if c.Priority == "" {
		c.Priority = Normal
	}
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	// Refuse an oversized message before the first copy is written; the
	// longest id it could get stands in for the real one.
	probe := c
	probe.Timestamp = s.now()
	probe.Thread = NewID(probe.Timestamp, c.From) + fmt.Sprintf("-%d", maxSuffix)
	if n := len(probe.Encode()); n > MaxSize {
		return nil, nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, n, MaxSize)
	}
	return &c, rcpts, nil
}

// stamp returns a time for n copies that no earlier send through s used:
// ids from one Store never repeat even when the clock does.
func (s *Store) stamp(n int) time.Time {
	t := s.now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.After(s.last) {
		t = s.last.Add(1)
	}
	s.last = t.Add(time.Duration(n - 1))
	return t
}

// deliver writes m into agent's mailbox under a fresh id, never replacing a
// file: when the id is taken it tries id-2, id-3, … .
func (s *Store) deliver(r *durable.Root, agent string, m *Message, ownThread bool) error {
	d, err := r.MkdirAll(mailbox(agent, false))
	if err != nil {
		return err
	}
	defer d.Close()
	base := NewID(m.Timestamp, m.From)
	for n := 1; n <= maxSuffix; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		m.ID = id
		if ownThread {
			m.Thread = id
		}
		data := m.Encode()
		if len(data) > MaxSize {
			return fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), MaxSize)
		}
		err := d.Create(id+".json", data)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		m.Agent, m.Path = agent, d.Join(id+".json")
		return nil
	}
	return fmt.Errorf("no free id after %s-%d in %s", base, maxSuffix, mailbox(agent, false))
}
