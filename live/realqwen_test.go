package live_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// These tests run the real Qwen Code CLI (npm: @qwen-code/qwen-code, pinned
// in .ci/run) against the loopback stand-in for the model, as its
// OpenAI-compatible endpoint, with mailfs's hooks and live deliverer
// installed as "mailfs setup qwen" installs them. A one-shot "qwen -p"
// never registers for cross-session messages, so each session is an
// interactive one in a tmux pane, as a person runs it. Without qwen or tmux
// on $PATH they skip, saying so.

// qtown is one test's Qwen Code session: a project with a root, a home of
// its own, the model stand-in, and a tmux server the session runs in.
type qtown struct {
	t       testing.TB
	proj    string
	home    string
	store   *maildir.Store
	model   *stubmodel.Server
	release string // the file the long tool call waits for
	sock    string // the tmux server's socket
	tmux    func(args ...string) string
}

func newQwenTown(t testing.TB) *qtown {
	t.Helper()
	qwen, bin := interactiveCLI(t, "qwen", "@qwen-code/qwen-code")
	var err error
	base := t.TempDir()
	tw := &qtown{t: t, proj: filepath.Join(base, "proj"), home: filepath.Join(base, "home"), release: filepath.Join(base, "release")}
	os.MkdirAll(tw.proj, 0o755)
	os.MkdirAll(tw.home, 0o755)
	root := filepath.Join(tw.proj, ".chipset")
	if tw.store, err = maildir.Open(root); err != nil {
		t.Fatal(err)
	}
	changes, err := setup.Plan(agentrt.Qwen, tw.proj, bin, "toast")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		if err := os.WriteFile(c.Target, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tw.model, err = stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		last := r.LastUser()
		if strings.Contains(last, "START-LONG-TOOL") {
			// Qwen Code refuses a bare sleep in the foreground; a loop
			// waiting on a file is what a build watcher looks like.
			return stubmodel.Reply{Tool: "run_shell_command", Input: map[string]any{
				"command":     "while [ ! -e " + tw.release + " ]; do sleep 0.05; done",
				"description": "wait for the test",
			}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(base, "tmux.sock")
	tw.sock = sock
	tw.tmux = func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	env := []string{"HOME=" + tw.home, "OPENAI_BASE_URL=" + tw.model.URL + "/v1", "OPENAI_API_KEY=" + testKey, "OPENAI_MODEL=stub-model",
		"MAILFS_ROOT=" + root, "MAILFS_STATE_DIR=" + filepath.Join(base, "state"), "QWEN_CODE_SUPPRESS_YOLO_WARNING=1", "PATH=" + os.Getenv("PATH")}
	script := "cd " + tw.proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + qwen + " --auth-type openai --yolo"
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() {
		os.WriteFile(tw.release, nil, 0o644) // no tool call left waiting
		if t.Failed() {
			t.Logf("the pane:\n%s", tw.tmux("capture-pane", "-p"))
		}
		tw.tmux("kill-server")
		// Qwen Code's helpers may outlive the server for a moment, still
		// writing into the home the test is about to remove.
		if left := endProcessesIn(base); len(left) > 0 {
			t.Logf("ended %d of qwen's processes still at work in the test's folder: %q", len(left), left)
		}
		tw.model.Close()
	})
	return tw
}

// deliverer waits for the session's deliverer to publish its record.
func (tw *qtown) deliverer() *live.Record {
	tw.t.Helper()
	var rec *live.Record
	until(tw.t, "the live deliverer to start", 90*time.Second, func() bool {
		rec = tw.record()
		return rec != nil
	})
	return rec
}

func (tw *qtown) record() *live.Record { return liveRecord(tw.store, "qwen") }

func (tw *qtown) send(subject string, p maildir.Priority) *maildir.Message {
	tw.t.Helper()
	return sendToast(tw.t, tw.store, subject, p)
}

// prompt types a prompt into the session, as a person would once its
// input box is up.
func (tw *qtown) prompt(text string) {
	tw.t.Helper()
	until(tw.t, "the input box", 60*time.Second, func() bool { return strings.Contains(tw.tmux("capture-pane", "-p"), "Type your message") })
	tw.tmux("send-keys", "-l", text)
	until(tw.t, "the prompt on screen", 10*time.Second, func() bool { return strings.Contains(tw.tmux("capture-pane", "-p"), text) })
	tw.tmux("send-keys", "Enter")
}

// reached waits until a request to the model after the first skip
// carries s, and returns that request's index.
func (tw *qtown) reached(what, s string, skip int) int {
	tw.t.Helper()
	at := -1
	until(tw.t, what, 90*time.Second, func() bool {
		for i, r := range tw.model.Requests() {
			if i >= skip && strings.Contains(r.Raw, s) {
				at = i
				return true
			}
		}
		return false
	})
	return at
}

// unread fails the test unless the message is still in the mailbox,
// unread: the doorbell is never the copy.
func (tw *qtown) unread(m *maildir.Message) {
	tw.t.Helper()
	stillUnread(tw.t, tw.store, m.ID)
}

// An idle Qwen Code session is woken into a new turn by urgent mail; the
// tmux door, on the same session, never types over a person and submits
// a doorbell once; when the session ends its deliverer ends too.
func TestRealQwenIdleSessionWakes(t *testing.T) {
	tw := newQwenTown(t)
	rec := tw.deliverer()
	m := tw.send("WAKE UP: MERGE_FAILED", maildir.Urgent)
	i := tw.reached("a new turn carrying the doorbell", m.ID, 0)
	if r := tw.model.Requests()[i].LastUser(); !strings.Contains(r, "mailfs doorbell for toast") || !strings.Contains(r, `origin=\"own-process\"`) {
		t.Fatalf("the new turn is not the doorbell, delivered as the session's own process:\n%.2000s", r)
	}
	// The session's own prompt hook saw the doorbell's ring mark.
	if rs := qreceipts(t, tw, 30*time.Second, m); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt of the wake: %+v, want delivered", rs[0])
	}
	tw.unread(m)
	// The same session through the tmux door, as "mailfs live tmux"
	// would ring it.
	submitsThroughTmux(t, "qwen", tw.sock, tw.tmux, tw.model.Requests, "3434565678789090")
	tw.tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	until(t, "the session to end", 30*time.Second, func() bool { return !rec.Session.Process.Alive() })
	// Qwen Code kills its hooks' process groups (SIGKILL) as it exits: the
	// deliverer, detached from the hook's, ended on its own, cleanly: its
	// record says so, and its lock is gone.
	if locks, _ := filepath.Glob(filepath.Join(tw.proj, ".chipset", live.Dir, "toast", ".*.lock")); len(locks) != 0 {
		t.Fatalf("the deliverer left its lock: %v", locks)
	}
	recs, err := live.Records(tw.store, "toast")
	if err != nil || len(recs) != 1 || recs[0].Ended.IsZero() {
		t.Fatalf("the deliverer's record does not say it ended: %+v %v", recs, err)
	}
}

// Urgent mail that lands while a busy session runs a long tool call is
// queued by Qwen Code for the session's next turn (it has no mid-turn
// path for peers), which starts as soon as the running turn ends.
func TestRealQwenBusySessionGetsTheDoorbellNextTurn(t *testing.T) {
	tw := newQwenTown(t)
	tw.deliverer()
	tw.prompt("START-LONG-TOOL please")
	tw.reached("the long tool call", "START-LONG-TOOL", 0)
	n := len(tw.model.Requests())
	m := tw.send("MERGE_FAILED nux", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := tw.record()
		return r != nil && !r.Rung[m.ID].IsZero()
	})
	// Queued by Qwen Code for the next turn: not yet the model's input.
	if rs := qreceipts(t, tw, 0, m); rs[0].Live != live.Rung {
		t.Fatalf("the receipt while the turn runs: %+v, want rung", rs[0])
	}
	os.WriteFile(tw.release, nil, 0o644)
	tw.reached("the doorbell to reach the model", "mailfs doorbell for toast", n)
	if rs := qreceipts(t, tw, 30*time.Second, m); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt after the next turn began: %+v, want delivered", rs[0])
	}
	tw.unread(m)
}

// qreceipts waits up to d for the copies' receipts (0: looks once).
func qreceipts(t testing.TB, tw *qtown, d time.Duration, sent ...*maildir.Message) []live.Receipt {
	t.Helper()
	return receiptsOf(t, tw.store, d, sent...)
}

// Killing the session (SIGKILL: it cannot reclaim its hooks) loses no mail
// and leaves no deliverer behind.
func TestRealQwenKilledSessionLeavesNoOrphan(t *testing.T) {
	tw := newQwenTown(t)
	rec := tw.deliverer()
	if p, err := os.FindProcess(rec.Session.Process.PID); err == nil {
		p.Kill()
	}
	m := tw.send("sent to a dead session", maildir.Urgent)
	until(t, "the deliverer to notice its session ended", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	tw.unread(m)
}

// A burst of 50 urgent messages makes a bounded number of doorbells, and
// so of turns, each message named to the model and confirmed delivered
// from the session's own chat record.
func TestRealQwenBurstIsBounded(t *testing.T) {
	tw := newQwenTown(t)
	tw.deliverer()
	var sent []*maildir.Message
	for i := range 50 {
		sent = append(sent, tw.send(fmt.Sprintf("MERGE_FAILED gt-%d", i), maildir.Urgent))
	}
	for _, r := range qreceipts(t, tw, 90*time.Second, sent...) {
		if r.Live != live.Delivered && !hookShown(r) {
			t.Fatalf("%s: %+v, want delivered, or held (final) as the hooks showed it", r.ID, r)
		}
	}
	rings := tw.record().Rings
	if max := (50+live.MaxLines-1)/live.MaxLines + 1; rings > max {
		t.Errorf("%d doorbells for 50 urgent messages; want at most %d", rings, max)
	}
	// Qwen Code writes its chat record a moment before the request
	// reaches the model: every message is named to it soon after.
	all, turns := "", 0
	until(t, "every message to reach the model", 30*time.Second, func() bool {
		all, turns = "", 0
		for _, r := range tw.model.Requests() {
			all += r.Raw
			if strings.Contains(r.LastUser(), "mailfs doorbell for toast") {
				turns++
			}
		}
		return !slices.ContainsFunc(sent, func(m *maildir.Message) bool { return !strings.Contains(all, m.ID) })
	})
	t.Logf("50 urgent messages: %d doorbells, %d model requests led by one", rings, turns)
}

// A workspace that holds peer messages (agents.crossSessionInbound:
// "hold") is written no doorbell, and the receipt says held, never
// delivered; "refuse" says refused.
func TestRealQwenHoldIsNotDelivered(t *testing.T) {
	tw := newQwenTown(t)
	tw.deliverer()
	path := filepath.Join(tw.proj, ".qwen", "settings.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := json.Unmarshal(data, &settings); err != nil {
		t.Fatal(err)
	}
	set := func(v string) {
		settings["agents"] = map[string]any{"crossSessionInbound": v}
		data, _ := json.Marshal(settings)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("hold")
	m := tw.send("MERGE_FAILED under hold", maildir.Urgent)
	if rs := qreceipts(t, tw, 5*time.Second, m); rs[0].Live != live.Held || !strings.Contains(rs[0].Why, "held by the session") {
		t.Fatalf("the receipt under hold: %+v", rs[0])
	}
	// Refused, and not final while the session runs: the setting is read
	// again at each retry, and may yet let the doorbell through.
	set("refuse")
	var rs []live.Receipt
	until(t, "the receipt to say refused", 60*time.Second, func() bool {
		rs = qreceipts(t, tw, 0, m)
		return rs[0].Live == live.Refused
	})
	if rs[0].Final {
		t.Fatalf("the receipt under refuse is final while the session runs: %+v", rs[0])
	}
	for _, r := range tw.model.Requests() {
		if strings.Contains(r.Raw, "mailfs doorbell for toast") {
			t.Fatalf("a doorbell reached the model while the workspace held or refused peers")
		}
	}
}

// The model's endpoint down: Qwen Code records the doorbell but no answer
// of the model's, so the receipt never says delivered.
func TestRealQwenModelDownIsNotDelivered(t *testing.T) {
	tw := newQwenTown(t)
	tw.deliverer()
	tw.model.Close()
	m := tw.send("WAKE UP: MERGE_FAILED", maildir.Urgent)
	var bell string
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := tw.record()
		if r == nil || r.Rung[m.ID].IsZero() || len(r.Bells) == 0 {
			return false
		}
		bell = r.Bells[0].Nonce
		return true
	})
	// Qwen Code took the doorbell into a turn, whose request failed.
	until(t, "the doorbell in the chat record", 60*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(tw.home, ".qwen", "projects", "*", "chats", "*.jsonl"))
		for _, f := range files {
			if data, _ := os.ReadFile(f); strings.Contains(string(data), bell) {
				return true
			}
		}
		return false
	})
	// Qwen Code retries the request and records nothing of its failure:
	// there is no end of the attempt to wait for. The receipt is given 5 s
	// to turn delivered (a hook's sighting would have at once).
	if rs := qreceipts(t, tw, 5*time.Second, m); rs[0].Live == live.Delivered {
		t.Fatalf("with the model's endpoint down, the receipt: %+v", rs[0])
	}
}
