package nudgeq

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// Dir is the directory, below the root, that holds one queue per agent.
const Dir = "runtime/nudge"

// refusedDir is the folder of a queue that holds refusal notes.
const refusedDir = "refused"

// Defaults for a Queue's zero fields.
const (
	DefaultMaxDepth    = 50
	DefaultOrphanAfter = 5 * time.Minute
)

// maxRefusals bounds the refusal notes kept for one agent.
const maxRefusals = 1000

// ErrFull is matched by the [*FullError] that [Queue.Enqueue] returns when
// the agent's queue already holds [Queue.MaxDepth] nudges.
var ErrFull = errors.New("nudgeq: nudge queue full")

// A FullError is a refused nudge. Nothing was queued; the recipient will be
// told at its next drain that nudges were refused.
type FullError struct {
	Agent string // whose queue
	Max   int    // its depth limit
}

func (e *FullError) Error() string {
	return fmt.Sprintf("the nudge queue of %s is full (%d nudges, the limit): the nudge was not queued", e.Agent, e.Max)
}

// Is makes errors.Is(err, ErrFull) true.
func (e *FullError) Is(target error) bool { return target == ErrFull }

// A Queue is the nudge queues of one mailfs root. It is safe for
// concurrent use, and any number of processes may use the same root.
type Queue struct {
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time

	// Warn, if not nil, receives each file a drain or peek skipped: one
	// that is not a nudge. Such files are left where they are.
	Warn func(error)

	// MaxDepth is how many nudges one agent's queue holds; 0 means
	// DefaultMaxDepth.
	MaxDepth int

	// OrphanAfter is how old a claim must be before a drain returns it to
	// the queue, its claimant presumed dead; 0 means DefaultOrphanAfter.
	OrphanAfter time.Duration

	// Mail, if not nil, lets a drain drop nudges whose MailID names a
	// message that is already read, or gone.
	Mail *maildir.Store

	root   *chipset.Root
	shared bool // root is Mail's: its Close closes it

	mu   sync.Mutex
	last int64 // the latest enqueue time given out, in nanoseconds
}

// Open returns the queues under the root dir (the ".chipset" directory),
// which need not exist yet. Set the fields before the Queue is used.
func Open(dir string) (*Queue, error) { return open(dir) }

// open is Open with durable's test seams (see export_test.go).
func open(dir string, opts ...durable.Option) (*Queue, error) {
	r, err := chipset.New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Queue{root: r}, nil
}

// OfStore returns the queues under s's root, through the root s opened
// (one open of it for both), with Mail set to s. Set the other fields
// before the Queue is used; its Close leaves the root to s's.
func OfStore(s *maildir.Store) *Queue { return &Queue{root: s.Root(), shared: true, Mail: s} }

// Close releases the queue's descriptors.
func (q *Queue) Close() error {
	if q.shared {
		return nil
	}
	return q.root.Close()
}

func (q *Queue) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// stamp returns the enqueue time for a new nudge: now, but later than any
// earlier one from this Queue, so one process's nudges keep their order
// even when the clock does not move between them.
func (q *Queue) stamp() time.Time {
	t := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if ns := t.UnixNano(); ns <= q.last {
		t = time.Unix(0, q.last+1)
	}
	q.last = t.UnixNano()
	return t
}

func (q *Queue) maxDepth() int { return cmp.Or(q.MaxDepth, DefaultMaxDepth) }

func (q *Queue) warn(path string, err error) {
	if q.Warn != nil {
		q.Warn(fmt.Errorf("skipping %s: %w", path, err))
	}
}

// queueDir is agent's queue folder, below the root. It may be a symbolic
// link to a directory (Gas Town's nudge folder for the agent): the one
// link below the root mailfs follows (see chipset.Root.Linked).
func queueDir(agent string) string { return Dir + "/" + agent }

// Enqueue queues n for agent and returns it as queued, with its ID,
// Timestamp and ExpiresAt set. ttl is how long it lives; 0 means
// [DefaultTTL], or [DefaultUrgentTTL] for an urgent nudge. A full queue
// gives a [*FullError] and queues nothing.
func (q *Queue) Enqueue(agent string, n Nudge, ttl time.Duration) (*Nudge, error) {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return nil, err
	}
	now := q.stamp()
	if err := n.check(now, ttl); err != nil {
		return nil, err
	}
	if q.sharedTown(agent) != "" {
		n.Sender = gasTownSender(n.Sender) // Gas Town reads this file
	}
	r, err := q.root.Open(true)
	if err != nil {
		return nil, err
	}
	d, err := r.MkdirAll(queueDir(agent))
	if errors.Is(err, durable.ErrNotDir) {
		d, err = q.root.Linked(queueDir(agent)) // a queue shared with Gas Town
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// Enqueuers of one queue take turns to count and write, so the cap
	// holds exactly; drainers never wait for them.
	unlock, err := d.Lock()
	if err != nil {
		return nil, err
	}
	depth, err := queued(d)
	if max := q.depthFor(agent); err == nil && depth >= max {
		unlock()
		q.noteRefusal(d, n.Sender, now)
		return nil, &FullError{Agent: agent, Max: max}
	}
	var name string
	for err == nil {
		name = newName(now)
		if err = d.CreateEphemeral(name, n.encode()); errors.Is(err, fs.ErrExist) {
			err = nil // the same nanosecond and the same random suffix: again
			continue
		}
		break
	}
	unlock()
	if err != nil {
		return nil, err
	}
	n.ID = strings.TrimSuffix(name, ".json")
	return &n, nil
}

// newName returns a fresh queue file name for a nudge queued at t.
func newName(t time.Time) string {
	return fmt.Sprintf("%019d-%08x.json", t.UnixNano(), rand.Uint32())
}

// isNudgeName reports whether name is a queued nudge's file name.
// Gas Town writes the same form without zero-padding the nanoseconds, so
// 1 to 19 digits are accepted.
func isNudgeName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".json")
	digits, hex, found := strings.Cut(stem, "-")
	if !ok || !found || len(digits) < 1 || len(digits) > 19 || len(hex) != 8 {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	for _, c := range hex {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// queueOrder sorts nudge names first in, first out: by their nanoseconds
// as numbers (Gas Town's are not zero-padded), then by name.
func queueOrder(a, b string) int {
	na, _, _ := strings.Cut(a, "-")
	nb, _, _ := strings.Cut(b, "-")
	if c := cmp.Compare(len(na), len(nb)); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// ParseClaim splits the name of a claimed nudge file into the nudge's own
// name and the time it was claimed: mailfs names a claim
// "<nudge name>.claimed.<claim unixnano>-<rand>". Gas Town's claims,
// "<nudge name>.claimed.<8 hex>", carry no time: claimedAt is zero (see
// [ClaimedAt]). ok is false for any other name.
func ParseClaim(name string) (nudge string, claimedAt time.Time, ok bool) {
	nudge, rest, found := strings.Cut(name, ".claimed.")
	if !found || !isNudgeName(nudge) {
		return "", time.Time{}, false
	}
	if len(rest) == 8 && strings.Trim(rest, "0123456789abcdef") == "" {
		return nudge, time.Time{}, true // Gas Town's
	}
	nanos, _, _ := strings.Cut(rest, "-")
	ns, err := strconv.ParseInt(nanos, 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return nudge, time.Unix(0, ns), true
}

// ClaimedAt is when the claim file name, whose stat is st, was claimed:
// the time in a mailfs claim's name; for a Gas Town claim, which names no
// time, the later of its mtime and its ctime. A rename keeps the mtime (an
// aged nudge claimed a moment ago still has its old one) but sets the
// ctime, so the ctime is when the claim was made; the mtime is later only
// when Gas Town touched the claim since. ok is false for a name that is
// not a claim.
func ClaimedAt(name string, st durable.Stat) (at time.Time, ok bool) {
	_, at, ok = ParseClaim(name)
	if ok && at.IsZero() {
		at = st.ModTime
		if st.Ctime.After(at) {
			at = st.Ctime
		}
	}
	return at, ok
}

// listing is what one read of a queue directory holds.
type listing struct {
	nudges  []string // queued nudge files, oldest first
	claims  []string // claimed files
	foreign []string // anything else but dot-files and refused/
}

func list(d *durable.Dir) (*listing, error) {
	l := &listing{}
	err := d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."), name == refusedDir && e.IsDir():
		case !e.Type().IsRegular():
			l.foreign = append(l.foreign, name)
		case isNudgeName(name):
			l.nudges = append(l.nudges, name)
		case strings.Contains(name, ".claimed."):
			if _, _, ok := ParseClaim(name); ok {
				l.claims = append(l.claims, name)
			} else {
				l.foreign = append(l.foreign, name)
			}
		default:
			l.foreign = append(l.foreign, name)
		}
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(l.nudges, queueOrder)
	return l, nil
}

// queued counts the nudges waiting in d.
func queued(d *durable.Dir) (int, error) {
	l, err := list(d)
	if err != nil {
		return 0, err
	}
	return len(l.nudges), nil
}

// openQueue parses agent and opens its queue folder, or the Gas Town
// folder it links to; the folder is nil, with no error, when it does not
// exist yet.
func (q *Queue) openQueue(agent string) (string, *durable.Dir, error) {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return "", nil, err
	}
	d, err := q.root.Linked(queueDir(agent))
	return agent, d, err
}

// Len returns how many nudges wait in agent's queue (claimed ones not
// counted). It opens no file.
func (q *Queue) Len(agent string) (int, error) {
	agent, d, err := q.openQueue(agent)
	if d == nil {
		return 0, err
	}
	defer d.Close()
	return queued(d)
}

// Peek returns the nudges waiting in agent's queue, oldest first, without
// claiming them. Expired nudges are left out.
func (q *Queue) Peek(agent string) ([]*Nudge, error) {
	agent, d, err := q.openQueue(agent)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	l, err := list(d)
	if err != nil {
		return nil, err
	}
	q.warnForeign(d, l)
	now := q.now()
	var out []*Nudge
	for _, name := range l.nudges {
		n, err := q.read(d, name)
		if err == nil && !n.Expired(now) && !n.Deferred(now) {
			out = append(out, n)
		}
	}
	return out, nil
}

func (q *Queue) warnForeign(d *durable.Dir, l *listing) {
	for _, name := range l.foreign {
		q.warn(d.Join(name), errors.New("not a nudge"))
	}
}

// read reads and parses a queued nudge. Files that vanished are not
// reported; files that are not nudges are, and left alone.
func (q *Queue) read(d *durable.Dir, name string) (*Nudge, error) {
	data, _, err := d.ReadFile(name, maxFile)
	if err == nil {
		var n *Nudge
		if n, err = Parse(data); err == nil {
			n.ID = strings.TrimSuffix(name, ".json")
			return n, nil
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		orig, _, claimed := ParseClaim(name)
		if !claimed {
			orig = name
		}
		q.warn(d.Join(orig), err)
	}
	return nil, err
}

// A Batch is the nudges one drainer claimed. Show them, then call Commit;
// until then they are claimed, and if the drainer dies they return to the
// queue after [Queue.OrphanAfter].
type Batch struct {
	Agent   string
	Nudges  []*Nudge  // the live nudges, oldest first
	Refused *Refusals // nudges refused while the queue was full; nil if none

	dir     *durable.Dir
	claimed []string // files to remove at Commit: shown, expired or stale
	notes   *durable.Dir
	noted   []string
}

// Refusals summarises the nudges refused because an agent's queue was full.
type Refusals struct {
	Count  int       // how many
	Sender string    // who sent the latest
	At     time.Time // when
}

// Claim claims every live nudge in agent's queue, oldest first, and the
// notes of refused nudges. First it returns to the queue any claim older
// than OrphanAfter, by its claim time. Expired nudges, nudges about mail
// already read, archived or gone, and Gas Town's reply reminders of
// threads the agent has answered since they were armed, are claimed too
// but not returned: Commit drops them. Files that are not nudges are
// reported to Warn and left alone.
func (q *Queue) Claim(agent string) (*Batch, error) {
	return q.ClaimContext(context.Background(), agent)
}

// ClaimContext claims as [Queue.Claim] does, but stops claiming more
// nudges once ctx is done and returns the batch claimed so far: a caller
// out of time can [Batch.Release] it at once rather than leave claims to
// come back only after OrphanAfter.
func (q *Queue) ClaimContext(ctx context.Context, agent string) (*Batch, error) {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return nil, err
	}
	b := &Batch{Agent: agent}
	d, err := q.root.Linked(queueDir(agent))
	if d == nil {
		return b, err
	}
	b.dir = d
	now := q.now()
	var claimErr error // the first claim that failed other than by losing a race
	l, err := list(d)
	if err != nil {
		b.Close()
		return nil, err
	}
	q.warnForeign(d, l)
	if q.returnOrphans(d, l.claims, now, q.orphanAfterFor(agent)) {
		if l, err = list(d); err != nil {
			b.Close()
			return nil, err
		}
	}
	for _, name := range l.nudges {
		if ctx.Err() != nil {
			break // out of time: what is claimed so far is the caller's
		}
		// Claim first: the rename decides among drainers, and losers read
		// nothing. A claimed file that is not a nudge goes back untouched.
		claim, ok, err := claimFile(d, name, now)
		if err != nil {
			// The nudge stays queued for the next drain; if no nudge
			// could be claimed at all (a read-only root), the caller
			// hears why below instead of taking the queue for empty.
			claimErr = cmp.Or(claimErr, err)
			q.warn(d.Join(name), err)
			continue
		}
		if !ok {
			continue // another drainer won it
		}
		n, err := q.read(d, claim)
		if err != nil {
			d.Move(claim, d, name)
			continue
		}
		n.ID = strings.TrimSuffix(name, ".json")
		if n.Deferred(now) {
			d.Move(claim, d, name) // not yet: back in the queue, untouched
			continue
		}
		b.claimed = append(b.claimed, claim)
		if n.Expired(now) || q.stale(agent, n) || q.answered(agent, n) {
			continue
		}
		b.Nudges = append(b.Nudges, n)
	}
	if claimErr != nil && len(b.claimed) == 0 {
		b.Close()
		return nil, fmt.Errorf("nudgeq: no nudge of %s could be claimed: %w", agent, claimErr)
	}
	if err := q.claimRefusals(b, now); err != nil {
		if rerr := b.Release(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		b.Close()
		return nil, err
	}
	return b, nil
}

// claimFile renames name to a claimed name; false means it was gone
// (another drainer won it). Any other failure (a root that cannot be
// written) is an error: the nudge is still queued, not gone.
// The claim's mtime is set to now as well: Gas Town, draining the same
// queue, judges a claim by its mtime (which a rename keeps), and must not
// take a fresh claim of an old nudge for an orphan.
func claimFile(d *durable.Dir, name string, now time.Time) (string, bool, error) {
	claim := fmt.Sprintf("%s.claimed.%019d-%08x", name, now.UnixNano(), rand.Uint32())
	if err := d.Move(name, d, claim); errors.Is(err, fs.ErrNotExist) {
		return claim, false, nil
	} else if err != nil {
		return claim, false, err
	}
	d.SetTimes(claim, now) // best effort: only a shared queue needs it
	return claim, true, nil
}

// returnOrphans puts claims older than after (the queue's OrphanAfter, or
// a shared queue's town setting) back in the queue, and reports whether
// it returned any.
func (q *Queue) returnOrphans(d *durable.Dir, claims []string, now time.Time, after time.Duration) bool {
	returned := false
	for _, c := range claims {
		orig, at, _ := ParseClaim(c)
		if at.IsZero() { // Gas Town's claim: the time of its rename
			st, err := d.Lstat(c)
			if err != nil {
				continue
			}
			at, _ = ClaimedAt(c, st)
		}
		if now.Sub(at) >= after && d.Move(c, d, orig) == nil {
			returned = true
		}
	}
	return returned
}

// stale reports whether n announces mail that is already read, archived,
// or gone.
func (q *Queue) stale(agent string, n *Nudge) bool {
	if n.MailID == "" || q.Mail == nil {
		return false
	}
	m, err := q.Mail.Get(maildir.Address{Kind: maildir.KindAgent, Name: agent}, n.MailID)
	return errors.Is(err, maildir.ErrNotFound) || err == nil && (m.Read || m.Archived)
}

// Commit removes the claimed files: the nudges shown, and those dropped as
// expired or stale. Call it only once the nudges have been shown.
func (b *Batch) Commit() error {
	var errs []error
	for _, c := range b.claimed {
		if err := b.dir.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	for _, c := range b.noted {
		if err := b.notes.Remove(c); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	b.claimed, b.noted = nil, nil
	return errors.Join(append(errs, b.Close())...)
}

// Release returns the claimed nudges to the queue, unshown.
func (b *Batch) Release() error {
	var errs []error
	for _, c := range b.claimed {
		orig, _, _ := ParseClaim(c)
		if err := b.dir.Move(c, b.dir, orig); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range b.noted {
		orig, _, _ := ParseClaim(c)
		if err := b.notes.Move(c, b.notes, orig); err != nil {
			errs = append(errs, err)
		}
	}
	b.claimed, b.noted = nil, nil
	return errors.Join(append(errs, b.Close())...)
}

// Close releases the batch's descriptors without removing or returning
// anything: what it claimed returns to the queue after OrphanAfter.
func (b *Batch) Close() error {
	var err error
	if b.dir != nil {
		err = b.dir.Close()
		b.dir = nil
	}
	if b.notes != nil {
		err = errors.Join(err, b.notes.Close())
		b.notes = nil
	}
	return err
}

// Drain claims agent's nudges and commits at once: for callers that have
// nowhere to lose them between the two. A prompt hook should Claim, print,
// then Commit.
func (q *Queue) Drain(agent string) (*Batch, error) {
	b, err := q.Claim(agent)
	if err != nil {
		return nil, err
	}
	return b, b.Commit()
}

// Announce queues, for the recipient of each delivered copy in sent (as
// [maildir.Store.Send] returns them), a nudge that names the message: from
// its sender, urgent for urgent mail, dropped unseen once the message is
// read (its MailID). Copies in a queue or a channel have no one to nudge and
// are passed over. It returns one error per copy that could not be
// announced (a full queue gives a [*FullError]): the mail itself was
// delivered, so the caller reports these as warnings.
func (q *Queue) Announce(sent []*maildir.Message) []error {
	var errs []error
	for _, m := range sent {
		box := m.Box
		if box.Kind != maildir.KindAgent {
			continue
		}
		p := Normal
		if m.Priority == maildir.Urgent {
			p = Urgent
		}
		text := fmt.Sprintf("new mail from %s: %s (mailfs read %s %s)", m.From, m.Subject, box.Name, m.ID)
		if _, err := q.Enqueue(box.Name, Nudge{Sender: m.From, Message: text, Priority: p, MailID: m.ID}, 0); err != nil {
			errs = append(errs, fmt.Errorf("%s was not nudged: %w", box.Name, err))
		}
	}
	return errs
}

// Keep keeps in the batch only the nudges keep accepts and returns the
// others to the queue at once, unshown, for a later drain: a hook that
// shows only urgent nudges leaves the rest for the prompt hook.
func (b *Batch) Keep(keep func(*Nudge) bool) error {
	var errs []error
	var kept []*Nudge
	for _, n := range b.Nudges {
		if keep(n) {
			kept = append(kept, n)
			continue
		}
		name := n.ID + ".json"
		for i, c := range b.claimed {
			if orig, _, ok := ParseClaim(c); ok && orig == name {
				if err := b.dir.Move(c, b.dir, orig); err != nil {
					errs = append(errs, err)
				}
				b.claimed = slices.Delete(b.claimed, i, i+1)
				break
			}
		}
	}
	b.Nudges = kept
	return errors.Join(errs...)
}
