package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/watch"
)

// Defaults of a Deliverer's zero fields.
const (
	// DefaultEvery is the least time between two doorbells that carry only
	// normal or low mail and normal nudges.
	DefaultEvery = 30 * time.Second
	// DefaultCheck is how often a deliverer checks that its session still
	// runs, and looks at the nudge queue and do not disturb. Where the
	// session's end is watched instead (a pidfd on Linux), it looks every
	// WatchedCheck: for the session's status and id, and a level-triggered
	// look at what the watches might have missed.
	DefaultCheck = 500 * time.Millisecond
	WatchedCheck = 5 * time.Second
	// DefaultSpacing is the least time between two doorbells of any kind,
	// urgent ones included: see Deliverer.Spacing.
	DefaultSpacing = 2 * time.Second
	// DefaultPerMinute is how many doorbells a session gets in any minute
	// at most.
	DefaultPerMinute = 10
	// coalesce is how long an urgent doorbell waits for more mail landing
	// with it, so that mail sent together in one go rings once.
	coalesce = 20 * time.Millisecond
	// maxBackoff bounds the wait between retries of a failed push.
	maxBackoff = 30 * time.Second
	// DefaultConfirmWait is how long a doorbell written waits for any
	// evidence (submitted or delivered) before its messages ring again;
	// DefaultMaxRings is how many doorbells name one message at most.
	DefaultConfirmWait = 15 * time.Second
	DefaultMaxRings    = 3
	// confirmPoll is how often the evidence of a young doorbell is looked
	// for (confirmFast after it rang; then at each Check).
	confirmPoll = 50 * time.Millisecond
	confirmFast = 10 * time.Second
	// bellLife is how long an unconfirmed doorbell is remembered.
	bellLife = 10 * time.Minute
)

// A Deliverer rings one session's door when its agent has new mail or
// nudges. Set the fields, then call Run.
//
// It watches the agent's mailbox (package watch: a file landing wakes it
// at once, whatever the mailbox's size) and its nudge queue. Urgent and
// high-priority mail and urgent nudges ring at once; normal and low mail
// and normal nudges ring at most once per Every. While do not disturb is
// on only urgent mail and urgent nudges ring. A doorbell names a message
// once per session — again only when the session gave no evidence that
// it took the doorbell in (see ConfirmWait), never one already read; a push
// that fails is retried (with backoff) until it succeeds, the mail is
// read, or the session ends. The mail itself never moves: the doorbell is
// only a pointer to it, so a lost push loses nothing. The package doc says
// what each receipt means.
type Deliverer struct {
	Store  *maildir.Store
	Nudges *nudgeq.Queue // nil: nudges are left to the hooks
	Agent  string
	Door   Door

	Every time.Duration // 0 means DefaultEvery
	Check time.Duration // 0 means DefaultCheck
	// Spacing is the least time between two doorbells, urgent ones too,
	// and PerMinute the most doorbells in any minute (0 means
	// DefaultSpacing, DefaultPerMinute). Scripts and agents send in loops
	// (a loop of mailfs send lands a message every 45–70 ms), and each
	// doorbell is a prompt the session must take in: a runtime flooded
	// with them drops some unseen (Claude Code passed about 32 of 48 on to
	// the model). So the first urgent message after a quiet spell rings
	// at once, and the rest of a burst waits for the spacing and rides
	// the next doorbell together: 100 mail sent in a loop ring as a
	// handful of doorbells, each message named once.
	Spacing   time.Duration
	PerMinute int
	// A doorbell written is only "rung" until the session shows it took
	// it in ("submitted": see Confirm, Evidence.Queued), and "delivered"
	// only once the runtime's own record shows the model answered a turn
	// that held it (see Confirmer, Answered). One with no evidence at all
	// after ConfirmWait, in a session that is not busy, is rung again
	// with a fresh nonce (it names the same messages, so a repeat is
	// safe), up to MaxRings doorbells per message; then the message is
	// recorded unconfirmed (given up on). 0 means DefaultConfirmWait,
	// DefaultMaxRings.
	ConfirmWait time.Duration
	MaxRings    int
	// Hooks, if set, records each doorbell's messages as shown in this
	// turn, so the post-tool and stop hooks do not repeat them.
	Hooks *hook.Handler
	// Warn receives problems the deliverer recovers from.
	Warn func(error)
	// Rang, for tests, is called after each doorbell the session took.
	Rang func(Doorbell)

	// started, for tests, is called with the session's start mark (see
	// shownAtStart) before the mailbox is first scanned.
	started func(mark time.Time)

	mu     sync.Mutex
	cancel context.CancelFunc // the running Run's, nil when none runs
	done   chan struct{}      // closed when the running Run has returned
	// watching, for tests, is called once the mailbox's first scan is done.
	watching func()
}

type pending struct {
	m     *maildir.Message
	since time.Time
	again bool // rung before, never confirmed: rings as soon as the gate allows
}

// Run delivers until the session ends (nil), ctx ends (ctx.Err()), or
// another deliverer already serves the session ([ErrRunning]). It returns
// once everything it started has ended: its watchers, its lock, its
// goroutines. A Deliverer runs one Run at a time.
func (d *Deliverer) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	d.mu.Lock()
	d.cancel, d.done = cancel, done
	d.mu.Unlock()
	defer close(done)
	defer cancel()
	return d.run(ctx)
}

// Close stops a running Run as its context's end would, and returns once
// Run has returned. Without a running Run, or a second time, it does
// nothing.
func (d *Deliverer) Close() error {
	d.mu.Lock()
	cancel, done := d.cancel, d.done
	d.cancel, d.done = nil, nil
	d.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

func (d *Deliverer) run(ctx context.Context) error {
	agent, err := maildir.ParseAgent(d.Agent)
	if err != nil {
		return err
	}
	info, err := d.Door.Session(ctx)
	if errors.Is(err, ErrGone) {
		return nil
	}
	if err != nil {
		return err
	}
	root := d.Store.Root()
	dir, err := recordDir(root, agent, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	rec := &Record{Agent: agent, Deliverer: Self(), Session: info, Started: time.Now().UTC(),
		Rung: map[string]time.Time{}, Held: map[string]string{}, Confirmed: map[string]time.Time{},
		Submitted: map[string]time.Time{}, Unconfirmed: map[string]time.Time{}}
	if info.ID != "" {
		rec.SessionIDs = []string{info.ID}
	}
	unlock, err := lock(dir, rec.name())
	if err != nil {
		return err
	}
	defer unlock()
	// A deliverer of this session before this one (killed; or ended at
	// /clear) left its record: this one goes on from it, never over it.
	if was, err := readRecord(dir, rec.name()); err == nil {
		rec = takeOver(was, rec)
	}
	if err := Prune(d.Store, agent); err != nil {
		d.warn(err)
	}
	// The session is over: no record of a deliverer that is gone, unless
	// it holds receipts senders may still ask for (see end).
	keep := false
	defer func() {
		// A record with receipts stays, whatever ended the run: the
		// session's next deliverer takes it over, senders still ask.
		if !keep && len(rec.Confirmed) == 0 && len(rec.Rung) == 0 {
			dir.Remove(rec.name())
		}
	}()
	if err := rec.save(dir); err != nil {
		return err
	}
	// The session's start, on the clock that stamps a file's arrival: the
	// record's inode change time, read once (later saves move it on).
	mark, err := dir.Lstat(rec.name())
	if err != nil {
		return err
	}
	if d.started != nil {
		d.started(mark.Ctime)
	}
	rec.Mark = mark.Ctime.UTC()
	if h, ok := d.Door.(sessionHistory); ok {
		h.earlierSessions(rec.SessionIDs)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &watch.Watcher{Store: d.Store, Boxes: []maildir.Address{{Kind: maildir.KindAgent, Name: agent}}, Warn: d.warn}
	events, err := w.Watch(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	if d.watching != nil {
		d.watching()
	}
	nudgeEvents := d.watchNudges(ctx, agent)
	if nudgeEvents != nil {
		defer func() {
			cancel()
			for range nudgeEvents { // closed once its watch has ended
			}
		}()
	}
	ended, checkEvery, stop, gone := d.watchEnd(ctx, info)
	if stop != nil {
		defer stop()
	}
	if gone {
		return nil
	}
	st := &run{d: d, agent: agent, rec: rec, dir: dir, waiting: map[string]pending{}, every: cmp.Or(d.Every, DefaultEvery),
		spacing: cmp.Or(d.Spacing, DefaultSpacing), perMinute: cmp.Or(d.PerMinute, DefaultPerMinute),
		confirmWait: cmp.Or(d.ConfirmWait, DefaultConfirmWait), maxRings: cmp.Or(d.MaxRings, DefaultMaxRings),
		tries: map[string]int{}, last: map[string]string{}}
	for id := range rec.Rung {
		st.tries[id] = 1
	}
	for _, b := range rec.Bells { // a record taken over: its bells are awaited again
		for _, id := range b.IDs {
			st.tries[id] = max(st.tries[id], 1)
			st.last[id] = b.Nonce
		}
	}
	keep, err = st.serve(ctx, signals{mail: events, nudges: nudgeEvents, ended: ended, checkEvery: checkEvery, start: mark.Ctime})
	return err
}

// watchEnd watches the session's end where the platform allows: then the
// checks can be rare, and 50 idle deliverers cost next to nothing. It
// returns the channel closed at the end (nil where there is no watch), how
// often to check the session all the same, the watch's stop (nil without
// one), and whether the session was gone once the watch was open.
func (d *Deliverer) watchEnd(ctx context.Context, info Info) (ended <-chan struct{}, checkEvery time.Duration, stop func(), gone bool) {
	checkEvery = cmp.Or(d.Check, DefaultCheck)
	exited, stop, err := info.Process.watchExit()
	if err != nil {
		return nil, checkEvery, nil, false
	}
	// The pid watched is the session's only if the session still is
	// what its door says, now that the watch is open.
	if _, err := d.Door.Session(ctx); errors.Is(err, ErrGone) {
		return nil, checkEvery, stop, true
	}
	if d.Check == 0 {
		checkEvery = WatchedCheck
	}
	return exited, checkEvery, stop, false
}

// signals are what a Run's loop waits on besides its own timers.
type signals struct {
	mail       <-chan watch.Event // the mailbox's watcher
	nudges     <-chan struct{}    // the nudge queue's (closed when ctx ends)
	ended      <-chan struct{}    // closed when the session's process exits (nil: not watched)
	checkEvery time.Duration      // how often to ask the door about the session
	start      time.Time          // the session's start mark (see shownAtStart)
}

// serve is Run's loop: it takes in what the signals say, then confirms,
// rings what is due, and waits again, until the session ends (nil) or ctx
// does (ctx.Err()). keep says the record holds receipts senders may still
// ask for, so that Run leaves it (see end).
func (st *run) serve(ctx context.Context, sig signals) (keep bool, err error) {
	d, rec := st.d, st.rec
	check := time.NewTicker(sig.checkEvery)
	defer check.Stop()
	due := time.NewTimer(time.Hour)
	due.Stop()
	poll := time.NewTimer(time.Hour)
	poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return st.stopped(ctx)
		case ev, ok := <-sig.mail:
			if !ok {
				return st.stopped(ctx) // closed when ctx ended
			}
			if ev.Initial && d.shownAtStart(ev.Message, sig.start, rec.Started) || ev.Message.Read || !rec.Rung[ev.ID].IsZero() || !rec.Hooked[ev.ID].IsZero() {
				continue
			}
			st.waiting[ev.ID] = pending{m: ev.Message, since: time.Now()}
		case _, ok := <-sig.nudges:
			if !ok {
				return st.stopped(ctx) // closed when ctx ended
			}
			st.nudgesMaybe = true
		case <-check.C:
			info, err := d.Door.Session(ctx)
			if errors.Is(err, ErrGone) {
				return st.end(ctx, true), nil
			}
			if err == nil && info != rec.Session {
				// The session's status (busy, idle) or id moved on: the
				// record says what it is now, for live list.
				if rec.Session.ID != "" && info.ID != "" && info.ID != rec.Session.ID {
					st.confirm(ctx, false) // what the old conversation answered first
					st.newConversation()
				}
				rec.Session, rec.Updated = info, time.Now().UTC()
				if info.ID != "" && !slices.Contains(rec.SessionIDs, info.ID) {
					rec.SessionIDs = append(rec.SessionIDs, info.ID)
				}
				if err := rec.save(st.dir); err != nil {
					d.warn(err)
				}
			}
			st.nudgesMaybe = true // a level-triggered look, whatever the events said
		case <-due.C:
		case <-poll.C:
		case <-sig.ended:
			return st.end(ctx, true), nil
		}
		st.confirm(ctx, false)
		next, gone := st.step(ctx)
		if gone {
			return st.end(ctx, true), nil
		}
		due.Stop()
		if !next.IsZero() {
			due.Reset(max(time.Until(next), 0))
		}
		if st.young(time.Now()) {
			poll.Reset(confirmPoll)
		}
	}
}

// stopped ends a Run that ctx stopped (a runtime may end its hooks with a
// signal as its session ends): what was delivered is kept for receipts
// all the same, read with a moment of its own. It is how serve ends on
// ctx.Done and on either watcher's channel closing, which ctx's end also
// does: the loop's select picks among ready cases at random, and must
// not drop receipts for having taken a closed channel first.
func (st *run) stopped(ctx context.Context) (keep bool, err error) {
	end, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	// Stopped as its session ends, or while it runs on (a /clear that
	// ends the hooks of the start before): the record says ended only in
	// the first case, so that the session's next deliverer takes it over.
	_, serr := st.d.Door.Session(end)
	return st.end(end, errors.Is(serr, ErrGone)), ctx.Err()
}

// newConversation hands to the next doorbell the messages of the bells
// still awaiting an answer when the session's conversation was replaced
// (its id changed: Codex's /new, Claude Code's /clear). A bell the old
// conversation took in and never answered will not be answered in the
// new one, which never held it: its messages ring again, with a fresh
// nonce, into the new one (up to MaxRings doorbells a message). The old
// bells are still awaited: an answer the old conversation gives late
// delivers them all the same.
func (st *run) newConversation() {
	now := time.Now()
	box := maildir.Address{Kind: maildir.KindAgent, Name: st.agent}
	for i, b := range st.rec.Bells {
		if b.Again {
			continue
		}
		st.rec.Bells[i].Again = true
		for _, id := range b.IDs {
			if !st.rec.Confirmed[id].IsZero() || st.last[id] != b.Nonce {
				continue // delivered, or a later doorbell named it
			}
			if st.tries[id] >= st.maxRings {
				st.rec.Unconfirmed[id] = now.UTC()
				continue
			}
			if m, err := st.d.Store.Get(box, id); err == nil && !m.Read {
				st.waiting[id] = pending{m: m, since: now, again: true}
			}
		}
	}
}

// shownAtStart says m was in the mailbox, unread, when the session
// started, so the session-start hook showed it. The watcher's first scan
// also finds what landed after the start, before its watches were in
// place: that is new, and rings. What decides is when m's file arrived
// here, against start, the inode change time of the record the deliverer
// wrote as it began: both are stamped by this machine's kernel, so a
// sender's clock, skewed either way, cannot make new mail look old or old
// mail new (the message's Timestamp is the sender's clock). The kernel
// stamps files at its clock tick (a few milliseconds), so a file of the
// same tick as start is left to the one finer clock there is, the
// sender's stamp against started: only a message landing within a tick of
// the start can be misjudged, as the stamp alone misjudged any. A file it
// cannot stat is new; the doorbell re-reads each message before it rings
// and drops one read or gone.
func (d *Deliverer) shownAtStart(m *maildir.Message, start, started time.Time) bool {
	at, err := d.Store.Arrived(m)
	switch {
	case err != nil || at.After(start):
		return false
	case at.Before(start):
		return true
	}
	return m.Timestamp.Before(started)
}

// run is one Run's state.
type run struct {
	d           *Deliverer
	agent       string
	rec         *Record
	dir         *durable.Dir
	waiting     map[string]pending
	every       time.Duration
	spacing     time.Duration
	perMinute   int
	recent      []time.Time // the doorbells of the last minute, oldest first
	nudgesMaybe bool
	failures    int
	retryAt     time.Time
	confirmWait time.Duration
	maxRings    int
	tries       map[string]int    // message id -> doorbells that named it
	last        map[string]string // message id -> the nonce of the last doorbell that named it
}

// step rings if a doorbell is due, and returns when the next one may be.
// It decides first (plan, from what it knows), then acts: claims the
// nudges that may ride, builds the doorbell, rings, and records.
func (st *run) step(ctx context.Context) (next time.Time, gone bool) {
	now := time.Now()
	if now.Before(st.retryAt) {
		return st.retryAt, false
	}
	dnd, _, err := hook.DND(st.d.Store, st.agent)
	if err != nil {
		st.d.warn(err)
	}
	gate := st.gate(now)
	dec := plan(situation{now: now, waiting: st.waiting, dnd: dnd, gate: gate, lastRing: st.rec.LastRing, every: st.every})
	held, next := dec.held, dec.next
	var nudges *nudgeq.Batch
	if st.nudgesMaybe && st.d.Nudges != nil && now.Before(gate) {
		next = minTime(next, gate) // urgent nudges too wait for the spacing
	} else if st.nudgesMaybe && st.d.Nudges != nil {
		st.nudgesMaybe = false
		if n, err := st.d.Nudges.Len(st.agent); err == nil && n > 0 {
			nudges = st.claimNudges(dnd, dec.urgent || dec.normal || st.rec.LastRing.IsZero() || !now.Before(st.rec.LastRing.Add(st.every)))
		}
	}
	hasUrgentNudge := nudges != nil && slices.ContainsFunc(nudges.Nudges, func(n *nudgeq.Nudge) bool { return n.Priority == nudgeq.Urgent })
	if !dec.urgent && !dec.normal && !hasUrgentNudge && (nudges == nil || len(nudges.Nudges) == 0) {
		if nudges != nil {
			nudges.Release()
		}
		for _, id := range dec.batched {
			held[id] = "batched"
			next = minTime(next, dec.batchedAt)
		}
		st.publishHeld(held)
		return next, false
	}
	bell, leftMail, leftNudges := st.doorbell(dec.mail, nudges)
	release := st.claim(&bell)
	if len(bell.Mail) == 0 && len(bell.Nudges) == 0 {
		if nudges != nil {
			if err := nudges.Commit(); err != nil { // only announcements of mail already read, or expired nudges
				st.d.warn(err)
			}
		}
		st.publishHeld(held)
		return next, false
	}
	if err := st.d.Door.Ring(ctx, bell.Text()); err != nil {
		if err := release(); err != nil {
			st.d.warn(err)
		}
		if nudges != nil {
			nudges.Release()
		}
		if errors.Is(err, ErrGone) {
			return time.Time{}, true
		}
		return st.failed(err, now, bell, held), false
	}
	if nudges != nil {
		if err := nudges.Commit(); err != nil {
			st.d.warn(err)
		}
	}
	return st.rang(bell, held, leftMail, leftNudges, next, dnd), false
}

// doorbell builds the doorbell for mail and the claimed nudges: only mail
// still unread (read or gone since it landed needs no doorbell), most
// pressing first, no nudge that only announces mail it names, within the
// bounds (see Doorbell.Fit). What did not fit is returned; the nudges that
// did not fit go back to the queue.
func (st *run) doorbell(mail []*maildir.Message, nudges *nudgeq.Batch) (bell Doorbell, leftMail []*maildir.Message, leftNudges []*nudgeq.Nudge) {
	mail = slices.DeleteFunc(mail, func(m *maildir.Message) bool {
		cur, err := st.d.Store.Get(maildir.Address{Kind: maildir.KindAgent, Name: st.agent}, m.ID)
		if err != nil || cur.Read {
			delete(st.waiting, m.ID)
			return true
		}
		return false
	})
	slices.SortFunc(mail, func(a, b *maildir.Message) int {
		if c := rank(a.Priority) - rank(b.Priority); c != 0 {
			return c
		}
		return cmp.Or(a.Timestamp.Compare(b.Timestamp), cmp.Compare(a.ID, b.ID))
	})
	bell = Doorbell{Agent: st.agent, Mail: mail, Nonce: newNonce()}
	if nudges != nil {
		inBell := map[string]bool{}
		for _, m := range mail {
			inBell[m.ID] = true
		}
		for _, n := range nudges.Nudges {
			if n.MailID == "" || !inBell[n.MailID] { // a nudge announcing mail the bell names says nothing more
				bell.Nudges = append(bell.Nudges, n)
			}
		}
	}
	leftMail, leftNudges = bell.Fit()
	if nudges != nil && len(leftNudges) > 0 {
		if err := nudges.Keep(func(n *nudgeq.Nudge) bool { return !slices.Contains(leftNudges, n) }); err != nil {
			st.d.warn(err)
		}
	}
	return bell, leftMail, leftNudges
}

// claim applies the rule that a message is named once in a turn,
// whoever names it first (see hook.Handler.Claim): of the bell's mail, a
// message no doorbell named before that the session's hooks already
// showed in this turn (a post-tool hook's urgent news while the spacing
// held it, a person's prompt) is dropped from the bell and recorded as
// told by the hooks: no doorbell will name it. What the bell keeps is
// recorded as shown, before it rings, so no hook shows it meanwhile;
// release undoes that if the ring fails.
func (st *run) claim(bell *Doorbell) (release func() error) {
	if st.d.Hooks == nil || len(bell.Mail) == 0 {
		return func() error { return nil }
	}
	var fresh, again []string
	for _, m := range bell.Mail {
		if st.tries[m.ID] == 0 {
			fresh = append(fresh, m.ID)
		} else {
			again = append(again, m.ID)
		}
	}
	named, release, err := st.d.Hooks.Claim(st.agent, fresh, again)
	if err != nil {
		st.d.warn(err)
	}
	at := time.Now().UTC()
	bell.Mail = slices.DeleteFunc(bell.Mail, func(m *maildir.Message) bool {
		if slices.Contains(named, m.ID) {
			return false
		}
		delete(st.waiting, m.ID)
		if st.rec.Hooked == nil {
			st.rec.Hooked = map[string]time.Time{}
		}
		st.rec.Hooked[m.ID] = at
		st.rec.Updated = time.Time{} // published with what waits, changed or not
		return true
	})
	return release
}

// failed records a ring that failed: the bell's mail is held, why, and
// the next try waits a backoff.
func (st *run) failed(err error, now time.Time, bell Doorbell, held map[string]string) time.Time {
	st.failures++
	st.retryAt = now.Add(min(time.Second<<min(st.failures-1, 5), maxBackoff))
	why := "retrying"
	switch {
	case errors.Is(err, ErrHeld):
		why = "held by the session"
	case errors.Is(err, ErrRefused):
		why = refusedWhy
	case errors.Is(err, ErrBusy):
		why = "a person is typing"
	}
	for _, m := range bell.Mail {
		held[m.ID] = why
	}
	st.rec.Error = err.Error()
	st.d.warn(err)
	st.publishHeld(held)
	return st.retryAt
}

// rang records a doorbell the session took: its messages are rung (not
// delivered: see confirm), the bell awaits its evidence, the gate moves
// on, what did not fit waits for the next doorbell, and the hooks are
// told what this turn was shown. It returns when to look again.
func (st *run) rang(bell Doorbell, held map[string]string, leftMail []*maildir.Message, leftNudges []*nudgeq.Nudge, next time.Time, dnd bool) time.Time {
	st.failures, st.retryAt = 0, time.Time{}
	at := time.Now().UTC()
	var ids []string
	for _, m := range bell.Mail {
		st.rec.Rung[m.ID] = at
		delete(st.waiting, m.ID)
		ids = append(ids, m.ID)
		st.tries[m.ID]++
		st.last[m.ID] = bell.Nonce
	}
	if len(ids) > 0 {
		st.rec.Bells = append(st.rec.Bells, Bell{Nonce: bell.Nonce, At: at, IDs: ids})
	}
	st.rec.Rings++
	st.rec.LastRing = at
	st.recent = append(st.recent, at)
	st.rec.Error = ""
	st.forget()
	gate := st.gate(at)
	for _, m := range leftMail {
		if p, ok := st.waiting[m.ID]; ok && pressing(p, dnd) {
			held[m.ID] = "spacing"
			next = minTime(next, gate) // what did not fit rings next, as soon as the spacing allows
		} else {
			held[m.ID] = "batched"
			next = minTime(next, later(at.Add(st.every), gate))
		}
	}
	if len(leftNudges) > 0 {
		st.nudgesMaybe = true
		next = minTime(next, at.Add(st.every))
	}
	st.publishHeld(held)
	if st.d.Rang != nil {
		st.d.Rang(bell)
	}
	return next
}

// gate is when the next doorbell may ring: Spacing after the last one,
// and a minute after the PerMinute-th last. It forgets rings older than a
// minute.
func (st *run) gate(now time.Time) time.Time {
	st.recent = slices.DeleteFunc(st.recent, func(t time.Time) bool { return now.Sub(t) >= time.Minute })
	var at time.Time
	if !st.rec.LastRing.IsZero() {
		at = st.rec.LastRing.Add(st.spacing)
	}
	if n := len(st.recent); n >= st.perMinute {
		at = later(at, st.recent[n-st.perMinute].Add(time.Minute))
	}
	return at
}

// claimNudges claims the agent's nudges: urgent ones always, normal ones
// when a doorbell may ring now and do not disturb is off.
func (st *run) claimNudges(dnd, normalOK bool) *nudgeq.Batch {
	b, err := st.d.Nudges.Claim(st.agent)
	if err != nil {
		st.d.warn(err)
		return nil
	}
	if err := b.Keep(func(n *nudgeq.Nudge) bool { return !DNDHoldsNudge(n) || normalOK && !dnd }); err != nil {
		st.d.warn(err)
	}
	return b
}

// publishHeld writes the record with what waits, when that changed.
func (st *run) publishHeld(held map[string]string) {
	if maps.Equal(held, st.rec.Held) && st.rec.Updated.After(st.rec.LastRing) {
		return
	}
	st.rec.Held = held
	st.rec.Updated = time.Now().UTC()
	if info, err := st.d.Door.Session(context.Background()); err == nil {
		st.rec.Session = info
	}
	if err := st.rec.save(st.dir); err != nil {
		st.d.warn(err)
	}
}

// forget bounds the record: past maxRung ids, those no longer unread go
// (a receipt of a read copy says read, whatever the record held).
func (st *run) forget() {
	if len(st.rec.Rung)+len(st.rec.Hooked) <= maxRung {
		return
	}
	box := maildir.Address{Kind: maildir.KindAgent, Name: st.agent}
	for id := range st.rec.Hooked {
		if m, err := st.d.Store.Get(box, id); err != nil || m.Read {
			delete(st.rec.Hooked, id)
		}
	}
	for id := range st.rec.Rung {
		if m, err := st.d.Store.Get(box, id); err != nil || m.Read {
			delete(st.rec.Rung, id)
			delete(st.rec.Confirmed, id)
			delete(st.rec.Submitted, id)
			delete(st.rec.Unconfirmed, id)
			delete(st.tries, id)
			delete(st.last, id)
		}
	}
}

// watchNudges returns a channel that receives when the agent's nudge
// queue may have changed; nil when it cannot be watched (the check
// ticker looks anyway).
func (d *Deliverer) watchNudges(ctx context.Context, agent string) <-chan struct{} {
	if d.Nudges == nil {
		return nil
	}
	hints, err := d.Nudges.Changes(ctx, agent)
	if err != nil {
		d.warn(err)
		return nil // the ticker still looks
	}
	return hints
}

func (d *Deliverer) warn(err error) {
	if d.Warn != nil && err != nil {
		d.Warn(fmt.Errorf("live: %w", err))
	}
}

func rank(p maildir.Priority) int {
	switch p {
	case maildir.Urgent:
		return 0
	case maildir.High:
		return 1
	case maildir.Low:
		return 3
	}
	return 2
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}
