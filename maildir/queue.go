package maildir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

var (
	// ErrQueueEmpty is returned by [Store.Claim] when no item waits in a
	// queue that exists: the "nothing there" answer, not a failure.
	ErrQueueEmpty = errors.New("maildir: queue empty")

	// ErrNotClaimed is returned by [Store.Release] for a message that no
	// claim moved out of a work queue (it has no claim record): a copy that
	// was sent to the agent directly, or by CC, is not the queue's to take
	// back.
	ErrNotClaimed = errors.New("maildir: not a claimed work-queue item")

	// ErrUnfinishedMove is reported (to [Store.Warn]) for a queue item that
	// has a second name elsewhere: a move by link and unlink, on a file
	// system without renameat2's flags, that a crash cut short. Claim does
	// not hand it out; "mailfs fsck --repair" finishes the move. It is
	// also returned by a mark (and every rewrite) of a claimed item still
	// under two names: rewriting one would leave the other as an older
	// copy with the same id waiting in its queue again, so nothing is
	// written until the move is finished.
	ErrUnfinishedMove = errors.New("maildir: an interrupted move left this file under two names")

	// ErrUnclaimable is reported (to [Store.Warn] by a claim that passes
	// over it, and by [Claimable]) for a queue item that fits the size
	// limit as it waits but would not with the claim record a claim writes
	// into it: no claim can ever take it.
	ErrUnclaimable = errors.New("maildir: no claim can take this item: with a claim record it would be over the size limit")
)

// Claimable reports whether a claim could take the waiting item of queue
// q whose file holds data: nil, or an error wrapping [ErrUnclaimable]
// that gives the sizes (or the parse error of a file that is no message).
// It tries the smallest claim record there can be (a one-letter agent, a
// whole second, no request), so an item it refuses is refused by every
// claim.
func Claimable(q Address, data []byte) error {
	_, fields, err := decode(data)
	if err != nil {
		return err
	}
	c := &Claim{Queue: q.String(), Agent: "a", At: time.Unix(0, 0)}
	fields = setField(setField(fields, "claim", c.raw()), "read", marshalValue(false))
	if _, err := encodeFitting(fields); err != nil {
		return fmt.Errorf("%w (%d bytes as it waits, the limit is %d); split it, or send the body as a file the message names", ErrUnclaimable, len(data), MaxSize)
	}
	return nil
}

// CreateQueue creates the work queue name (with or without "queue:"). It
// is idempotent. A name that an agent's mailbox, a group or a channel
// already has is refused with [ErrNameTaken]: a bare name must keep
// meaning one thing.
func (s *Store) CreateQueue(name string) error {
	name, err := parseName(KindQueue, name)
	if err != nil {
		return err
	}
	if err := s.taken(KindQueue, name); err != nil {
		return err
	}
	d, err := s.mkdir(QueueDir + "/" + name)
	if err != nil {
		return err
	}
	d.Close()
	return s.homeHere(Address{Kind: KindQueue, Name: name})
}

// claimPick is how many of the oldest names one pass over a queue keeps.
const claimPick = 16

// Claim moves the oldest item waiting in the work queue into agent's
// mailbox, records the claim in it ([Message.Claim]) and returns it there.
// Oldest is by arrival on this host, the queue's home (see [ArrivalDir]):
// the arrival its sync noted, else the stamp of the item's name.
//
// Claims of all queues are serialised by a lock on the queues' folder,
// state/queue, which the kernel drops when a claimant dies. Under it the
// item is first rewritten in place with its claim record and read false,
// then moved by one rename that never replaces a file. Among any number of
// concurrent claimants each item goes to exactly one. A claimant killed at
// any point leaves the item in the queue (waiting: a claim record left on
// an item in a queue is history, and the next claim writes its own) or in
// its mailbox with its record, never in neither and never in both. Both
// folders are fsynced before Claim returns.
//
// An item that also has a name elsewhere (a link-and-unlink move cut short
// on a file system without renameat2's flags) is not handed out: it is
// reported to Warn with [ErrUnfinishedMove] for fsck to finish. A queue
// that does not exist gives [ErrNoQueue]; an empty one [ErrQueueEmpty].
func (s *Store) Claim(q, a Address) (*Message, error) { return s.claim(q, a, "") }

// Held returns the oldest unread item in agent a's mailbox that a claim of
// queue q for a brought — on this host or, by a claim request, on the
// queue's home — or nil: work a claim handed to the agent that it has not
// yet marked done. A worker killed between its claim and reading the
// item's id finds it here, so a retried claim hands it back rather than
// taking a second item (the claim command does so on every host). It only
// reads, so any host may call it.
func (s *Store) Held(q, a Address) (*Message, error) {
	if q.Kind != KindQueue || a.Kind != KindAgent {
		return nil, fmt.Errorf("%w: an agent holds items claimed from a work queue", ErrWrongKind)
	}
	msgs, err := s.List(a, ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if held(m, q, a) {
			return m, nil
		}
	}
	return nil, nil
}

// held reports whether m, in a's mailbox, is an item a claim of q for a
// brought that is not yet done (read).
func held(m *Message, q, a Address) bool {
	return !m.Read && m.Claim != nil && m.Claim.Queue == q.String() && m.Claim.Agent == a.Name
}

// claim is Claim, recording the claim request it serves, if any.
func (s *Store) claim(q, a Address, request string) (*Message, error) {
	if q.Kind != KindQueue {
		return nil, fmt.Errorf("%w: %s is %s; claim from a work queue, queue:NAME", ErrWrongKind, q, article(q.Kind))
	}
	if a.Kind != KindAgent {
		return nil, fmt.Errorf("%w: %s is %s; a claim goes into an agent's mailbox", ErrWrongKind, a, article(a.Kind))
	}
	if err := s.check(a); err != nil {
		return nil, err
	}
	if !ValidAgent(q.Name) {
		return nil, &NameError{Kind: q.Kind, Name: q.Name, Why: "not a canonical name"}
	}
	if err := s.MayChange(q); err != nil {
		return nil, err
	}
	src, done, err := s.lockQueue(q)
	if err != nil {
		return nil, err
	}
	defer done()
	if request != "" {
		// A request withdrawn since the serve listed it gets nothing.
		if waits, err := s.requestWaits(q, request); err != nil || !waits {
			if err == nil {
				err = errWithdrawn
			}
			return nil, err
		}
	}
	// Otherwise stamped names sort oldest first. A claim needs the oldest item that
	// can be had, not the whole sorted queue: the cursor (see folderindex.ClaimWindow)
	// or one pass that keeps the claimPick smallest names, and only if
	// none of them can be had the next ones.
	tried := map[string]bool{}
	var dst *durable.Dir
	defer func() {
		if dst != nil {
			dst.Close()
		}
	}()
	// Items that came from other hosts go by their arrival here (see
	// ArrivalDir): the whole queue in that order.
	noted, err := s.arrivals(q)
	if err != nil {
		return nil, err
	}
	if len(noted) > 0 {
		names, err := arrivalOrder(src, noted, tried)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			tried[name] = true
			m, err := s.takeItem(src, &dst, q, name, a, request)
			if errors.Is(err, errPassOver) {
				continue
			}
			return m, err
		}
		return nil, fmt.Errorf("%w: nothing waits in %s", ErrQueueEmpty, q)
	}
	var rules *folderindex.Rules
	if s.indexOn() {
		rules = s.rules(false)
	}
	from, err := folderindex.NewClaims(src, rules, claimPick, tried)
	if err != nil {
		return nil, err
	}
	for {
		names, last, err := from.Batch()
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			break
		}
		for _, name := range names {
			from.Consume(name)
			tried[name] = true
			m, err := s.takeItem(src, &dst, q, name, a, request)
			if errors.Is(err, errPassOver) {
				continue
			}
			if err != nil {
				return nil, err
			}
			from.Done()
			return m, nil
		}
		if last {
			break // that pass saw every name left
		}
	}
	return nil, fmt.Errorf("%w: nothing waits in %s", ErrQueueEmpty, q)
}

// A claimStep is what a claim does with one waiting item, given what it
// found at one step of taking it: go on to the next step, pass over the
// item (saying why, when warn is set), or stop the claim with an error.
type claimStep struct {
	next bool
	warn error // the item is passed over, and this is reported
	fail bool  // the claim stops with the error it met
}

// errPassOver is takeItem's answer for an item the claim passes over.
var errPassOver = errors.New("maildir: passed over")

// Decisions: what each step of taking an item found, and what the claim
// does about it. They look at nothing but what they are given (no I/O),
// so a table tests them (TestClaimSteps).

// beforeStamp decides on an item from its lstat: only a regular file
// under one name is taken; one deleted since the listing, or that is no
// file, is passed over in silence; one with a second name elsewhere (a
// link-and-unlink move cut short) is passed over and reported.
func beforeStamp(st durable.Stat, err error) claimStep {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return claimStep{}
	case err != nil:
		return claimStep{fail: true}
	case !st.Mode.IsRegular():
		return claimStep{}
	case st.Nlink > 1:
		return claimStep{warn: ErrUnfinishedMove}
	}
	return claimStep{next: true}
}

// afterStamp decides on an item from its rewrite with the claim record:
// deleted or rewritten under the claim, it is not this one; a set-aside
// copy in the way, an item too large for its record, a file that is no
// message are passed over and reported; anything else stops the claim.
func afterStamp(err error, name string) claimStep {
	switch {
	case err == nil:
		return claimStep{next: true}
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, durable.ErrChanged):
		return claimStep{}
	case errors.Is(err, fs.ErrExist):
		// A file system without renameat2's flags, and a rewrite of this
		// item cut short: its set-aside copy is in the way. fsck
		// --repair puts it right.
		return claimStep{warn: fmt.Errorf("%w (%s%s is in the way: mailfs fsck --repair)", ErrUnfinishedMove, durable.SwapPrefix, name)}
	case errors.Is(err, ErrTooLarge):
		return claimStep{warn: fmt.Errorf("passed over: %w (%v)", ErrUnclaimable, Reason(err))}
	case isFileError(err):
		return claimStep{warn: Reason(err)}
	}
	return claimStep{fail: true}
}

// afterMove decides on an item from its move into the claimant's
// mailbox: removed since its record was written (a script's rm), it is
// not this one; a message of that id already in the mailbox leaves the
// item waiting, reported; anything else stops the claim.
func afterMove(err error) claimStep {
	switch {
	case err == nil:
		return claimStep{next: true}
	case errors.Is(err, fs.ErrNotExist):
		return claimStep{}
	case errors.Is(err, fs.ErrExist):
		return claimStep{warn: ErrClash}
	}
	return claimStep{fail: true}
}

// takeItem acts: it takes item name of queue q (folder src) for agent a —
// looks at it, writes its claim record, moves it into a's mailbox (dst,
// opened on the first move) and syncs both folders — deciding at each
// step with the functions above. An item passed over gives errPassOver
// (after reporting why, if it says); the claim's lock is held throughout.
func (s *Store) takeItem(src *durable.Dir, dst **durable.Dir, q Address, name string, a Address, request string) (*Message, error) {
	pass := func(step claimStep, err error) error {
		if step.fail {
			return err
		}
		if step.warn != nil {
			s.warn(src.Join(name), step.warn)
		}
		return errPassOver
	}
	st, err := src.Lstat(name)
	if step := beforeStamp(st, err); !step.next {
		return nil, pass(step, err)
	}
	m, err := s.stampClaim(src, q, name, a, request)
	if step := afterStamp(err, name); !step.next {
		return nil, pass(step, err)
	}
	if *dst == nil {
		r, err := s.open(true)
		if err != nil {
			return nil, err
		}
		if *dst, err = r.MkdirAll(a.Dir(false)); err != nil {
			return nil, err
		}
	}
	err = src.Move(name, *dst, name)
	if step := afterMove(err); !step.next {
		if step.warn != nil {
			step.warn = fmt.Errorf("%w: %s", step.warn, (*dst).Join(name))
		}
		return nil, pass(step, err)
	}
	if err := syncBoth(src, *dst); err != nil {
		return nil, err
	}
	m.Box, m.Path = a, (*dst).Join(name)
	return m, nil
}

// isFileError reports whether err is about one file's content (not a
// message, too large), which a reader skips, rather than about the store.
func isFileError(err error) bool {
	return errors.Is(err, ErrInvalidMessage) || errors.Is(err, ErrTooLarge) || errors.Is(err, durable.ErrNotRegular)
}

// openQueue opens the queues' folder and queue q's folder in it, or
// returns an error wrapping [ErrNoQueue].
func (s *Store) openQueue(q Address) (parent, d *durable.Dir, err error) {
	parent, err = s.root.Dir(QueueDir)
	if parent == nil && err == nil && s.homed(q) {
		return s.makeQueue(q)
	}
	if parent == nil {
		if err == nil {
			err = s.mustExist(q)
		}
		return nil, nil, err
	}
	d, err = parent.Sub(q.Name)
	if errors.Is(err, fs.ErrNotExist) && s.homed(q) {
		parent.Close()
		return s.makeQueue(q)
	}
	if err != nil {
		parent.Close()
		if errors.Is(err, fs.ErrNotExist) {
			err = s.mustExist(q)
		}
		return nil, nil, err
	}
	return parent, d, nil
}

// lockQueue opens queue q's folder (as openQueue does) and takes the
// claimants' lock on the queues' folder, which every verb that moves or
// rewrites a queue's items holds while it decides and acts; done releases
// the lock and closes both.
func (s *Store) lockQueue(q Address) (d *durable.Dir, done func(), err error) {
	parent, d, err := s.openQueue(q)
	if err != nil {
		return nil, nil, err
	}
	unlock, err := parent.Lock()
	if err != nil {
		d.Close()
		parent.Close()
		return nil, nil, err
	}
	return d, func() { unlock(); d.Close(); parent.Close() }, nil
}

// makeQueue makes the folder of an empty queue that came through git,
// which keeps no empty folders (its home record says it exists), and
// opens it as openQueue does.
func (s *Store) makeQueue(q Address) (parent, d *durable.Dir, err error) {
	if d, err = s.mkdir(q.Dir(false)); err != nil {
		return nil, nil, err
	}
	d.Close()
	return s.openQueue(q)
}

// stampClaim rewrites item name in queue folder d with agent's claim record
// and read false, and returns it as it now is.
func (s *Store) stampClaim(d *durable.Dir, q Address, name string, agent Address, request string) (*Message, error) {
	c := &Claim{Queue: q.String(), Agent: agent.Name, At: s.now().UTC(), Request: request}
	return s.rewrite(d, q, false, name, func(m *Message, fields []field) []field {
		m.Claim, m.Read = c, false
		fields = setField(fields, "claim", c.raw())
		return setField(fields, "read", marshalValue(false))
	})
}

// Release moves message id, which [Store.Claim] moved into agent's mailbox,
// back to the queue it came from, waiting and unread for the next claimant,
// and returns it there. Only an item with a claim record can be released:
// anything else gives [ErrNotClaimed]. A queue that no longer exists gives
// [ErrNoQueue]. id is resolved as [Store.Get] does (the archive included).
//
// Under the lock that claims take, the item moves by one rename that never
// replaces a file; then, in the queue, its claim record is dropped and read
// set false. No claimant can see the item between the two, and a release
// killed at any point leaves it either still claimed (in the mailbox, as it
// was) or waiting in the queue: an item in a queue always counts as
// waiting, and the next claim rewrites what a cut-short release left.
//
// In a town on several hosts the release runs on the agent's home host.
// Where that is not the queue's home, the item goes back as an add to the
// queue (unclaimed, unread), then leaves the mailbox; a crash between the
// two leaves it in both, which fsck reports as a duplicate of two files.
func (s *Store) Release(a Address, id string) (*Message, error) {
	return s.ReleaseSeen(a, id, Seen{Done: true})
}

// ReleaseSeen is [Store.Release] of an item as the caller saw it: it
// refuses with a [*StaleError] when the item is no longer so (marked done
// by its claimant, unless seen.Done; claimed again, when seen.At is set).
// The item is checked before it moves and again in the queue, under the
// claimants' lock; a mark read that lands between the two is seen there,
// and the item goes back to the mailbox as it was.
func (s *Store) ReleaseSeen(a Address, id string, seen Seen) (*Message, error) {
	if a.Kind != KindAgent {
		return nil, fmt.Errorf("%w: %s is %s; release from the mailbox that claimed the item", ErrWrongKind, a, article(a.Kind))
	}
	if err := s.check(a); err != nil {
		return nil, err
	}
	if err := s.MayChange(a); err != nil {
		return nil, err
	}
	d, name, archived, q, err := s.claimedItem(a, id, "released", seen)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	err = s.MayChange(q) // the release rewrites the item in the queue
	// Off the queue's home (on the agent's, which may change its mailbox:
	// checked above), a claimed item goes back as an add to the queue,
	// which any host may make, then leaves the mailbox: the home finds it
	// waiting again after the syncs. That holds for an item a claim
	// request brought and for one the queue's home claimed for this
	// host's agent alike; the queue's home, which may not change this
	// agent's mailbox, is refused above, with the agent's home named.
	var nh *NotHomeError
	back := errors.As(err, &nh)
	if err != nil && !back {
		return nil, err
	}
	dst, done, err := s.lockQueue(q)
	if err != nil {
		return nil, err
	}
	defer done()
	if back {
		return s.giveBack(d, a, archived, name, dst, q, seen)
	}
	if err := d.Move(name, dst, name); err != nil {
		switch {
		case errors.Is(err, fs.ErrExist):
			return nil, &fs.PathError{Op: "release", Path: d.Join(name), Err: fmt.Errorf("%w: %s", ErrClash, dst.Join(name))}
		case errors.Is(err, fs.ErrNotExist):
			return nil, notFound(a, id) // moved or deleted meanwhile
		}
		return nil, err
	}
	if err := syncBoth(d, dst); err != nil {
		return nil, err
	}
	if err := s.recheck(dst, q, name, seen, d); err != nil {
		return nil, err
	}
	return s.rewrite(dst, q, false, name, unclaim)
}

// recheck checks, once the item name has moved into queue folder qd, that
// it is still as seen; if not, it moves it back to folder home, where it
// was, and returns why. Nothing to check (seen accepts anything) reads
// nothing.
func (s *Store) recheck(qd *durable.Dir, q Address, name string, seen Seen, home *durable.Dir) error {
	if seen.acceptsAll() {
		return nil
	}
	m, err := s.load(qd, q, false, name)
	if err == nil {
		err = seen.check(m)
	}
	if err == nil {
		return nil
	}
	if merr := qd.Move(name, home, name); merr != nil {
		return errors.Join(err, merr)
	}
	return errors.Join(err, syncBoth(qd, home))
}

// claimedItem finds message id in agent a's mailbox (or its archive) and
// the queue its claim record names: the folder (open: the caller closes
// it), the file's name, whether it is archived, and the queue. A message
// no claim brought is [ErrNotClaimed], saying it cannot be done (as
// "released", "reassigned").
func (s *Store) claimedItem(a Address, id, done string, seen Seen) (d *durable.Dir, name string, archived bool, q Address, err error) {
	d, name, archived, err = s.locate(a, id)
	if err != nil {
		return nil, "", false, q, err
	}
	m, err := s.load(d, a, archived, name)
	switch {
	case err != nil:
	case m.Claim == nil:
		err = fmt.Errorf("%w: %s was delivered to %s, not claimed from a queue (only what a claim took can be %s)", ErrNotClaimed, m.ID, a, done)
	default:
		q, err = ParseAddress(m.Claim.Queue)
		if err == nil && q.Kind != KindQueue {
			err = fmt.Errorf("%w: %s has a claim record naming %q, which is not a queue", ErrInvalidMessage, m.Path, m.Claim.Queue)
		}
		if err == nil {
			err = seen.check(m)
		}
	}
	if err != nil {
		d.Close()
		return nil, "", false, q, err
	}
	return d, name, archived, q, nil
}

// ErrSameClaimant is returned by [Store.Reassign] for an item already
// claimed by the agent it names.
var ErrSameClaimant = errors.New("maildir: the item is already that agent's")

// Reassign moves message id, which [Store.Claim] moved into agent from's
// mailbox, to agent to's mailbox with a claim record of to's (its queue's,
// the time now), unread, and returns it there: what a release followed by
// to's claim of that very item would do, with no claimant able to take it
// between the two. The rules are Release's: only an item with a claim
// record, resolved as [Store.Get] does; and the claim record is the one
// every claim writes.
//
// Under the lock that claims take, the item moves back into its queue by a
// rename that never replaces a file, is rewritten there with to's claim
// record, then moves into to's mailbox by a second such rename; both
// folders are fsynced after each move. Killed at any point, it is in from's
// mailbox (claimed by from, as it was), in its queue (waiting: a claim
// record on an item in a queue is history), or in to's mailbox claimed by
// to: never in two places, never in none.
//
// A reassign runs on the queue's home host and changes both mailboxes, so
// all three must be this host's to change ([NotHomeError] otherwise).
func (s *Store) Reassign(from Address, id string, to Address) (*Message, error) {
	return s.ReassignSeen(from, id, to, Seen{Done: true})
}

// ReassignSeen is [Store.Reassign] of an item as the caller saw it, as
// [Store.ReleaseSeen] is of a release: a [*StaleError] when it changed.
func (s *Store) ReassignSeen(from Address, id string, to Address, seen Seen) (*Message, error) {
	if from.Kind != KindAgent || to.Kind != KindAgent {
		return nil, fmt.Errorf("%w: a reassign moves a claimed item from one agent's mailbox to another's", ErrWrongKind)
	}
	if from == to {
		return nil, fmt.Errorf("%w: %s", ErrSameClaimant, from)
	}
	for _, a := range []Address{from, to} {
		if err := s.check(a); err != nil {
			return nil, err
		}
		if err := s.MayChange(a); err != nil {
			return nil, err
		}
	}
	d, name, _, q, err := s.claimedItem(from, id, "reassigned", seen)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := s.MayChange(q); err != nil {
		return nil, err
	}
	qd, done, err := s.lockQueue(q)
	if err != nil {
		return nil, err
	}
	defer done()
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	dst, err := r.MkdirAll(to.Dir(false))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	if _, err := dst.Lstat(name); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrClash, dst.Join(name))
	}
	if err := d.Move(name, qd, name); err != nil {
		switch {
		case errors.Is(err, fs.ErrExist):
			return nil, &fs.PathError{Op: "reassign", Path: d.Join(name), Err: fmt.Errorf("%w: %s", ErrClash, qd.Join(name))}
		case errors.Is(err, fs.ErrNotExist):
			return nil, notFound(from, id) // moved or deleted meanwhile
		}
		return nil, err
	}
	if err := syncBoth(d, qd); err != nil {
		return nil, err
	}
	if err := s.recheck(qd, q, name, seen, d); err != nil {
		return nil, err
	}
	m, err := s.stampClaim(qd, q, name, to, "")
	if err != nil {
		return nil, err // waiting in the queue: the next claim takes it
	}
	if err := qd.Move(name, dst, name); err != nil {
		return nil, err // waiting in the queue, as above
	}
	if err := syncBoth(qd, dst); err != nil {
		return nil, err
	}
	m.Box, m.Path = to, dst.Join(name)
	return m, nil
}

// giveBack puts item name of mailbox a (folder d) back into queue q
// (folder dst) on a host that is not q's home: written there waiting,
// without its claim record and unread, then removed from the mailbox. A
// stop between the two leaves it in both, which fsck reports; never in
// neither.
func (s *Store) giveBack(d *durable.Dir, a Address, archived bool, name string, dst *durable.Dir, q Address, seen Seen) (*Message, error) {
	m, fields, _, err := s.loadFields(d, a, archived, name)
	if err != nil {
		return nil, err
	}
	if err := seen.check(m); err != nil {
		return nil, err
	}
	data, err := encodeFitting(unclaim(m, fields))
	if err != nil {
		return nil, err
	}
	if err := dst.Create(name, data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, &fs.PathError{Op: "release", Path: d.Join(name), Err: fmt.Errorf("%w: %s", ErrClash, dst.Join(name))}
		}
		return nil, err
	}
	if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := syncBoth(d, dst); err != nil {
		return nil, err
	}
	return s.load(dst, q, false, name)
}

// Settle puts item id of queue (waiting there) back into the waiting
// state, without its claim record and with read false, as a release does
// after its move. It is the repair for what a claim or release killed
// part-way leaves (an item in a queue always counts as waiting, so this
// changes what the file says, not what it means). It holds the claimants'
// lock, so it never touches an item a live claim is moving.
func (s *Store) Settle(q Address, id string) error {
	if q.Kind != KindQueue {
		return fmt.Errorf("%w: %s is %s, not a queue", ErrWrongKind, q, article(q.Kind))
	}
	if err := s.check(q); err != nil {
		return err
	}
	if err := s.MayChange(q); err != nil {
		return err
	}
	id, err := ParseID(id)
	if err != nil {
		return err
	}
	d, done, err := s.lockQueue(q)
	if err != nil {
		return err
	}
	defer done()
	_, err = s.rewrite(d, q, false, id+".json", unclaim)
	return err
}

// unclaim is the edit that makes a queue item wait again.
func unclaim(m *Message, fields []field) []field {
	m.Claim, m.Read = nil, false
	fields = slices.DeleteFunc(slices.Clone(fields), func(f field) bool { return f.Key == "claim" })
	return setField(fields, "read", marshalValue(false))
}

// rewrite reads message name in folder d of box b, lets edit change its
// fields (and the parsed message to match; nil means no change), and swaps the result in with
// [durable.Dir.Exchange]: atomically, keeping every other value byte for
// byte, and failing with [durable.ErrChanged] or an error matching
// [fs.ErrNotExist] if the file changed or went meanwhile. A rewrite that
// changes no byte writes nothing.
func (s *Store) rewrite(d *durable.Dir, b Address, archived bool, name string, edit func(*Message, []field) []field) (*Message, error) {
	m, fields, data, err := s.loadFields(d, b, archived, name)
	if err != nil {
		return nil, err
	}
	edited := edit(m, fields)
	if edited == nil {
		return m, nil // edit says nothing changes
	}
	updated, err := encodeFitting(edited)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Join(name), err)
	}
	if bytes.Equal(updated, data) {
		return m, nil
	}
	if err := cutClaim(d, name, m); err != nil {
		return nil, err
	}
	same := func(old []byte) bool { return bytes.Equal(old, data) }
	if err := d.Exchange(name, updated, same); err != nil {
		return nil, err
	}
	return m, nil
}

// cutClaim refuses the rewrite of a claimed item that is still under two
// names (a claim cut between its link and its unlink, on the rename
// fallback): rewriting one would leave the other, in the queue, an older
// copy the next claim hands out again. A move in progress out of d (the
// fallback holds d's lock from its link to its unlink) is waited for
// first, and is then no cut: the rewrite looks again (ErrChanged).
func cutClaim(d *durable.Dir, name string, m *Message) error {
	st, err := d.Lstat(name)
	if err != nil || st.Nlink < 2 || m.Claim == nil {
		return nil
	}
	if unlock, err := d.Lock(); err == nil {
		unlock()
	}
	now, err := d.Lstat(name)
	if err != nil || !durable.Same(now, st) || now.Nlink < 2 {
		return &fs.PathError{Op: "rewrite", Path: d.Join(name), Err: durable.ErrChanged}
	}
	return &fs.PathError{Op: "rewrite", Path: d.Join(name), Err: fmt.Errorf("%w (mailfs fsck --repair finishes the move)", ErrUnfinishedMove)}
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
	if err != nil {
		return nil, err
	}
	var names []string
	if d != nil {
		defer d.Close()
		err = d.Each(func(e fs.DirEntry) {
			if n := e.Name(); e.IsDir() && !strings.HasPrefix(n, ".") && ValidAgent(n) {
				names = append(names, n)
			}
		})
	}
	if kind == KindQueue {
		// Empty queues that came through git exist by their home record.
		homed, _ := s.homedNames(KindQueue)
		for _, n := range homed {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names, err
}

// LockQueues takes the lock that claims take, for a writer outside the
// store that adds items to queues behind its back — mailfs sync while git
// writes the tree — so that no add slips between a claim's move and its
// reading of the queue's stamp (see [folderindex.ClaimWindow]). It returns the function
// that releases it; with no queues yet it holds nothing.
func (s *Store) LockQueues() (unlock func(), err error) { return s.lockQueues(false) }

// lockQueues takes the claim lock on the queues' folder: shared (senders,
// restores) or exclusive.
func (s *Store) lockQueues(shared bool) (func(), error) {
	d, err := s.root.Dir(QueueDir)
	if d == nil || err != nil {
		return func() {}, err
	}
	var unlock func()
	if shared {
		unlock, err = d.LockShared()
	} else {
		unlock, err = d.Lock()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return func() { unlock(); d.Close() }, nil
}
