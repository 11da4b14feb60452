package live

import (
	"context"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// What became of a copy's doorbell, as [WaitDelivered] reports it.
const (
	// Delivered: the session gave evidence, from inside it, that a
	// doorbell naming the copy became the model's input (its prompt hook
	// saw the doorbell's nonce, or the runtime's transcript shows it sent
	// to the model).
	Delivered = "delivered"
	// Read: the copy was read before any doorbell naming it was
	// confirmed: the agent has it, whatever became of the doorbell.
	Read = "read"
	// Rung: a doorbell naming the copy was written into the session, with
	// no evidence yet that the model saw it. Final when Why says the
	// deliverer gave up after its re-rings.
	Rung = "rung"
	// Held: the deliverer holds the doorbell: do not disturb, batching,
	// spacing, a retry, or the session holds messages from other
	// processes for review.
	Held = "held"
	// Refused: the session refuses messages from other processes.
	Refused = "refused"
	// NoSession: no live session of the agent: the hooks or a poll will
	// show the mail.
	NoSession = "none"
)

// A Receipt says what became of one copy's doorbell. The mail itself is
// in the mailbox either way: a receipt is about the doorbell, not the
// message.
type Receipt struct {
	Agent   string    `json:"agent"`
	ID      string    `json:"id"`
	Live    string    `json:"live"`             // Delivered, Read, Rung, Held, Refused or NoSession
	Why     string    `json:"why,omitempty"`    // for Held and Refused: why; for Rung: how long it waited, or that it was given up on
	At      time.Time `json:"at,omitzero"`      // for Delivered: when the evidence was seen; for Rung: when it was last rung
	Session string    `json:"session,omitzero"` // for Delivered and Rung: the runtime and pid, e.g. claude-4242
	// Final says waiting longer cannot change the answer.
	Final bool `json:"final"`
}

// receiptPoll is how often WaitDelivered looks at the records again.
const receiptPoll = 50 * time.Millisecond

// WaitDelivered reports, for each copy in sent that sits in an agent's
// mailbox, what became of its doorbell, waiting until every answer is
// final or ctx ends (then the error is ctx.Err()). Final answers:
// Delivered, Read, Refused, NoSession, and Rung once the deliverer gave up
// on evidence.
func WaitDelivered(ctx context.Context, s *maildir.Store, sent []*maildir.Message) ([]Receipt, error) {
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
				continue
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
			if !r.Final {
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

// receipt is one copy's answer from its agent's records, the best answer
// any live deliverer of the agent gives.
func receipt(s *maildir.Store, agent, id string, recs []*Record) Receipt {
	best := Receipt{Agent: agent, ID: id, Live: NoSession, Final: true}
	rank := map[string]int{NoSession: 0, Held: 1, Refused: 2, Rung: 3, Read: 4, Delivered: 5}
	better := func(r Receipt) {
		if rank[r.Live] > rank[best.Live] || best.Live == NoSession {
			best = r
		}
	}
	for _, rec := range recs {
		session := rec.Session.Runtime + "-" + itoa(rec.Session.Process.PID)
		r := Receipt{Agent: agent, ID: id}
		if !rec.Live() {
			// A session that ended keeps the answers it had (see
			// Record.Ended), for keptFor. So does one whose deliverer died
			// without marking its end (killed: a runtime that ends its
			// children so, a machine under load), from its last update:
			// the evidence it recorded was evidence when it was recorded.
			end := rec.Ended
			if end.IsZero() {
				end = rec.Updated
			}
			switch {
			case end.IsZero() || time.Since(end) > keptFor:
				continue
			case !rec.Confirmed[id].IsZero():
				r.Live, r.At, r.Session, r.Final = Delivered, rec.Confirmed[id], session, true
			case !rec.Rung[id].IsZero():
				r.Live, r.At, r.Session, r.Final = Rung, rec.Rung[id], session, true
				r.Why = "its deliverer ended with no evidence the model saw it (the mail waits in the mailbox)"
				if rec.Ended.IsZero() {
					r.Why = "its deliverer died with no evidence the model saw it (the mail waits in the mailbox)"
				}
			default:
				continue
			}
			better(r)
			continue
		}
		switch {
		case !rec.Confirmed[id].IsZero():
			r.Live, r.At, r.Session, r.Final = Delivered, rec.Confirmed[id], session, true
		case !rec.Unconfirmed[id].IsZero():
			r.Live, r.At, r.Session, r.Final = Rung, rec.Rung[id], session, true
			r.Why = "no evidence the model saw it; given up after the re-rings (the mail waits in the mailbox)"
		case !rec.Rung[id].IsZero():
			r.Live, r.At, r.Session = Rung, rec.Rung[id], session
			r.Why = "written into the session, not yet confirmed"
		case rec.Held[id] == "refused by the session":
			r.Live, r.Why, r.Final = Refused, rec.Held[id], true
		default:
			r.Live, r.Why = Held, rec.Held[id]
			if r.Why == "" {
				r.Why = "not yet rung"
			}
		}
		better(r)
	}
	if best.Live != Delivered && best.Live != NoSession {
		if m, err := s.Get(maildir.Address{Kind: maildir.KindAgent, Name: agent}, id); err == nil && m.Read {
			return Receipt{Agent: agent, ID: id, Live: Read, Final: true}
		}
	}
	return best
}

// Summary counts receipts by their Live state, in a fixed order, for a
// one-line report: "2 delivered, 1 rung".
func Summary(rs []Receipt) string {
	n := map[string]int{}
	for _, r := range rs {
		n[r.Live]++
	}
	out := ""
	for _, k := range []string{Delivered, Read, Rung, Held, Refused, NoSession} {
		if n[k] > 0 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%d %s", n[k], k)
		}
	}
	return out
}
