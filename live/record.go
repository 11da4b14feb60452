package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// Dir is the folder, below the root, of the running deliverers' records:
// runtime/live/<agent>/<runtime>-<pid>.json, never committed.
const Dir = "runtime/live"

// A Record is what a session's deliverers publish of themselves and of
// what they rang, for "mailfs live list" and for senders' receipts
// ("send --wait-for delivered"). It is one file per session, rewritten
// after every ring, and per message it only moves forward: a deliverer
// that takes a session over (after a kill, at /clear) starts from the
// record it finds (see takeOver), so no later deliverer forgets what an
// earlier one rang, saw submitted or saw delivered.
type Record struct {
	Agent     string               `json:"agent"`
	Deliverer Process              `json:"deliverer"`
	Session   Info                 `json:"session"`
	Started   time.Time            `json:"started"`
	Updated   time.Time            `json:"updated"`
	Rings     int                  `json:"rings"`
	LastRing  time.Time            `json:"last_ring,omitzero"`
	Rung      map[string]time.Time `json:"rung"`           // message id -> when a doorbell naming it was last written into the session
	Held      map[string]string    `json:"held,omitempty"` // message id -> why it waits: "dnd", "batched", "spacing", "retrying", "held by the session", "refused by the session"
	// Confirmed: message id -> when the runtime's own record showed the
	// model produced output for a turn whose input held a doorbell naming
	// it. Only this is "delivered".
	Confirmed map[string]time.Time `json:"confirmed,omitempty"`
	// Submitted: message id -> when the session showed it took a doorbell
	// naming it in as input (its prompt hook saw the ring mark, the
	// runtime queued it or wrote it as a user line), with no answer from
	// the model yet: "submitted", never "delivered".
	Submitted map[string]time.Time `json:"submitted,omitempty"`
	// Bells are the doorbells written and not yet confirmed, newest last.
	Bells []Bell `json:"bells,omitempty"`
	// Unconfirmed: message id -> when the deliverer gave up on evidence
	// for it, after MaxRings doorbells named it (the mail still waits in
	// the mailbox, for the hooks and the agent's next look).
	Unconfirmed map[string]time.Time `json:"unconfirmed,omitempty"`
	// Hooked: message id -> when the deliverer found that the session's
	// hooks had shown it in the turn (a post-tool hook's urgent news, a
	// stop's block, a person's prompt) before any doorbell named it: no
	// doorbell names it (see hook.Handler.Claim).
	Hooked map[string]time.Time `json:"hooked,omitempty"`
	Error  string               `json:"error,omitempty"`
	// Ended is when the session ended, for a record kept after it (see
	// keptFor): what its doorbells became stays there for senders still
	// waiting on a receipt.
	Ended time.Time `json:"ended,omitzero"`
	// Mark is when the session's deliverer (the last to take it over)
	// began, on the clock that stamps a file's arrival, as Started is on
	// the sender's (see Deliverer.shownAtStart): mail that arrived before
	// it was shown by the session-start hook and is named by no doorbell.
	Mark time.Time `json:"mark,omitzero"`
	// SessionIDs are the ids the session has had while served, oldest
	// first (they change at /clear and /resume): where its evidence is.
	SessionIDs []string `json:"session_ids,omitempty"`
}

// keptFor is how long the record of a session that ended is kept when it
// has receipts to give; a record with none goes when its session does.
const keptFor = time.Hour

// A Bell is one doorbell written into the session and not yet confirmed.
type Bell struct {
	Nonce  string    `json:"nonce"`            // its RingMark: fresh for each ring
	At     time.Time `json:"at"`               // when it was written
	IDs    []string  `json:"ids"`              // the messages it names
	Queued bool      `json:"queued,omitempty"` // the session took it in (see Submitted): not rung again
	Again  bool      `json:"again,omitempty"`  // its messages were handed to a later doorbell
	// Submitted is when the session showed it took the doorbell in, with
	// no answer yet (zero: no such evidence).
	Submitted time.Time `json:"submitted,omitzero"`
}

// Live reports whether the record's deliverer still runs its session.
func (r *Record) Live() bool { return r.Ended.IsZero() && r.Deliverer.Alive() }

// SessionLive reports whether the record's session still runs, whether or
// not a deliverer serves it now: its deliverer runs (it ends with its
// session, marking the record ended), or the session's process does.
func (r *Record) SessionLive() bool {
	return r.Ended.IsZero() && (r.Deliverer.Alive() || r.Session.Process.Alive())
}

// NotConfirmed counts the messages rung and not delivered: submitted, no
// evidence yet, or given up on.
func (r *Record) NotConfirmed() int {
	n := 0
	for id := range r.Rung {
		if r.Confirmed[id].IsZero() {
			n++
		}
	}
	return n
}

// NotAnswered counts the messages submitted (the session took a doorbell
// naming them in) and not yet delivered.
func (r *Record) NotAnswered() int {
	n := 0
	for id := range r.Submitted {
		if r.Confirmed[id].IsZero() {
			n++
		}
	}
	return n
}

// takeOver is the record a new deliverer of the same session starts
// from: what the last one recorded (was), with the new deliverer's own
// facts (now). Per message nothing goes back: rung, submitted, delivered
// and given up stay (the earliest evidence wins); the bells still
// awaiting an answer are awaited again; what waits is the new
// deliverer's to say. A record of another session (another process, or
// one that ended) is not taken over.
func takeOver(was, now *Record) *Record {
	if was == nil || !was.Ended.IsZero() || was.Session.Process != now.Session.Process {
		return now
	}
	out := *now
	out.Rings, out.LastRing = was.Rings, was.LastRing
	out.Rung = mergeTimes(was.Rung, now.Rung, false)
	out.Confirmed = mergeTimes(was.Confirmed, now.Confirmed, true)
	out.Submitted = mergeTimes(was.Submitted, now.Submitted, true)
	out.Unconfirmed = mergeTimes(was.Unconfirmed, now.Unconfirmed, true)
	out.Hooked = mergeTimes(was.Hooked, now.Hooked, true)
	out.Bells = append(slices.Clone(was.Bells), now.Bells...)
	out.SessionIDs = slices.Clone(was.SessionIDs)
	for _, id := range now.SessionIDs {
		if !slices.Contains(out.SessionIDs, id) {
			out.SessionIDs = append(out.SessionIDs, id)
		}
	}
	return &out
}

// mergeTimes is the union of a and b; where both hold an id, the earlier
// time when earliest, else the later.
func mergeTimes(a, b map[string]time.Time, earliest bool) map[string]time.Time {
	out := make(map[string]time.Time, len(a)+len(b))
	for _, m := range []map[string]time.Time{a, b} {
		for id, at := range m {
			was, ok := out[id]
			if !ok || earliest && at.Before(was) || !earliest && at.After(was) {
				out[id] = at
			}
		}
	}
	return out
}

// name is the record's file name.
func (r *Record) name() string {
	return r.Session.Runtime + "-" + itoa(r.Session.Process.PID) + ".json"
}

// maxRung bounds the ids a record keeps: past it, ids no longer unread
// are forgotten first.
const maxRung = 2000

// recordDir opens (and with create, makes) the agent's folder of records.
func recordDir(root *chipset.Root, agent string, create bool) (*durable.Dir, error) {
	if !create {
		return root.Dir(Dir + "/" + agent)
	}
	r, err := root.Open(true)
	if err != nil {
		return nil, err
	}
	return r.MkdirAll(Dir + "/" + agent)
}

// save writes the record (atomic, not fsynced: runtime state).
func (r *Record) save(d *durable.Dir) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return d.ReplaceEphemeral(r.name(), append(data, '\n'))
}

// lock takes the lock that makes one deliverer per session: it is held
// until the returned function is called (or the process ends). A lock
// another process holds is ErrRunning. The lock file is removed when the
// lock is let go, so a session leaves nothing behind; a taker that opened
// the file just before it was removed locks a name no longer there, sees
// so (the name no longer leads to the file it locked), and tries again
// with a new file: two takers never both hold the lock.
func lock(d *durable.Dir, name string) (unlock func(), err error) {
	unlock, err = d.TryLockFile("." + strings.TrimSuffix(name, ".json") + ".lock")
	if errors.Is(err, durable.ErrLocked) {
		return nil, ErrRunning
	}
	return unlock, err
}

// ErrRunning is returned by [Deliverer.Run] when another deliverer already
// serves the session: a second SessionStart (/clear, /resume) starts a
// second one, which leaves.
var ErrRunning = errors.New("live: a deliverer already serves this session")

// Records returns the records of agent's deliverers, live or not, oldest
// first; a record that does not parse is skipped.
func Records(s *maildir.Store, agent string) ([]*Record, error) {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return nil, err
	}
	root := s.Root()
	d, err := recordDir(root, agent, false)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	if err := d.Each(func(e fs.DirEntry) {
		if !strings.HasPrefix(e.Name(), ".") && strings.HasSuffix(e.Name(), ".json") && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}); err != nil {
		return nil, err
	}
	var recs []*Record
	for _, name := range names {
		if r, err := readRecord(d, name); err == nil {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b *Record) int { return a.Started.Compare(b.Started) })
	return recs, nil
}

// readRecord reads the record called name in d.
func readRecord(d *durable.Dir, name string) (*Record, error) {
	data, _, err := d.ReadFile(name, 1<<20)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Agents returns the agents that have deliverer records.
func Agents(s *maildir.Store) ([]string, error) {
	root := s.Root()
	d, err := root.Dir(Dir)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var agents []string
	err = d.Each(func(e fs.DirEntry) {
		if e.IsDir() && maildir.ValidAgent(e.Name()) {
			agents = append(agents, e.Name())
		}
	})
	slices.Sort(agents)
	return agents, err
}

// Prune removes the records of sessions that no longer run, but for
// those that ended in the last keptFor with receipts to give, and with
// them the evidence files no record awaits any more. A record whose
// deliverer died while its session runs stays: the session's next
// deliverer takes it over (see takeOver), and its receipts stand.
func Prune(s *maildir.Store, agent string) error {
	recs, err := Records(s, agent)
	if err != nil {
		return err
	}
	root := s.Root()
	d, err := recordDir(root, agent, false)
	if d == nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer d.Close()
	awaited := map[string]bool{}
	for _, r := range recs {
		if stale(r, time.Now()) {
			if err := d.Remove(r.name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("live: pruning %s: %w", r.name(), err)
			}
			d.Remove("." + strings.TrimSuffix(r.name(), ".json") + ".lock")
			continue
		}
		for _, b := range r.Bells {
			awaited[b.Nonce] = true
		}
	}
	// Evidence no record awaits: of pruned records, or left after its
	// bell was done. A file of the last moment may be of a bell not yet
	// saved: it stays for the next prune.
	var orphans []string
	d.Each(func(e fs.DirEntry) {
		if n, _, ok := evidenceName(e.Name()); ok && !awaited[n] {
			if st, err := d.Lstat(e.Name()); err == nil && time.Since(st.ModTime) > time.Minute {
				orphans = append(orphans, e.Name())
			}
		}
	})
	for _, name := range orphans {
		d.Remove(name)
	}
	return nil
}

// stale reports whether r is a record no receipt needs any more: its
// session no longer runs, and it ended (or, its deliverer killed, was
// last updated) more than keptFor before now.
func stale(r *Record, now time.Time) bool {
	if r.SessionLive() {
		return false
	}
	end := r.Ended
	if end.IsZero() {
		end = r.Updated
	}
	return now.Sub(end) > keptFor
}
