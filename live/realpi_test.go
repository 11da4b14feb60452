package live_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// piSession is the real pi (npm: @mariozechner/pi-coding-agent, pinned in
// .ci/run), interactive in a tmux pane, offline against the model
// stand-in through an openai-completions provider, in a project "mailfs
// setup pi" set up.
type piSession struct {
	t       testing.TB
	store   *maildir.Store
	model   *stubmodel.Server
	release string // the file the stand-in's long tool call waits for
	home    string // pi's $HOME
	tmux    func(args ...string) string
}

// startPi starts pi; the stand-in answers as script says. before runs
// before pi starts (to send mail that waits for it).
func startPi(t testing.TB, script func(r stubmodel.Request) stubmodel.Reply, before func(s *maildir.Store)) *piSession {
	t.Helper()
	pi, bin := interactiveCLI(t, "pi", "@mariozechner/pi-coding-agent")
	base := t.TempDir()
	proj, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	ps := &piSession{t: t, release: filepath.Join(base, "release"), home: home}
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(filepath.Join(home, ".pi", "agent"), 0o755)
	var err error
	if ps.store, err = maildir.Open(filepath.Join(proj, ".chipset")); err != nil {
		t.Fatal(err)
	}
	if ps.model, err = stubmodel.Start(script); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, ".pi", "agent", "models.json"), []byte(`{"providers": {"stub": {"baseUrl": "`+ps.model.URL+`/v1", "api": "openai-completions", "apiKey": "k",
		"compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false}, "models": [{"id": "stub-model"}]}}}`), 0o600)
	changes, err := setup.Plan(agentrt.Pi, proj, bin, "toast")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		if err := os.WriteFile(c.Target, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MAILFS_ROOT=" + filepath.Join(proj, ".chipset"), "MAILFS_STATE_DIR=" + filepath.Join(base, "state")}
	if before != nil {
		before(ps.store)
	}
	sock := filepath.Join(base, "tmux.sock")
	ps.tmux = func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	script_ := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + pi + " --model stub/stub-model"
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "160", "-y", "45", "sh", "-c", script_).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() {
		os.WriteFile(ps.release, nil, 0o644)
		if t.Failed() {
			t.Logf("the pane:\n%s", ps.tmux("capture-pane", "-p"))
		}
		ps.tmux("kill-server")
		endProcessesIn(base)
		ps.model.Close()
	})
	return ps
}

// deliverer waits for the session's deliverer to publish its record.
func (ps *piSession) deliverer() *live.Record {
	ps.t.Helper()
	var rec *live.Record
	until(ps.t, "the deliverer to start with the session", 60*time.Second, func() bool {
		rec = liveRecord(ps.store, "pi")
		return rec != nil
	})
	return rec
}

// type_ types text into the session, as a person does.
func (ps *piSession) type_(text string) {
	ps.t.Helper()
	time.Sleep(500 * time.Millisecond) // the TUI takes keys once drawn
	ps.tmux("send-keys", "-l", text)
	until(ps.t, "the prompt on screen", 10*time.Second, func() bool { return strings.Contains(ps.tmux("capture-pane", "-p"), text) })
	ps.tmux("send-keys", "Enter")
}

// reached waits for a request after from that carries s, and returns its
// index.
func (ps *piSession) reached(what, s string, from int) int {
	ps.t.Helper()
	at := -1
	until(ps.t, what, 60*time.Second, func() bool {
		for i, r := range ps.model.Requests()[from:] {
			if strings.Contains(r.Raw, s) {
				at = from + i
				return true
			}
		}
		return false
	})
	return at
}

// idle waits for the deliverer to say the session is idle.
func (ps *piSession) idle() {
	ps.t.Helper()
	until(ps.t, "the session to be idle", 60*time.Second, func() bool {
		r := liveRecord(ps.store, "pi")
		return r != nil && r.Session.Status == "idle"
	})
}

// longTool is the stand-in's script for the tests: a prompt holding
// START-LONG-TOOL gets a bash call that waits for release; anything else
// an answer.
func longTool(release string) func(r stubmodel.Request) stubmodel.Reply {
	return func(r stubmodel.Request) stubmodel.Reply {
		if strings.Contains(r.Raw, "START-LONG-TOOL") && !strings.Contains(r.Raw, `"role":"tool"`) {
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + release + " ]; do sleep 0.05; done"}}
		}
		return stubmodel.Reply{Text: "done"}
	}
}

// The deliverer starts with the session; the first turn carries the
// waiting mail; an idle session is woken by urgent mail and the receipt
// says delivered (pi's session file shows the model answered the
// doorbell); urgent mail sent during a long tool call reaches the model
// after it, and is delivered only then; when pi ends, so does the
// deliverer, keeping its receipts.
func TestRealPi(t *testing.T) {
	var ps *piSession
	var waiting *maildir.Message
	release := ""
	ps = startPi(t, func(r stubmodel.Request) stubmodel.Reply { return longTool(release)(r) }, func(s *maildir.Store) {
		waiting = sendToast(t, s, "WORK gt-8: before the session", maildir.Normal)
	})
	release = ps.release
	rec := ps.deliverer()
	ps.type_("hello there")
	if i := ps.reached("the first turn", "hello there", 0); !strings.Contains(ps.model.Requests()[i].Raw, waiting.ID) {
		t.Fatalf("the first turn does not carry the waiting mail:\n%.3000s", ps.model.Requests()[i].Raw)
	}
	ps.idle()
	n := len(ps.model.Requests())
	wake := sendToast(t, ps.store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	ps.reached("a new turn carrying the doorbell", wake.ID, n)
	if rs := receiptsOf(t, ps.store, 30*time.Second, wake); rs[0].Live != live.Delivered {
		t.Fatalf("the wake's receipt: %+v", rs[0])
	}
	ps.idle()
	n = len(ps.model.Requests())
	ps.type_("START-LONG-TOOL")
	ps.reached("the long tool call", "START-LONG-TOOL", n)
	n = len(ps.model.Requests())
	busy := sendToast(t, ps.store, "MERGE_FAILED mid-call", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(ps.store, "pi")
		return r != nil && !r.Rung[busy.ID].IsZero()
	})
	// Steered into the turn, waiting for the tool call: not delivered.
	if rs := receiptsOf(t, ps.store, 0, busy); rs[0].Live == live.Delivered {
		t.Fatalf("the receipt while the tool call runs: %+v", rs[0])
	}
	os.WriteFile(ps.release, nil, 0o644)
	ps.reached("the urgent mail after the tool call", busy.ID, n)
	if rs := receiptsOf(t, ps.store, 30*time.Second, busy); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt after the tool call: %+v", rs[0])
	}
	stillUnread(t, ps.store, busy.ID)
	ps.tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs := receiptsOf(t, ps.store, 0, wake); rs[0].Live != live.Delivered {
		t.Fatalf("after the session ended, the wake's receipt: %+v", rs[0])
	}
}

// Bursts of 30 urgent messages into one pi session whose model takes its
// time (so doorbells arrive while it is busy, steered into the turn, and
// at every phase of a turn's end): every receipt says delivered exactly
// when a request to the model named the message — no false confirmation
// (#52: 8 of 30 once were), none missed — and no request names a message
// twice. Three bursts, the model taking 0.3 s, 1 s and 2.5 s an answer.
func TestRealPiBurstReceiptsMatchTheModel(t *testing.T) {
	var delay atomic.Int64
	delay.Store(int64(300 * time.Millisecond))
	ps := startPi(t, func(r stubmodel.Request) stubmodel.Reply {
		time.Sleep(time.Duration(delay.Load()))
		return stubmodel.Reply{Text: "done"}
	}, nil)
	ps.deliverer()
	ps.type_("hello there")
	ps.reached("the first turn", "hello there", 0)
	falses, missed, twice, total := 0, 0, 0, 0
	for burst, d := range []time.Duration{300 * time.Millisecond, time.Second, 2500 * time.Millisecond} {
		delay.Store(int64(d))
		var sent []*maildir.Message
		for i := range 30 {
			sent = append(sent, sendToast(t, ps.store, fmt.Sprintf("MERGE_FAILED gt-%d.%d", burst, i), maildir.Urgent))
			time.Sleep(50 * time.Millisecond) // a loop of mailfs send lands one every 45-70 ms
		}
		rs := receiptsOf(t, ps.store, 120*time.Second, sent...)
		ps.idle()
		reqs := ps.model.Requests()
		delivered := 0
		for i, r := range rs {
			got := slices.ContainsFunc(reqs, func(q stubmodel.Request) bool { return strings.Contains(q.Raw, sent[i].ID) })
			switch {
			case r.Live == live.Delivered && !got:
				falses++
				t.Errorf("%s: receipt %+v, but no request to the model named it", sent[i].ID, r)
			case r.Live != live.Delivered && got:
				missed++
				t.Errorf("%s: receipt %+v, but the model was given it", sent[i].ID, r)
			}
			if r.Live == live.Delivered {
				delivered++
			}
			for _, q := range reqs {
				if c := strings.Count(q.Raw, sent[i].ID); c > 1 {
					twice++
					t.Errorf("%s is named %d times in request %d", sent[i].ID, c, q.N)
					break
				}
			}
		}
		total += delivered
		if delivered != len(sent) {
			t.Errorf("burst %d: %d of %d delivered", burst, delivered, len(sent))
		}
		t.Logf("burst %d (the model %v an answer): %d delivered, %d model requests so far, %d doorbells so far", burst, d, delivered, len(reqs), liveRecord(ps.store, "pi").Rings)
	}
	t.Logf("3 bursts of 30: %d delivered, %d false confirmations, %d missed, %d named twice in a request", total, falses, missed, twice)
}

// The model's endpoint down: pi records the doorbell and an error, not an
// answer, so the receipt never says delivered.
func TestRealPiModelDownIsNotDelivered(t *testing.T) {
	ps := startPi(t, longTool(""), nil)
	ps.deliverer()
	ps.type_("hello there")
	ps.reached("the first turn", "hello there", 0)
	ps.idle()
	ps.model.Close()
	m := sendToast(t, ps.store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	var bell string
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(ps.store, "pi")
		if r == nil || r.Rung[m.ID].IsZero() || len(r.Bells) == 0 {
			return false
		}
		bell = r.Bells[0].Nonce
		return true
	})
	// pi tried the request, failed, and went idle again.
	until(t, "pi to record the failed turn", 60*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(ps.home, ".pi", "agent", "sessions", "*", "*.jsonl"))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if i := strings.Index(string(data), bell); i >= 0 && strings.Contains(string(data[i:]), `"stopReason":"error"`) {
				return true
			}
		}
		return false
	})
	if rs := receiptsOf(t, ps.store, 0, m); rs[0].Live == live.Delivered {
		t.Fatalf("with the model's endpoint down, the receipt: %+v", rs[0])
	}
	for _, r := range ps.model.Requests() {
		if strings.Contains(r.Raw, m.ID) {
			t.Fatal("the stand-in got the doorbell after it was closed")
		}
	}
}

// /new switches pi to a new session file: the first session's deliverer
// ends (cleanly: no lock left), the new session's starts, and a doorbell
// into the new session is delivered on the evidence of the new file.
func TestRealPiNewSession(t *testing.T) {
	ps := startPi(t, longTool(""), nil)
	first := ps.deliverer()
	ps.type_("hello there")
	ps.reached("the first turn", "hello there", 0)
	ps.idle()
	ps.type_("/new")
	var second *live.Record
	until(t, "the new session's deliverer", 60*time.Second, func() bool {
		second = liveRecord(ps.store, "pi")
		return second != nil && second.Deliverer != first.Deliverer && !first.Deliverer.Alive()
	})
	n := len(ps.model.Requests())
	m := sendToast(t, ps.store, "WAKE UP: after /new", maildir.Urgent)
	ps.reached("a new turn carrying the doorbell", m.ID, n)
	if rs := receiptsOf(t, ps.store, 30*time.Second, m); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt in the new session: %+v", rs[0])
	}
	if strings.Contains(ps.model.Requests()[len(ps.model.Requests())-1].Raw, "hello there") {
		t.Fatal("the doorbell went to the first session's conversation")
	}
}
