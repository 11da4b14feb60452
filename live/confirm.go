package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// newNonce returns a fresh nonce for a RingMark.
func newNonce() string {
	b := make([]byte, hook.NonceLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// evidenceFiles reads the evidence files in d: nonce -> when, for those
// answered and for those submitted.
func evidenceFiles(d *durable.Dir) (answered, submitted map[string]time.Time) {
	answered, submitted = map[string]time.Time{}, map[string]time.Time{}
	d.Each(func(e fs.DirEntry) {
		n, suffix, ok := evidenceName(e.Name())
		if !ok || !e.Type().IsRegular() {
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
		into := submitted
		if suffix == hook.AnsweredSuffix {
			into = answered
		}
		if was, ok := into[n]; !ok || at.Before(was) {
			into[n] = at
		}
	})
	return answered, submitted
}

// evidenceName splits an evidence file's name into its nonce and suffix.
func evidenceName(name string) (nonce, suffix string, ok bool) {
	for _, suffix := range []string{hook.SubmittedSuffix, hook.AnsweredSuffix, hook.SeenSuffix} {
		if n, ok := strings.CutSuffix(name, suffix); ok && hook.ValidNonce(n) {
			return n, suffix, true
		}
	}
	return "", "", false
}

// removeEvidence removes every evidence file of nonce.
func removeEvidence(d *durable.Dir, nonce string) {
	for _, suffix := range []string{hook.SubmittedSuffix, hook.AnsweredSuffix, hook.SeenSuffix} {
		d.Remove(nonce + suffix)
	}
}

// evidence gathers what says the pending bells were submitted or answered:
// the evidence files, and the door's own records where it keeps any.
func (st *run) evidence(ctx context.Context) (answered, submitted map[string]time.Time) {
	answered, submitted = evidenceFiles(st.dir)
	c, ok := st.d.Door.(Confirmer)
	if !ok {
		return answered, submitted
	}
	var want []string
	for _, b := range st.rec.Bells {
		if _, ok := answered[b.Nonce]; !ok {
			want = append(want, b.Nonce)
		}
	}
	if len(want) == 0 {
		return answered, submitted
	}
	got, err := c.Evidence(ctx, want)
	if err != nil {
		st.d.warn(err)
	}
	now := time.Now()
	for n, at := range got.Seen {
		answered[n] = at
	}
	for n := range got.Queued {
		if _, ok := submitted[n]; !ok {
			submitted[n] = now
		}
	}
	return answered, submitted
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

// A look is what the deliverer knows when it judges its doorbells: no
// file, socket or clock is read while judging, so the judgement is tested
// by a table (see judge).
type look struct {
	now   time.Time
	bells []Bell // the doorbells awaiting an answer, oldest first
	// answered: nonce -> when the runtime's own record showed the model
	// produced output for a turn whose input held it (Evidence.Seen).
	answered map[string]time.Time
	// submitted: nonce -> when the session showed it took it in, not yet
	// answered (Evidence.Queued, the prompt hook's files).
	submitted map[string]time.Time
	busy      bool                 // the session is busy, or ending: nothing rings again now
	tries     map[string]int       // message id -> doorbells that named it
	last      map[string]string    // message id -> the nonce of the last doorbell that named it
	delivered map[string]time.Time // message ids already delivered
	wait      time.Duration        // ConfirmWait
	maxRings  int                  // MaxRings
}

// A verdict is what judge decided: what each answered or submitted
// doorbell's messages became, which ring again, which are given up on.
// The deliverer acts on it (see run.confirm) and re-checks, as it acts,
// what it relies on: a message to ring again is still unread.
type verdict struct {
	// confirmed: message id -> when the model answered a doorbell naming
	// it: delivered.
	confirmed map[string]time.Time
	// submitted: message id -> when a doorbell naming it was taken in,
	// with no answer yet.
	submitted map[string]time.Time
	// again: messages of a doorbell with no evidence after wait, in a
	// session neither busy nor showing it taken in, named by fewer than
	// maxRings doorbells: they ring again with a fresh nonce.
	again []string
	// unconfirmed: messages past maxRings doorbells with no evidence:
	// given up on, the mail left to the hooks and the agent's look.
	unconfirmed []string
	// forgotten: messages of a doorbell unanswered for bellLife that no
	// later doorbell named: given up on too.
	forgotten []string
	// bells are the doorbells still awaiting an answer; done the nonces
	// answered or forgotten, whose evidence files go.
	bells []Bell
	done  []string
	// changed says the record changed.
	changed bool
}

// judge decides what the evidence means for each doorbell awaiting an
// answer (see the package doc's evidence rule): answered, its messages
// are delivered and the bell is done; taken in, they are submitted and it
// is not rung again; with no evidence for bellLife it is forgotten; with
// none after wait, in a session not busy, its messages ring again (the
// ones no later doorbell named), up to maxRings doorbells a message.
func judge(l look) verdict {
	v := verdict{confirmed: map[string]time.Time{}, submitted: map[string]time.Time{}}
	for _, b := range l.bells {
		if at, ok := l.answered[b.Nonce]; ok {
			for _, id := range b.IDs {
				if _, done := l.delivered[id]; !done {
					if was, ok := v.confirmed[id]; !ok || at.Before(was) {
						v.confirmed[id] = at
					}
				}
			}
			v.done, v.changed = append(v.done, b.Nonce), true
			continue
		}
		if at, ok := l.submitted[b.Nonce]; ok && b.Submitted.IsZero() {
			b.Submitted, b.Queued, v.changed = at.UTC(), true, true
		}
		if !b.Submitted.IsZero() {
			for _, id := range b.IDs {
				if _, done := l.delivered[id]; !done {
					v.submitted[id] = b.Submitted
				}
			}
		}
		if l.now.Sub(b.At) > bellLife {
			for _, id := range b.IDs {
				if _, done := l.delivered[id]; !done && l.last[id] == b.Nonce {
					v.forgotten = append(v.forgotten, id)
				}
			}
			v.done, v.changed = append(v.done, b.Nonce), true
			continue
		}
		if !b.Again && !b.Queued && b.Submitted.IsZero() && !l.busy && l.now.Sub(b.At) >= l.wait {
			b.Again, v.changed = true, true
			for _, id := range b.IDs {
				if _, done := l.delivered[id]; done || l.last[id] != b.Nonce {
					continue // delivered, or a later doorbell named it
				}
				if l.tries[id] >= l.maxRings {
					v.unconfirmed = append(v.unconfirmed, id)
				} else {
					v.again = append(v.again, id)
				}
			}
		}
		v.bells = append(v.bells, b)
	}
	// A message a later bell answered is not submitted by an earlier one.
	for id := range v.confirmed {
		delete(v.submitted, id)
	}
	return v
}

// confirm takes in the evidence for the doorbells awaiting an answer,
// judges it (judge), and acts on the verdict: it records what was
// delivered, submitted and given up on, hands messages to ring again to
// the next doorbell (those still unread as it looks), removes the
// evidence of bells done, and saves the record when anything changed.
func (st *run) confirm(ctx context.Context, final bool) {
	if len(st.rec.Bells) == 0 {
		return
	}
	answered, submitted := st.evidence(ctx)
	now := time.Now()
	v := judge(look{now: now, bells: st.rec.Bells, answered: answered, submitted: submitted,
		busy: st.rec.Session.Status == "busy" || final, tries: st.tries, last: st.last,
		delivered: st.rec.Confirmed, wait: st.confirmWait, maxRings: st.maxRings})
	st.rec.Bells = v.bells
	for id, at := range v.confirmed {
		st.rec.Confirmed[id] = at.UTC()
		delete(st.rec.Unconfirmed, id)
		delete(st.rec.Submitted, id)
		if p, ok := st.waiting[id]; ok && p.again {
			delete(st.waiting, id) // an earlier doorbell got through after all
		}
	}
	for id, at := range v.submitted {
		if st.rec.Submitted[id].IsZero() {
			st.rec.Submitted[id] = at.UTC()
		}
	}
	for _, id := range append(v.unconfirmed, v.forgotten...) {
		st.rec.Unconfirmed[id] = now.UTC()
	}
	box := maildir.Address{Kind: maildir.KindAgent, Name: st.agent}
	for _, id := range v.again {
		m, err := st.d.Store.Get(box, id)
		if err != nil || m.Read {
			continue // read or gone: nothing to ring about
		}
		st.waiting[id] = pending{m: m, since: now, again: true}
	}
	for _, n := range v.done {
		removeEvidence(st.dir, n)
	}
	// Evidence of doorbells no longer waited for (answered late, or of a
	// deliverer that ended) is removed once it is old.
	for _, ev := range []map[string]time.Time{answered, submitted} {
		for n, at := range ev {
			if now.Sub(at) > bellLife {
				removeEvidence(st.dir, n)
			}
		}
	}
	if v.changed && !final {
		st.rec.Updated = now.UTC()
		if err := st.rec.save(st.dir); err != nil {
			st.d.warn(err)
		}
	}
}

// end is the deliverer's last look, once its session ended (or it was
// stopped): the evidence the session left (a turn that ended the session
// may have answered a doorbell moments before) is taken in, and the
// record is kept, marked Ended when the session ended, when it holds
// receipts: a sender still waiting learns what was delivered. A deliverer
// stopped while its session lives (its context ended) leaves the record
// unended, for the next deliverer of the session to take over. It reports
// whether it kept the record.
func (st *run) end(ctx context.Context, sessionEnded bool) bool {
	st.confirm(ctx, true)
	if len(st.rec.Confirmed) == 0 && len(st.rec.Rung) == 0 && !slices.Contains(slices.Collect(maps.Values(st.rec.Held)), refusedWhy) {
		return false
	}
	if sessionEnded {
		// What waited waits no more, but for what the session refused:
		// that is its final answer.
		st.rec.Ended = time.Now().UTC()
		maps.DeleteFunc(st.rec.Held, func(_, why string) bool { return why != refusedWhy })
	}
	st.rec.Updated = time.Now().UTC()
	if err := st.rec.save(st.dir); err != nil {
		st.d.warn(err)
		return false
	}
	return true
}
