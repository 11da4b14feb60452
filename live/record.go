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

// A Record is what a running deliverer publishes of itself and of what it
// rang, for "mailfs live list" and for senders' receipts
// ("send --wait-for delivered"). It is rewritten after every ring.
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
	// Confirmed: message id -> when the session gave evidence that a
	// doorbell naming it became the model's input (its prompt hook saw
	// the doorbell's nonce, or the runtime's own transcript shows it sent
	// to the model). Only this is "delivered".
	Confirmed map[string]time.Time `json:"confirmed,omitempty"`
	// Bells are the doorbells written and not yet confirmed, newest last.
	Bells []Bell `json:"bells,omitempty"`
	// Unconfirmed: message id -> when the deliverer gave up on evidence
	// for it, after MaxRings doorbells named it (the mail still waits in
	// the mailbox, for the hooks and the agent's next look).
	Unconfirmed map[string]time.Time `json:"unconfirmed,omitempty"`
	Error       string               `json:"error,omitempty"`
	// Ended is when the session ended, for a record kept after it (see
	// keptFor): what its doorbells became stays there for senders still
	// waiting on a receipt.
	Ended time.Time `json:"ended,omitzero"`
}

// keptFor is how long the record of a session that ended is kept when it
// has receipts to give; a record with none goes when its session does.
const keptFor = time.Hour

// A Bell is one doorbell written into the session and not yet confirmed.
type Bell struct {
	Nonce  string    `json:"nonce"`            // its RingMark: fresh for each ring
	At     time.Time `json:"at"`               // when it was written
	IDs    []string  `json:"ids"`              // the messages it names
	Queued bool      `json:"queued,omitempty"` // the runtime shows it queued for the model (Claude Code's transcript)
	Again  bool      `json:"again,omitempty"`  // its messages were handed to a later doorbell
}

// Live reports whether the record's deliverer still runs its session.
func (r *Record) Live() bool { return r.Ended.IsZero() && r.Deliverer.Alive() }

// NotConfirmed counts the messages rung with no evidence yet, or given up
// on: "rung", not "delivered".
func (r *Record) NotConfirmed() int {
	n := 0
	for id := range r.Rung {
		if r.Confirmed[id].IsZero() {
			n++
		}
	}
	return n
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
	root, err := chipset.New(s.Dir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
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
		data, _, err := d.ReadFile(name, 1<<20)
		if err != nil {
			continue
		}
		var r Record
		if json.Unmarshal(data, &r) != nil {
			continue
		}
		recs = append(recs, &r)
	}
	slices.SortFunc(recs, func(a, b *Record) int { return a.Started.Compare(b.Started) })
	return recs, nil
}

// Agents returns the agents that have deliverer records.
func Agents(s *maildir.Store) ([]string, error) {
	root, err := chipset.New(s.Dir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
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

// Prune removes the records of deliverers that no longer run, but for
// those of sessions that ended in the last keptFor with receipts to give.
func Prune(s *maildir.Store, agent string) error {
	recs, err := Records(s, agent)
	if err != nil || len(recs) == 0 {
		return err
	}
	root, err := chipset.New(s.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := recordDir(root, agent, false)
	if d == nil {
		return err
	}
	defer d.Close()
	for _, r := range recs {
		if !r.Live() && (r.Ended.IsZero() || time.Since(r.Ended) > keptFor) {
			if err := d.Remove(r.name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("live: pruning %s: %w", r.name(), err)
			}
			d.Remove("." + strings.TrimSuffix(r.name(), ".json") + ".lock")
		}
	}
	return nil
}
