package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// seenSuffix names the files a session's hooks leave in the agent's record
// folder, runtime/live/<agent>/<nonce>.seen: one per doorbell the hook saw
// in a prompt, for the deliverer to take as evidence and remove.
const seenSuffix = ".seen"

// Confirm records that a session of agent took in the doorbells with these
// nonces: its prompt hook saw them in the prompt the runtime is about to
// send to the model (hook.Handler.Doorbells calls it). Where no deliverer
// of agent has ever run (no record folder) nothing waits for the evidence
// and nothing is written. Nonces that are not a RingMark's are ignored.
func Confirm(s *maildir.Store, agent string, nonces []string) error {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return err
	}
	root, err := chipset.New(s.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := recordDir(root, agent, false)
	if d == nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer d.Close()
	now := []byte(time.Now().UTC().Format(time.RFC3339Nano) + "\n")
	for _, n := range nonces {
		if !validNonce(n) {
			continue
		}
		if err := d.ReplaceEphemeral(n+seenSuffix, now); err != nil {
			return err
		}
	}
	return nil
}

// validNonce reports whether n could be a RingMark's nonce: a file name
// made of it stays inside the record folder.
func validNonce(n string) bool {
	if len(n) != nonceLen {
		return false
	}
	for _, c := range n {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// newNonce returns a fresh nonce for a RingMark.
func newNonce() string {
	b := make([]byte, nonceLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// nonceLen is the length of a nonce in hex digits (64 random bits).
const nonceLen = 16

// seenFiles reads the evidence the hooks left in d: nonce -> when.
func seenFiles(d *durable.Dir) map[string]time.Time {
	out := map[string]time.Time{}
	d.Each(func(e fs.DirEntry) {
		n, ok := strings.CutSuffix(e.Name(), seenSuffix)
		if !ok || !validNonce(n) || !e.Type().IsRegular() {
			return
		}
		data, _, err := d.ReadFile(e.Name(), 128)
		if err != nil {
			return
		}
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
		if err != nil {
			st, serr := d.Lstat(e.Name())
			if serr != nil {
				return
			}
			at = st.ModTime
		}
		out[n] = at
	})
	return out
}

// evidence gathers what says the pending bells reached the model: the
// hooks' files, and the door's own records where it keeps any.
func (st *run) evidence(ctx context.Context) Evidence {
	ev := Evidence{Seen: seenFiles(st.dir), Queued: map[string]bool{}}
	c, ok := st.d.Door.(Confirmer)
	if !ok {
		return ev
	}
	var want []string
	for _, b := range st.rec.Bells {
		if _, ok := ev.Seen[b.Nonce]; !ok {
			want = append(want, b.Nonce)
		}
	}
	if len(want) == 0 {
		return ev
	}
	got, err := c.Evidence(ctx, want)
	if err != nil {
		st.d.warn(err)
	}
	for n, at := range got.Seen {
		ev.Seen[n] = at
	}
	for n := range got.Queued {
		ev.Queued[n] = true
	}
	return ev
}

// young reports whether a doorbell rang recently enough that its evidence
// is looked for every confirmPoll, rather than at each Check.
func (st *run) young(now time.Time) bool {
	for _, b := range st.rec.Bells {
		if !b.Again && now.Sub(b.At) < confirmFast {
			return true
		}
	}
	return false
}

// confirm takes in the evidence for the doorbells written and not yet
// confirmed: the messages of a doorbell seen become Confirmed. A doorbell
// with no evidence after confirmWait, which the runtime shows neither
// queued nor its session busy, hands its unread messages to the next
// doorbell, up to maxRings doorbells per message; past that they are
// recorded Unconfirmed. The record is saved when anything changed.
func (st *run) confirm(ctx context.Context, final bool) {
	if len(st.rec.Bells) == 0 {
		return
	}
	ev := st.evidence(ctx)
	now := time.Now()
	changed := false
	box := maildir.Address{Kind: maildir.KindAgent, Name: st.agent}
	keep := st.rec.Bells[:0]
	for _, b := range st.rec.Bells {
		if at, ok := ev.Seen[b.Nonce]; ok {
			for _, id := range b.IDs {
				if _, done := st.rec.Confirmed[id]; !done {
					st.rec.Confirmed[id] = at.UTC()
				}
				delete(st.rec.Unconfirmed, id)
				if p, ok := st.waiting[id]; ok && p.again {
					delete(st.waiting, id) // an earlier doorbell got through after all
				}
			}
			st.dir.Remove(b.Nonce + seenSuffix)
			changed = true
			continue
		}
		if ev.Queued[b.Nonce] && !b.Queued {
			b.Queued, changed = true, true
		}
		if now.Sub(b.At) > bellLife {
			// No evidence in all that time: what it named, and no later
			// doorbell named, is given up on.
			for _, id := range b.IDs {
				if _, done := st.rec.Confirmed[id]; !done && st.last[id] == b.Nonce {
					st.rec.Unconfirmed[id] = now.UTC()
				}
			}
			changed = true
			continue
		}
		keep = append(keep, b)
	}
	st.rec.Bells = keep
	busy := st.rec.Session.Status == "busy" || final
	for i := range st.rec.Bells {
		b := &st.rec.Bells[i]
		if b.Again || b.Queued || busy || now.Sub(b.At) < st.confirmWait {
			continue
		}
		b.Again, changed = true, true
		for _, id := range b.IDs {
			if _, done := st.rec.Confirmed[id]; done || st.last[id] != b.Nonce {
				continue // confirmed, or a later doorbell named it
			}
			m, err := st.d.Store.Get(box, id)
			if err != nil || m.Read {
				continue // read or gone: nothing to ring about
			}
			if st.tries[id] >= st.maxRings {
				st.rec.Unconfirmed[id] = now.UTC()
				continue
			}
			st.waiting[id] = pending{m: m, since: now, again: true}
		}
	}
	// Evidence of doorbells no longer waited for (answered late, or of a
	// deliverer that ended) is removed once it is old.
	for n, at := range ev.Seen {
		if now.Sub(at) > bellLife {
			st.dir.Remove(n + seenSuffix)
		}
	}
	if changed && !final {
		st.rec.Updated = now.UTC()
		if err := st.rec.save(st.dir); err != nil {
			st.d.warn(err)
		}
	}
}

// end is the deliverer's last look, once its session ended (or it was
// stopped): the evidence
// the session left (a turn that ended the session may have given the model
// a doorbell moments before) is taken in, and the record is kept, marked
// Ended, when it holds receipts: a sender still waiting learns what was
// delivered. It reports whether it kept the record.
func (st *run) end(ctx context.Context) bool {
	st.confirm(ctx, true)
	if len(st.rec.Confirmed) == 0 && len(st.rec.Rung) == 0 {
		return false
	}
	st.rec.Ended = time.Now().UTC()
	st.rec.Updated = st.rec.Ended
	st.rec.Held = nil
	if err := st.rec.save(st.dir); err != nil {
		st.d.warn(err)
		return false
	}
	return true
}
