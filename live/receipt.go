package live

import (
	"context"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// What became of a copy's doorbell, as [WaitDelivered] reports it. The
// evidence rule (docs/live-delivery.md): only the runtime's own record of
// the model's output for a turn whose input held the doorbell is
// Delivered; the session taking the doorbell in is Submitted.
const (
	// Delivered: the runtime's own record shows the model produced
	// output (an assistant event) for a turn whose input held a doorbell
	// naming the copy: Claude Code's transcript, Qwen Code's chat record,
	// or a runtime plugin's report of the answer (see Answered).
	Delivered = "delivered"
	// Submitted: the session took a doorbell naming the copy in as
	// input — its prompt hook saw the ring mark, the runtime queued it
	// or wrote it as a user line — and the model has not answered it
	// (yet): the model may never be called (an endpoint down, a session
	// killed first). For a runtime that keeps no record of the model's
	// output, the strongest answer there is.
	Submitted = "submitted"
	// Read: the copy was read before any doorbell naming it was
	// delivered: the agent has it, whatever became of the doorbell.
	Read = "read"
	// Rung: a doorbell naming the copy was written into the session, with
	// no evidence yet that the session took it in.
	Rung = "rung"
	// Held: the deliverer holds the doorbell: do not disturb, batching,
	// spacing, a retry, or the session holds messages from other
	// processes for review; or no doorbell will name the copy (it was in
	// the mailbox when the session started: the session-start hook
	// showed it; or the session's hooks showed it in the turn before any
	// doorbell named it), then final.
	Held = "held"
	// Refused: the session refuses messages from other processes (its
	// settings, looked at again before each try).
	Refused = "refused"
	// NoSession: no session of the agent runs, nor ran with a deliverer
	// in the last hour: the hooks or a poll will show the mail.
	NoSession = "none"
)

// A Receipt says what became of one copy's doorbell. The mail itself is
// in the mailbox either way: a receipt is about the doorbell, not the
// message.
type Receipt struct {
	Agent   string    `json:"agent"`
	ID      string    `json:"id"`
	Live    string    `json:"live"`             // Delivered, Submitted, Read, Rung, Held, Refused or NoSession
	Why     string    `json:"why,omitempty"`    // for Held and Refused: why; for Submitted and Rung: what it waits for, or that it was given up on
	At      time.Time `json:"at,omitzero"`      // for Delivered: when the answer was seen; for Submitted: when it was taken in; for Rung: when it was last rung
	Session string    `json:"session,omitzero"` // for Delivered, Submitted and Rung: the runtime and pid, e.g. claude-4242
	// Final says waiting longer cannot change the answer.
	Final bool `json:"final"`
}

// receiptPoll is how often WaitDelivered looks at the records again.
const receiptPoll = 50 * time.Millisecond

// WaitDelivered reports, for each copy in sent that sits in an agent's
// mailbox, what became of its doorbell, waiting until every answer is
// final or ctx ends (then the error is ctx.Err()). Final answers:
// Delivered, Read and NoSession; Submitted and Rung once the deliverer
// gave up on evidence or the session ended; Refused once the session
// ended; Held when no doorbell will name the copy. An answer, once final,
// stays final: later answers only advance it (to Read, or Delivered).
func WaitDelivered(ctx context.Context, s *maildir.Store, sent []*maildir.Message) ([]Receipt, error) {
	return wait(ctx, s, sent, func(r Receipt) bool { return r.Final })
}

// WaitSubmitted is WaitDelivered for runtimes whose strongest answer is
// Submitted (docs/agents.md says which): it waits until every answer is
// Submitted, Delivered or Read, or final.
func WaitSubmitted(ctx context.Context, s *maildir.Store, sent []*maildir.Message) ([]Receipt, error) {
	return wait(ctx, s, sent, func(r Receipt) bool { return r.Final || r.Live == Submitted })
}

// wait reports the copies' receipts once done says each is enough, or
// ctx ends (then the error is ctx.Err()).
func wait(ctx context.Context, s *maildir.Store, sent []*maildir.Message, done func(Receipt) bool) ([]Receipt, error) {
	var out []Receipt
	var idx []int
	for _, m := range sent {
		if m.Box.Kind != maildir.KindAgent {
			continue
		}
		idx = append(idx, len(out))
		out = append(out, Receipt{Agent: m.Box.Name, ID: m.ID, Live: Held})
	}
	for {
		waiting := 0
		// Each agent's records are read once a look, however many of its
		// copies wait.
		records := map[string][]*Record{}
		for _, i := range idx {
			r := &out[i]
			if r.Final {
				continue // a final answer is never looked at again: it stays final
			}
			recs, ok := records[r.Agent]
			if !ok {
				var err error
				if recs, err = Records(s, r.Agent); err != nil {
					return out, err
				}
				records[r.Agent] = recs
			}
			*r = receipt(s, r.Agent, r.ID, recs)
			if !done(*r) {
				waiting++
			}
		}
		if waiting == 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(receiptPoll):
		}
	}
}

// receipt is one copy's answer from its agent's records (see answer and
// best), Read where the copy was read and no record says delivered.
func receipt(s *maildir.Store, agent, id string, recs []*Record) Receipt {
	var arrived, stamp time.Time
	m, err := s.Get(maildir.Address{Kind: maildir.KindAgent, Name: agent}, id)
	if err == nil {
		if at, err := s.Arrived(m); err == nil {
			arrived, stamp = at, m.Timestamp
		}
	}
	now := time.Now()
	var answers []Receipt
	for _, rec := range recs {
		if r, ok := answer(seen{rec: rec, session: rec.SessionLive(), deliverer: rec.Live(), arrived: arrived, stamp: stamp, now: now}, id); ok {
			answers = append(answers, r)
		}
	}
	r := best(agent, id, answers)
	if r.Live != Delivered && err == nil && m.Read {
		return Receipt{Agent: agent, ID: id, Live: Read, Final: true}
	}
	return r
}

// seen is what answer is given of one record: the record, whether its
// session and its deliverer still run, when the copy arrived (zero:
// unknown) and its sender's stamp, and now. No file or clock is read
// while answering.
type seen struct {
	rec       *Record
	session   bool
	deliverer bool
	arrived   time.Time
	stamp     time.Time
	now       time.Time
}

// before reports whether the copy was in the mailbox before the record's
// deliverer began: as Deliverer.shownAtStart judges, by arrival, and
// within the clock's tick by the sender's stamp.
func (v seen) before() bool {
	m := v.rec.Mark
	return !v.arrived.IsZero() && !m.IsZero() && (v.arrived.Before(m) || v.arrived.Equal(m) && v.stamp.Before(v.rec.Started))
}

// answer is what one record says of copy id, and whether it says
// anything. While the session runs an answer is final only when nothing
// can change it but the copy being read: delivered; given up on; in the
// mailbox before the session's deliverer began (named by no doorbell).
// Once the session ended (or its deliverer was killed and the session is
// gone too) its answers are final, for keptFor.
func answer(v seen, id string) (Receipt, bool) {
	rec := v.rec
	r := Receipt{Agent: rec.Agent, ID: id, Session: rec.Session.Runtime + "-" + itoa(rec.Session.Process.PID)}
	if !v.session {
		end := rec.Ended
		if end.IsZero() {
			end = rec.Updated
		}
		if end.IsZero() || v.now.Sub(end) > keptFor {
			return Receipt{}, false
		}
		r.Final = true
		switch {
		case !rec.Confirmed[id].IsZero():
			r.Live, r.At = Delivered, rec.Confirmed[id]
		case !rec.Submitted[id].IsZero():
			r.Live, r.At = Submitted, rec.Submitted[id]
			r.Why = "the session ended before the model answered (the mail waits in the mailbox)"
		case !rec.Rung[id].IsZero():
			r.Live, r.At = Rung, rec.Rung[id]
			r.Why = "the session ended with no evidence it took the doorbell in (the mail waits in the mailbox)"
		case rec.Held[id] == refusedWhy:
			r.Live, r.Why = Refused, refusedWhy
		case !rec.Hooked[id].IsZero():
			r.Live, r.Why, r.Session = Held, hookedWhy, ""
		default:
			return Receipt{}, false
		}
		return r, true
	}
	switch {
	case !rec.Confirmed[id].IsZero():
		r.Live, r.At, r.Final = Delivered, rec.Confirmed[id], true
	case !rec.Unconfirmed[id].IsZero() && !rec.Submitted[id].IsZero():
		r.Live, r.At, r.Final = Submitted, rec.Submitted[id], true
		r.Why = "taken in by the session, no answer from the model; given up (the mail waits in the mailbox)"
	case !rec.Unconfirmed[id].IsZero():
		r.Live, r.At, r.Final = Rung, rec.Rung[id], true
		r.Why = "no evidence the session took it in; given up after the re-rings (the mail waits in the mailbox)"
	case !rec.Submitted[id].IsZero():
		r.Live, r.At = Submitted, rec.Submitted[id]
		r.Why = "taken in by the session; the model has not answered yet"
	case !rec.Rung[id].IsZero():
		r.Live, r.At = Rung, rec.Rung[id]
		r.Why = "written into the session, not yet taken in"
	case !rec.Hooked[id].IsZero():
		r.Live, r.Why, r.Final, r.Session = Held, hookedWhy, true, ""
	case rec.Held[id] == refusedWhy:
		r.Live, r.Why, r.Session = Refused, refusedWhy+" (tried again while the session runs)", ""
	case rec.Held[id] != "":
		r.Live, r.Why, r.Session = Held, rec.Held[id], ""
	case v.before():
		r.Live, r.Final, r.Session = Held, true, ""
		r.Why = "in the mailbox when the session's deliverer began: the session-start hook showed it; no doorbell names it"
	case v.deliverer:
		r.Live, r.Why, r.Session = Held, "not yet rung", ""
	default:
		r.Live, r.Session = Held, ""
		r.Why = "no deliverer serves the session now (it was killed): the session's hooks show the mail"
	}
	return r, true
}

// hookedWhy is why no doorbell names a copy the session's hooks showed
// first (see Record.Hooked).
const hookedWhy = "the session's hooks showed it in the turn (a post-tool or stop hook's note, or a prompt's): no doorbell names it"

// refusedWhy is why a copy waits when the session refuses other
// processes' messages.
const refusedWhy = "refused by the session"

// best merges the records' answers for one copy: the most advanced
// answer (delivered, submitted, rung, refused, held), final only when
// every answer is (a session still running may yet advance it), unless it
// is delivered; with no answer, NoSession.
func best(agent, id string, answers []Receipt) Receipt {
	out := Receipt{Agent: agent, ID: id, Live: NoSession, Final: true}
	rank := map[string]int{NoSession: 0, Held: 1, Refused: 2, Rung: 3, Submitted: 4, Delivered: 5}
	final := true
	for i, r := range answers {
		final = final && r.Final
		if i == 0 || rank[r.Live] > rank[out.Live] || rank[r.Live] == rank[out.Live] && !r.Final {
			out = r
		}
	}
	out.Final = out.Live == Delivered || final
	return out
}

// Summary counts receipts by their Live state, in a fixed order, for a
// one-line report: "2 delivered, 1 rung".
func Summary(rs []Receipt) string {
	n := map[string]int{}
	for _, r := range rs {
		n[r.Live]++
	}
	out := ""
	for _, k := range []string{Delivered, Submitted, Read, Rung, Held, Refused, NoSession} {
		if n[k] > 0 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%d %s", n[k], k)
		}
	}
	return out
}
