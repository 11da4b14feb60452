package townsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// The crew member's live session: a stand-in runtime (session) whose
// model is the project's stub (internal/stubmodel), rung by a real
// deliverer (package live) in this process, on alpha. The stub's request
// log is the ground truth: a receipt that says "delivered" must name mail
// whose doorbell the stub received.

// A session stands in for an agent runtime: a doorbell rung into it
// becomes the input of its next turn, which it sends to the model; only
// a turn the model answered goes into its transcript, the evidence it
// gives (live.Confirmer). Now and then a ring fails (the socket was busy)
// or the model cannot be reached (the turn is lost, as when an endpoint
// is down): neither may become a "delivered".
type session struct {
	model string // the model's base URL
	down  string // a URL where nothing listens: the model, down
	rng   func(n int) int

	mu         sync.Mutex
	input      []string             // rung, not yet sent to the model
	transcript map[string]time.Time // nonce -> when the model answered a turn holding it
	turns      int
	lost       int // turns the model never got
	wake       chan struct{}
	// hooked, if set, is the session's prompt hook: it runs with each
	// turn's ring marks before the turn goes to the model.
	hooked func(nonces []string)
}

func newSession(model string, rng func(int) int) *session {
	return &session{model: model, down: "http://127.0.0.1:1", rng: rng, transcript: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

func (s *session) Ring(ctx context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rng(10) == 0 {
		return errors.New("the session's socket is busy")
	}
	s.input = append(s.input, text)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *session) Session(context.Context) (live.Info, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	status := "idle"
	if len(s.input) > 0 {
		status = "busy"
	}
	return live.Info{Runtime: "townsim", Process: live.Self(), ID: "crew-session", Status: status}, nil
}

// Evidence reports the nonces of turns the model answered.
func (s *session) Evidence(_ context.Context, nonces []string) (live.Evidence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := live.Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	for _, n := range nonces {
		if at, ok := s.transcript[n]; ok {
			ev.Seen[n] = at
		}
	}
	return ev, nil
}

// run takes the session's turns until ctx ends: each one's input goes to
// the model (or, one turn in six, to a model that is down).
func (s *session) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if len(s.input) == 0 {
				s.mu.Unlock()
				break
			}
			text := strings.Join(s.input, "\n")
			s.input = nil
			base := s.model
			if s.rng(6) == 0 {
				base = s.down
			}
			hooked := s.hooked
			s.mu.Unlock()
			if hooked != nil {
				// The prompt hook sees the doorbells in the prompt before the
				// runtime sends it (hook.Handler.Doorbells calls hook.Confirm): submitted, never delivered.
				hooked(hook.RingMarks(text))
			}
			err := s.turn(ctx, base, text)
			s.mu.Lock()
			s.turns++
			if err != nil {
				s.lost++
			} else {
				for _, n := range hook.RingMarks(text) {
					s.transcript[n] = time.Now()
				}
			}
			s.mu.Unlock()
		}
	}
}

// turn sends one turn to the model at base and waits for its answer.
func (s *session) turn(ctx context.Context, base, text string) error {
	body, _ := json.Marshal(map[string]any{"model": "stub", "max_tokens": 64,
		"messages": []map[string]any{{"role": "user", "content": text}}})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("model: %s", resp.Status)
	}
	return nil
}

// crewSession runs the crew's stand-in session and its deliverer on alpha
// until ctx ends, and returns the stub model (for the oracle) once they
// run, and a function that waits for both to stop.
func (tw *town) crewSession(ctx context.Context) (*stubmodel.Server, func(), error) {
	model, err := stubmodel.Start(func(stubmodel.Request) stubmodel.Reply { return stubmodel.Reply{Text: "noted"} })
	if err != nil {
		return nil, nil, err
	}
	s, err := maildir.Open(tw.alpha.root())
	if err != nil {
		model.Close()
		return nil, nil, err
	}
	a := tw.agent("crew-session", tw.alpha)
	var rmu sync.Mutex
	rng := func(n int) int { rmu.Lock(); defer rmu.Unlock(); return a.rng.IntN(n) }
	sess := newSession(model.URL, rng)
	if *soakHooks {
		sess.hooked = func(nonces []string) {
			if err := hook.Confirm(s, "crew", nonces); err != nil {
				tw.led.add(entry{host: "alpha", agent: "crew", op: "prompt-hook", note: err.Error()})
			}
		}
	}
	d := &live.Deliverer{Store: s, Agent: "crew", Door: sess, Every: time.Second, Spacing: 100 * time.Millisecond,
		PerMinute: 600, ConfirmWait: time.Second, MaxRings: 3,
		Warn: func(err error) { tw.led.add(entry{host: "alpha", agent: "crew", op: "deliverer", note: err.Error()}) }}
	var wg sync.WaitGroup
	wg.Go(func() { sess.run(ctx) })
	wg.Go(func() {
		if err := d.Run(ctx); err != nil && ctx.Err() == nil {
			tw.t.Errorf("the crew's deliverer: %v", err)
		}
	})
	tw.session, tw.model = sess, model
	return model, func() { wg.Wait(); s.Close() }, nil
}

// A receipt line of send --wait-for delivered --json.
type receiptLine struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
	Live  string `json:"live"`
	Why   string `json:"why"`
	Final bool   `json:"final"`
}

// deacon sends the crew urgent mail and waits for each doorbell's
// receipt (send --wait-for delivered), keyed, retried when killed; the
// crew reads its mail now and then, so some receipts say read.
func (a *agent) deacon(ctx, post context.Context) {
	crew := a.tw.agent("crew", a.h)
	for k := 0; post.Err() == nil; k++ {
		r, ok := a.do(ctx, "bell", true, func(r result) bool {
			return r.code == exitOK || r.code == exitNothing || r.code == exitTimeout
		}, "send", "crew", "--from", a.name, "-s", fmt.Sprintf("PATROL %d", k), "--priority", "urgent",
			"-m", "patrol report", "--idempotency-key", fmt.Sprintf("patrol-%d", k),
			"--wait-for", "delivered", "--timeout", "20s", "--json")
		if !ok {
			return
		}
		for line := range strings.Lines(r.out) {
			var rc receiptLine
			if json.Unmarshal([]byte(line), &rc) != nil || rc.Live == "" {
				continue
			}
			a.tw.led.receipt(rc)
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "receipt", id: rc.ID, note: rc.Live + " " + rc.Why})
		}
		if a.rng.IntN(3) == 0 {
			// The crew reads its mail (as its hooks would show it).
			for _, m := range crew.inbox(ctx) {
				crew.markRead(ctx, m.ID)
			}
		}
		a.pause(ctx, time.Second)
	}
}

// receiptsTrue checks every "delivered" receipt against the stub model's
// request log: the model must have received a turn naming the copy.
func (o *oracle) receiptsTrue(model *stubmodel.Server) {
	var raw strings.Builder
	for _, r := range model.Requests() {
		raw.WriteString(r.Raw)
	}
	log := raw.String()
	o.tw.led.mu.Lock()
	receipts := o.tw.led.receipts
	o.tw.led.mu.Unlock()
	for id, states := range receipts {
		for _, st := range states {
			if st == live.Delivered && !strings.Contains(log, id) {
				o.fail(fmt.Sprintf("a false receipt: %s was reported delivered, and the model never received a turn naming it", id), id)
			}
		}
	}
}
