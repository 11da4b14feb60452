package maildir

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// DefaultType is the type of a message sent without one.
const DefaultType = "message"

// maxSuffix bounds the "-2", "-3", … suffixes tried when an id is taken.
const maxSuffix = 10000

// fanOut bounds the copies of one message written at once.
const fanOut = 8

// Send delivers m to m.To and to each address in m.CC, and returns the
// delivered copies with their ID, Box and Path set.
//
// An address may be an agent, a group ("@name": one copy per member, the
// sender left out), a work queue ("queue:name": one item for a claimant) or
// a channel ("channel:name": one post, after which the channel's retention
// applies); see [ParseAddress] and [Store.Resolve]. Every address is
// resolved, and groups expanded, before anything is written: one bad
// address refuses the whole send. Each recipient gets one copy, however
// many times it is named.
//
// Send fills in what the sender leaves out: Type [DefaultType], Priority
// [Normal], Timestamp now; Read is always false. A message without a Thread
// starts one: every copy gets the id of the first copy as its thread. Each
// copy has its own id. Every copy records To and CC as written
// (canonically), not expanded.
//
// Each copy is written with [durable.Dir.Create]: a dot-temp in the
// recipient's folder, fsync, a rename that never replaces a file, an fsync
// of the folder. The copies after the first are written concurrently, and
// Send returns only when each is durable. If some copies fail, the others
// are returned with the error.
func (s *Store) Send(m *Message) ([]*Message, error) {
	c, rcpts, err := s.prepare(m)
	if err != nil {
		return nil, err
	}
	return s.sendAt(c, rcpts, s.stamp(len(rcpts)), false)
}

// sendAt delivers the prepared copy c to rcpts, the i-th copy stamped t+i
// nanoseconds, so that its id is NewID(t+i, sender). With again (a send
// being finished after a crash, see [Store.SendOnce]) a copy whose id is
// already taken is the one the first attempt delivered, not a clash.
func (s *Store) sendAt(c *Message, rcpts []Address, t time.Time, again bool) ([]*Message, error) {
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	first := *c
	first.Timestamp = t
	if err := s.deliver(r, rcpts[0], &first, c.Thread == "", again); err != nil {
		return nil, err
	}
	c.Thread = first.Thread
	copies := make([]*Message, len(rcpts))
	errs := make([]error, len(rcpts))
	copies[0] = &first
	var wg sync.WaitGroup
	work := make(chan int)
	for range min(fanOut, len(rcpts)-1) {
		wg.Go(func() {
			for i := range work {
				msg := *c
				msg.Timestamp = t.Add(time.Duration(i)) // distinct ids for the copies
				if errs[i] = s.deliver(r, rcpts[i], &msg, false, again); errs[i] == nil {
					copies[i] = &msg
				}
			}
		})
	}
	for i := 1; i < len(rcpts); i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	var sent []*Message
	for i, m := range copies {
		if m != nil {
			sent = append(sent, m)
			if rcpts[i].Kind == KindChannel {
				if _, err := s.Retain(rcpts[i]); err != nil && !errors.Is(err, ErrNotHome) {
					// (Elsewhere than its home, a post is an add; the home
					// host applies the retention.)
					errs[i] = fmt.Errorf("posted, but applying the retention of %s failed: %w", rcpts[i], err)
				}
			}
		}
	}
	return sent, errors.Join(errs...)
}

// prepare checks m and returns the copy to deliver and its recipients, in
// order, each once.
func (s *Store) prepare(m *Message) (*Message, []Address, error) {
	c := *m
	c.ID, c.Box, c.Path, c.Archived, c.Read, c.Claim = "", Address{}, "", false, false, nil
	if c.From == "" {
		return nil, nil, fmt.Errorf("%w: no sender (set From)", ErrInvalidMessage)
	}
	var err error
	from, err := s.agentOf(c.From)
	if err != nil {
		return nil, nil, err
	}
	c.From = s.written(c.From) // as the sender wrote it; the mailbox is from
	to, err := s.Resolve(c.To)
	if err != nil {
		return nil, nil, err
	}
	c.To = s.writtenAs(m.To, to)
	written := []Address{to}
	c.CC = nil
	for _, cc := range m.CC {
		a, err := s.Resolve(cc)
		if err != nil {
			return nil, nil, err
		}
		if !slices.Contains(written, a) {
			written = append(written, a)
			c.CC = append(c.CC, s.writtenAs(cc, a))
		}
	}
	var rcpts []Address
	for _, a := range written {
		boxes := []Address{a}
		switch a.Kind {
		case KindGroup:
			if boxes, err = s.expand(a.Name, from); err != nil {
				return nil, nil, err
			}
		case KindQueue:
			if err := s.mustExist(a); err != nil {
				return nil, nil, err
			}
		case KindChannel:
			if err := s.mustExist(a); err != nil {
				return nil, nil, err
			}
			// Retention runs after the post: a configuration it cannot read
			// must refuse the post now, or a retry would post it twice.
			if _, err := s.Channel(a.Name); err != nil {
				return nil, nil, err
			}
		}
		for _, b := range boxes {
			if !slices.Contains(rcpts, b) {
				rcpts = append(rcpts, b)
			}
		}
	}
	if len(rcpts) == 0 {
		return nil, nil, fmt.Errorf("%w: the groups named have no members but the sender (@all is every existing mailbox)", ErrNoRecipients)
	}
	c.Type = cmp.Or(c.Type, DefaultType)
	c.Priority = cmp.Or(c.Priority, Normal)
	if err := c.check(); err != nil {
		return nil, nil, err
	}
	// Refuse an oversized message before the first copy is written; the
	// longest id it could get stands in for the real one.
	probe := c
	probe.Timestamp = s.now()
	probe.Thread = NewID(probe.Timestamp, from) + fmt.Sprintf("-%d", maxSuffix)
	if n := len(probe.Encode()); n > MaxSize-EditRoom {
		return nil, nil, fmt.Errorf("%w: its file would be %d bytes, the limit is %d (%d, less %d kept for marking and claiming it)", ErrTooLarge, n, MaxSize-EditRoom, MaxSize, EditRoom)
	}
	return &c, rcpts, nil
}

// writtenAs is how a message records address s, which resolved to a: an
// agent as written (folded), anything else in its canonical written form,
// so a bare name that meant a group reads "@name" in the file.
func (s *Store) writtenAs(addr string, a Address) string {
	if a.Kind == KindAgent {
		return s.written(addr)
	}
	return a.String()
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

// deliver writes m into box b under a fresh id, never replacing a file:
// when the id is taken it tries id-2, id-3, …. With ownThread, the message
// starts its own thread. With again, a taken id is this message already
// delivered (see [Store.sendAt]): nothing is written.
func (s *Store) deliver(r *durable.Root, b Address, m *Message, ownThread, again bool) error {
	d, err := r.MkdirAll(b.Dir(false))
	if err != nil {
		return err
	}
	defer d.Close()
	if b.Kind == KindQueue {
		// Claims keep a cursor that an add must never slip past: hold
		// the claim lock, shared with other senders (see folderindex.ClaimWindow).
		unlock, err := s.lockQueues(true)
		if err != nil {
			return err
		}
		defer unlock()
	}
	from, err := s.agentOf(m.From) // ids carry the sender's mailbox name
	if err != nil {
		return err
	}
	base := NewID(m.Timestamp, from)
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
		if again && archivedAs(d, id+".json") {
			m.Box, m.Path = b, d.Join(ArchiveDir+"/"+id+".json")
			return nil // delivered, and archived since
		}
		if again && b.Kind == KindQueue {
			if done, err := s.claimedSince(m, b, id); done || err != nil {
				return err
			}
		}
		err := s.createNoted(d, b, id+".json", data)
		if errors.Is(err, fs.ErrExist) && again {
			err = nil // delivered by the attempt being finished
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		m.Box, m.Path = b, d.Join(id+".json")
		return nil
	}
	return fmt.Errorf("no free id after %s-%d in %s", base, maxSuffix, b.Dir(false))
}

// claimedSince reports whether the queue item id, sent by the attempt
// being finished, has left its queue since: claimed into a mailbox (and
// perhaps archived there), so it was delivered and must not be queued
// again. It sets m's place to where it is. The caller holds the queues'
// lock, which claims take: no claim is half done.
func (s *Store) claimedSince(m *Message, q Address, id string) (bool, error) {
	got, err := s.find(id, false)
	var amb *AmbiguousError
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case errors.As(err, &amb):
		m.Box, m.Path = q, q.Dir(false)+"/"+id+".json"
		return true, nil // in two places (a move cut short): delivered all the same
	case err != nil:
		return false, err
	}
	if got.Box == q && !got.Archived {
		return false, nil // still waiting: the create below finds it
	}
	m.Box, m.Path, m.Archived = got.Box, got.Path, got.Archived
	return true, nil
}

// noteFromSize is the size of a mailbox's directory (as stat(2) gives it: on
// ext4 about 4 KiB for each 70 names) from which a send notes what it
// added for readers to follow (see createNoted); smaller folders are
// listed instead, which costs less than the note.
const noteFromSize = 32 << 10

// createNoted writes a new message file into folder d of box b, as
// durable Create does, and, for an agent's mailbox with the index on, notes
// the add in the folder's adds log (folderindex.NoteAdd) when the create's
// witness saw nothing else happen to the folder (durable.CreateWitnessed):
// the next reader then learns of the new file without listing the folder.
func (s *Store) createNoted(d *durable.Dir, b Address, name string, data []byte) error {
	if b.Kind != KindAgent || !s.indexOn() {
		return d.Create(name, data)
	}
	// A witness costs a send about 0.2 ms (most of it the thread the Go
	// runtime starts the first time a goroutine is locked to its thread);
	// a listing costs a reader about 0.4 µs a file. Below noteFromSize bytes
	// of directory (some hundreds of files) the listing is the cheaper.
	from := s.noteFrom
	from = cmp.Or(from, noteFromSize)
	if st, err := d.Stat(); err != nil || st.Size < from {
		return d.Create(name, data)
	}
	w, err := d.CreateWitnessed(name, data, s.wit.Count(s.indexDir))
	// The note's second stamp must be settled when taken (at once on a
	// fine clock): on a coarse one a change in the same tick after it
	// would leave the folder's stamp as the note says.
	if err == nil && w.Alone && !s.rules(false).DirRacy(w.After, s.now()) {
		folderindex.NoteAdd(s.rules(false), d.Path(), folderindex.Add{Before: folderindex.StampOf(w.Before), After: folderindex.StampOf(w.After), Name: name})
	}
	return err
}

// archivedAs reports whether name is in d's archive.
func archivedAs(d *durable.Dir, name string) bool {
	a, err := d.Sub(ArchiveDir)
	if err != nil {
		return false
	}
	defer a.Close()
	_, err = a.Lstat(name)
	return err == nil
}
