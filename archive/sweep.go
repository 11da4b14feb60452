package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// DefaultAge is the cut-off used when [Sweeper.OlderThan] is zero.
const DefaultAge = 24 * time.Hour

// A Sweeper moves old messages into their mailbox's archive folder. Its
// zero value, given a Store, sweeps with the defaults. A Sweeper may be used
// by several goroutines at once.
type Sweeper struct {
	Store *maildir.Store

	// OlderThan is the cut-off: messages older than this move (one exactly
	// this old stays). Zero means DefaultAge; a negative value is an error.
	OlderThan time.Duration

	// IncludeUnread makes the sweep strict: unread messages past the
	// cut-off move too. By default they stay in the mailbox, however old:
	// unread mail is the agent's work, and a sweep must never take it out
	// of inbox, check and wait. [Report.Kept] counts them, so a neglected
	// mailbox is visible.
	IncludeUnread bool

	// DryRun reports what would move without moving anything.
	DryRun bool

	// Now returns the current time. Nil means time.Now.
	Now func() time.Time

	// afterBatch, if set (by a test), is told after each batch of moves
	// is durable, with how many the sweep has moved so far.
	afterBatch func(moved int)
}

// A Report says what one sweep did.
type Report struct {
	Time      time.Time // when the sweep started
	Mailboxes int       // mailboxes swept
	DryRun    bool      // nothing was moved: Moved is what would have been
	Moved     []Moved   // messages moved into their archive folder
	Kept      int       // old enough, but unread (and IncludeUnread not set): left for the agent
	Skipped   []*Skip   // entries left where they are, with the reason
	Failed    []*Failed // mailboxes that could not be swept
	// Elsewhere lists the mailboxes and channels a full sweep passed over
	// because another host is their home (SPEC §10): only the home host
	// moves an object's files.
	Elsewhere []maildir.Address
	// PrunedKeys is how many records of keyed sends a full sweep removed,
	// past their window (see [maildir.Store.PruneOnce]).
	PrunedKeys int
}

// Moved is a message a sweep moved.
type Moved struct {
	Box maildir.Address `json:"agent"` // the mailbox, or the channel
	ID  string          `json:"id"`
}

// A Skip is an entry a sweep left in place: a file that is not a message,
// one whose age could not be told, or one that clashes with an archived
// message of the same id (Err wraps [maildir.ErrClash]).
type Skip struct {
	Path string // relative to the root
	Err  error
}

func (s *Skip) Error() string { return "kept " + s.Path + ": " + s.Err.Error() }
func (s *Skip) Unwrap() error { return s.Err }

// Failed is a mailbox a sweep could not sweep, such as one whose archive
// is a file rather than a folder. Other mailboxes are swept regardless.
type Failed struct {
	Box maildir.Address // the mailbox, or the channel
	Err error
}

func (f *Failed) Error() string {
	what := "mailbox"
	if f.Box.Kind != maildir.KindAgent {
		what = f.Box.Kind.String()
	}
	return what + " " + f.Box.Name + ": " + f.Err.Error()
}
func (f *Failed) Unwrap() error { return f.Err }

// ErrBadAge is returned for a negative cut-off.
var ErrBadAge = errors.New("archive: the age to archive after must be positive")

// Sweep sweeps the mailboxes of agents, or every mailbox when none is
// given. It returns the report and, if any mailbox failed, an error joining
// the failures; it stops early, returning ctx.Err(), when ctx ends.
func (sw *Sweeper) Sweep(ctx context.Context, agents ...string) (*Report, error) {
	cutoff := sw.OlderThan
	switch {
	case cutoff == 0:
		cutoff = DefaultAge
	case cutoff < 0:
		return nil, fmt.Errorf("%w: %v", ErrBadAge, cutoff)
	}
	now := time.Now
	if sw.Now != nil {
		now = sw.Now
	}
	rep := &Report{Time: now(), DryRun: sw.DryRun}
	// A full sweep (no agents named) also applies the channels' retention;
	// decide that before the list of agents is filled in.
	sweepChannels := len(agents) == 0
	if len(agents) == 0 {
		all, err := sw.Store.Agents()
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			box := maildir.Address{Kind: maildir.KindAgent, Name: a}
			switch err := sw.Store.MayChange(box); {
			case err == nil:
				agents = append(agents, a)
			case errors.Is(err, maildir.ErrNotHome):
				rep.Elsewhere = append(rep.Elsewhere, box)
			default:
				return nil, err
			}
		}
	}
	var failed []error
	for _, agent := range agents {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := sw.sweepOne(ctx, rep, agent, rep.Time.Add(-cutoff)); err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			f := &Failed{Box: maildir.Address{Kind: maildir.KindAgent, Name: agent}, Err: err}
			rep.Failed = append(rep.Failed, f)
			failed = append(failed, f)
		}
		rep.Mailboxes++
	}
	if sweepChannels && !sw.DryRun {
		// Channels keep their own retention (maildir.ChannelConfig); a
		// full sweep applies it too.
		channels, err := sw.Store.Channels()
		if err != nil {
			failed = append(failed, err)
		}
		for _, c := range channels {
			moved, err := sw.Store.Retain(maildir.Address{Kind: maildir.KindChannel, Name: c})
			if errors.Is(err, maildir.ErrNotHome) {
				rep.Elsewhere = append(rep.Elsewhere, maildir.Address{Kind: maildir.KindChannel, Name: c})
				continue
			}
			for _, id := range moved {
				rep.Moved = append(rep.Moved, Moved{Box: maildir.Address{Kind: maildir.KindChannel, Name: c}, ID: id})
			}
			if err != nil {
				f := &Failed{Box: maildir.Address{Kind: maildir.KindChannel, Name: c}, Err: err}
				rep.Failed = append(rep.Failed, f)
				failed = append(failed, f)
			}
		}
	}
	if sweepChannels && !sw.DryRun {
		// The one rule by which keyed sends' records go: past their window.
		n, err := sw.Store.PruneOnce()
		rep.PrunedKeys = n
		if err != nil {
			failed = append(failed, fmt.Errorf("pruning the records of keyed sends: %w", err))
		}
	}
	return rep, errors.Join(failed...)
}

// sweepOne moves agent's messages stamped before limit: it decides which
// (old), then moves them (move).
func (sw *Sweeper) sweepOne(ctx context.Context, rep *Report, agent string, limit time.Time) error {
	a, err := maildir.ParseMailbox(agent) // a mailbox, whatever groups or queues share its name
	if err != nil {
		return err
	}
	ids, err := sw.old(ctx, rep, a, limit)
	if err != nil || len(ids) == 0 {
		return err
	}
	if sw.DryRun {
		for _, id := range ids {
			rep.Moved = append(rep.Moved, Moved{Box: a, ID: id})
		}
		return nil
	}
	return sw.move(ctx, rep, a, ids)
}

// old returns the ids of a's messages to sweep: stamped before limit, and
// read unless IncludeUnread. The stamp in a name decides alone when it is
// young; otherwise the message is read, and one moved, deleted or archived
// meanwhile is left out. Files that cannot be read are reported as skipped,
// unread messages kept as counted.
func (sw *Sweeper) old(ctx context.Context, rep *Report, a maildir.Address, limit time.Time) ([]string, error) {
	s := sw.Store
	entries, skipped, err := s.Entries(a, false)
	if err != nil {
		return nil, err
	}
	for _, sk := range skipped {
		rep.Skipped = append(rep.Skipped, &Skip{Path: sk.Path, Err: sk.Err})
	}
	var ids []string
	for i, e := range entries {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		t := e.Stamp
		if !t.IsZero() && !t.Before(limit) {
			continue // young (or future): decided from the name alone
		}
		if t.IsZero() || !sw.IncludeUnread {
			m, err := s.Get(a, e.ID)
			if errors.Is(err, maildir.ErrNotFound) || err == nil && m.ID != e.ID {
				continue // moved or deleted meanwhile
			}
			if err != nil && !fileProblem(err) {
				return nil, err // the mailbox, not this file: fail the mailbox
			}
			if err != nil {
				rep.Skipped = append(rep.Skipped, &Skip{Path: pathOf(a, e.ID), Err: maildir.Reason(err)})
				continue
			}
			if m.Archived {
				continue // another sweeper was faster
			}
			if t.IsZero() {
				t = m.Timestamp // the timestamp key, else the mtime
				if !t.Before(limit) {
					continue
				}
			}
			if !sw.IncludeUnread && !m.Read {
				rep.Kept++
				continue
			}
		}
		ids = append(ids, e.ID)
	}
	return ids, nil
}

// move archives ids of a in batches, each made durable before the next
// begins, so that an interrupted sweep stops within one batch and reports
// exactly what it moved. A message gone meanwhile (deleted, or archived
// by another sweeper) is not this sweep's; any other refusal is reported
// as skipped.
func (sw *Sweeper) move(ctx context.Context, rep *Report, a maildir.Address, ids []string) error {
	for lo := 0; lo < len(ids); lo += moveBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		part := ids[lo:min(lo+moveBatch, len(ids))]
		errs, err := sw.Store.Archive(a, part)
		if err != nil {
			return err
		}
		for i, err := range errs {
			switch {
			case err == nil:
				rep.Moved = append(rep.Moved, Moved{Box: a, ID: part[i]})
			case errors.Is(err, maildir.ErrNotFound):
				// deleted meanwhile, or archived by another sweeper: not ours
			default:
				rep.Skipped = append(rep.Skipped, &Skip{Path: pathOf(a, part[i]), Err: maildir.Reason(err)})
			}
		}
		if sw.afterBatch != nil {
			sw.afterBatch(len(rep.Moved))
		}
	}
	return nil
}

// moveBatch is how many messages a sweep moves between two looks at its
// context: about a tenth of a second of renames on a local disk.
const moveBatch = 1024

// Loop sweeps agents (every mailbox when empty) now and then once every
// interval until ctx ends, handing each sweep's report and error to each.
// A sweep cut short by ctx is still reported, with what it moved. Loop
// returns nil when ctx ends: a cancelled loop is a clean stop.
func (sw *Sweeper) Loop(ctx context.Context, every time.Duration, agents []string, each func(*Report, error)) error {
	if every <= 0 {
		return fmt.Errorf("the sweep interval must be positive, not %v", every)
	}
	if sw.OlderThan < 0 {
		return fmt.Errorf("%w: %v", ErrBadAge, sw.OlderThan)
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		rep, err := sw.Sweep(ctx, agents...)
		if ctx.Err() != nil {
			// Interrupted: what the sweep moved so far is still reported.
			if rep != nil {
				each(rep, nil)
			}
			return nil
		}
		each(rep, err)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// fileProblem reports whether err is about one file's content or type,
// which a sweep skips, rather than about the mailbox.
func fileProblem(err error) bool {
	return errors.Is(err, maildir.ErrInvalidMessage) || errors.Is(err, maildir.ErrTooLarge) ||
		errors.Is(err, maildir.ErrNotMessage) || errors.Is(err, maildir.ErrAmbiguous)
}

func pathOf(a maildir.Address, id string) string { return a.Dir(false) + "/" + id + ".json" }
