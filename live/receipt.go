package live

import (
	"context"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// What became of a copy's doorbell, as [WaitDelivered] reports it.
const (
	Delivered = "delivered" // a live session took a doorbell naming it
	Held      = "held"      // a live session's deliverer holds it: do not disturb, batching, a retry, or the session's review
	NoSession = "none"      // no live session of the agent: the hooks or a poll will show it
)

// A Receipt says whether one delivered copy reached a live session. The
// mail itself is in the mailbox either way: a receipt is about the
// doorbell, not the message.
type Receipt struct {
	Agent   string    `json:"agent"`
	ID      string    `json:"id"`
	Live    string    `json:"live"`             // Delivered, Held or NoSession
	Why     string    `json:"why,omitempty"`    // for Held: dnd, batched, retrying, held by the session
	At      time.Time `json:"at,omitzero"`      // for Delivered: when
	Session string    `json:"session,omitzero"` // for Delivered: the runtime and pid, e.g. claude-4242
}

// receiptPoll is how often WaitDelivered looks at the records again.
const receiptPoll = 50 * time.Millisecond

// WaitDelivered reports, for each copy in sent that sits in an agent's
// mailbox, whether a live session of the agent was rung about it. A copy
// whose agent has no live deliverer is NoSession at once; the others are
// waited for until every one is Delivered or ctx ends (then the ones
// still waiting are Held, and the error is ctx.Err()).
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
		for _, i := range idx {
			r := &out[i]
			if r.Live == Delivered || r.Live == NoSession {
				continue
			}
			recs, err := Records(s, r.Agent)
			if err != nil {
				return out, err
			}
			live := 0
			for _, rec := range recs {
				if !rec.Live() {
					continue
				}
				live++
				if at := rec.Rung[r.ID]; !at.IsZero() {
					r.Live, r.At, r.Why = Delivered, at, ""
					r.Session = rec.Session.Runtime + "-" + itoa(rec.Session.Process.PID)
					break
				}
				if why := rec.Held[r.ID]; why != "" {
					r.Why = why
				}
			}
			switch {
			case live == 0:
				r.Live, r.Why = NoSession, ""
			case r.Live != Delivered:
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
