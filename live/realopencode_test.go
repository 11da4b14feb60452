package live_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// ocSession is a real OpenCode (npm: opencode-ai, pinned in .ci/run),
// interactive in a tmux pane, offline against the model stand-in through
// an openai-compatible provider, in a project "mailfs setup opencode" set
// up (its opencode.json edited in place beside the provider).
type ocSession struct {
	t                *testing.T
	store            *maildir.Store
	model            *stubmodel.Server
	base, proj       string
	release, answer  string // files the stand-in's long tool call and slow answer wait for
	tmux             func(args ...string) string
	opencode, binary string
	env              []string // the session's environment
}

// startOpenCode starts the session with env added to its environment; the
// stand-in answers as script says (given the session, for its files).
func startOpenCode(t *testing.T, env []string, script func(oc *ocSession, r stubmodel.Request) stubmodel.Reply) *ocSession {
	t.Helper()
	opencode, bin := interactiveCLI(t, "opencode", "opencode-ai")
	var err error
	base := t.TempDir()
	oc := &ocSession{t: t, base: base, proj: filepath.Join(base, "proj"), release: filepath.Join(base, "release"), answer: filepath.Join(base, "answer"), opencode: opencode, binary: bin}
	home := filepath.Join(base, "home")
	os.MkdirAll(oc.proj, 0o755)
	os.MkdirAll(home, 0o755)
	if oc.store, err = maildir.Open(filepath.Join(oc.proj, ".chipset")); err != nil {
		t.Fatal(err)
	}
	if oc.model, err = stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply { return script(oc, r) }); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.MarshalIndent(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"stub": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "stub",
			"options": map[string]any{"baseURL": oc.model.URL + "/v1", "apiKey": "k"}, "models": map[string]any{"stub-model": map[string]any{"name": "stub"}}}},
		"model": "stub/stub-model",
	}, "", "  ")
	os.WriteFile(filepath.Join(oc.proj, "opencode.json"), cfg, 0o644)
	changes, err := setup.Plan(agentrt.OpenCode, oc.proj, bin, "toast")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		if err := os.WriteFile(c.Target, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oc.env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MAILFS_ROOT=" + filepath.Join(oc.proj, ".chipset"), "MAILFS_STATE_DIR=" + filepath.Join(base, "state")}, env...)
	mcp := exec.Command(opencode, "mcp", "list")
	mcp.Dir, mcp.Env = oc.proj, oc.env
	if out, _ := mcp.CombinedOutput(); !strings.Contains(string(out), "mailfs") || !strings.Contains(string(out), "connected") {
		t.Fatalf("opencode mcp list:\n%s", out)
	}
	sock := filepath.Join(base, "tmux.sock")
	oc.tmux = func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	t.Cleanup(func() {
		os.WriteFile(oc.release, nil, 0o644)
		os.WriteFile(oc.answer, nil, 0o644)
		if t.Failed() {
			t.Logf("the pane:\n%s", oc.tmux("capture-pane", "-p"))
		}
		oc.tmux("kill-server")
		endProcessesIn(base)
		oc.model.Close()
	})
	return oc
}

// run starts OpenCode's TUI in the pane.
func (oc *ocSession) run() {
	oc.t.Helper()
	script := "cd " + oc.proj + " && exec env " + strings.Join(quoteAll(oc.env), " ") + " " + oc.opencode
	if out, err := exec.Command("tmux", "-S", filepath.Join(oc.base, "tmux.sock"), "new-session", "-d", "-x", "160", "-y", "45", "sh", "-c", script).CombinedOutput(); err != nil {
		oc.t.Fatalf("tmux: %v: %s", err, out)
	}
}

// prompt types text into the session, as a person does.
func (oc *ocSession) prompt(text string) {
	oc.t.Helper()
	until(oc.t, "the input box", 60*time.Second, func() bool { return strings.Contains(oc.tmux("capture-pane", "-p"), "/tmp") })
	time.Sleep(500 * time.Millisecond) // the TUI takes keys once drawn
	oc.tmux("send-keys", "-l", text)
	until(oc.t, "the prompt on screen", 10*time.Second, func() bool { return strings.Contains(oc.tmux("capture-pane", "-p"), text) })
	oc.tmux("send-keys", "Enter")
}

// reached waits for a request after from that ok accepts, and returns its
// index.
func (oc *ocSession) reached(what string, from int, ok func(stubmodel.Request) bool) int {
	oc.t.Helper()
	at := -1
	until(oc.t, what, 60*time.Second, func() bool {
		for i, r := range oc.model.Requests()[from:] {
			if ok(r) {
				at = from + i
				return true
			}
		}
		return false
	})
	return at
}

func carries(s string) func(stubmodel.Request) bool {
	return func(r stubmodel.Request) bool { return strings.Contains(r.Raw, s) }
}

// hasTool reports whether a request carries a tool's result.
func hasTool(r stubmodel.Request) bool { return strings.Contains(r.Raw, `"role":"tool"`) }

// The live path: mail waiting at the session's first prompt reaches the
// model with it; an idle session is woken by urgent mail and the receipt
// says delivered (OpenCode's messages show the model answered the
// doorbell); urgent mail sent during a long tool call reaches the model
// after it, and is delivered only then;
// when the session ends, its deliverer does, keeping its receipts and
// leaving no lock.
func TestRealOpenCode(t *testing.T) {
	oc := startOpenCode(t, nil, func(oc *ocSession, r stubmodel.Request) stubmodel.Reply {
		if strings.Contains(r.LastUser(), "START-LONG-TOOL") && !hasTool(r) {
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + oc.release + " ]; do sleep 0.05; done", "description": "wait for the test"}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	waiting := sendToast(t, oc.store, "WORK gt-7: before the session", maildir.Normal)
	oc.run()
	// The first prompt carries the session-start reminder: the mail waiting.
	oc.prompt("hello there")
	if i := oc.reached("the first prompt", 0, carries("hello there")); !strings.Contains(oc.model.Requests()[i].Raw, waiting.ID) {
		t.Fatalf("the first prompt does not carry the waiting mail:\n%.3000s", oc.model.Requests()[i].LastUser())
	}
	var rec *live.Record
	idle := func() {
		until(t, "the deliverer to run and the session to be idle", 60*time.Second, func() bool {
			rec = liveRecord(oc.store, "opencode")
			return rec != nil && rec.Session.Status == "idle"
		})
	}
	idle()
	// Idle: urgent mail wakes it, confirmed from inside.
	n := len(oc.model.Requests())
	wake := sendToast(t, oc.store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	oc.reached("a new turn carrying the doorbell", n, carries(wake.ID))
	if rs := receiptsOf(t, oc.store, 30*time.Second, wake); rs[0].Live != live.Delivered {
		t.Fatalf("the wake's receipt: %+v", rs[0])
	}
	// Busy: urgent mail during a long tool call reaches the model after it.
	idle()
	n = len(oc.model.Requests())
	oc.prompt("START-LONG-TOOL")
	oc.reached("the long tool call", n, carries("START-LONG-TOOL"))
	n = len(oc.model.Requests())
	busy := sendToast(t, oc.store, "MERGE_FAILED mid-call", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(oc.store, "opencode")
		return r != nil && !r.Rung[busy.ID].IsZero()
	})
	// Queued behind the call, not answered: not delivered.
	if rs := receiptsOf(t, oc.store, 0, busy); rs[0].Live == live.Delivered {
		t.Fatalf("the receipt while the tool call runs: %+v", rs[0])
	}
	os.WriteFile(oc.release, nil, 0o644)
	oc.reached("the urgent mail after the tool call", n, carries(busy.ID))
	if rs := receiptsOf(t, oc.store, 30*time.Second, busy); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt after the tool call: %+v", rs[0])
	}
	stillUnread(t, oc.store, busy.ID)
	// The session ends: so does its deliverer, keeping its receipts and
	// leaving no lock.
	oc.tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs := receiptsOf(t, oc.store, 30*time.Second, wake); rs[0].Live != live.Delivered {
		t.Fatalf("after the session ended, the wake's receipt: %+v", rs[0])
	}
	if locks, _ := filepath.Glob(filepath.Join(oc.proj, ".chipset", live.Dir, "toast", ".*.lock")); len(locks) != 0 {
		t.Fatalf("the deliverer left its lock: %v", locks)
	}
}

// Without live delivery (MAILFS_LIVE=off), OpenCode still gets mail
// through what the plugin and the MCP server do: urgent mail sent during a
// long tool call reaches the model in that call's result
// (tool.execute.after); the MCP tool lists the mailbox to the model; and a
// turn that ends with urgent mail unshown is followed by a new one naming
// it (session.idle).
func TestRealOpenCodeWithoutLive(t *testing.T) {
	oc := startOpenCode(t, []string{"MAILFS_LIVE=off"}, func(oc *ocSession, r stubmodel.Request) stubmodel.Reply {
		last, tool := r.LastUser(), hasTool(r)
		switch {
		case strings.Contains(last, "CALL-MCP") && !tool:
			return stubmodel.Reply{Tool: "mailfs_inbox", Input: map[string]any{}}
		case strings.Contains(r.Raw, "CALL-MCP") && tool && !strings.Contains(r.Raw, "Before you stop"):
			// The model takes its time over the tool's result, until the
			// test says.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(oc.answer); err == nil {
					break
				}
			}
		case strings.Contains(last, "START-LONG-TOOL") && !tool:
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + oc.release + " ]; do sleep 0.05; done", "description": "wait for the test"}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	oc.run()
	oc.prompt("hello first")
	oc.reached("the first turn", 0, carries("hello first"))
	// Urgent mail during a long tool call comes back in the call's result.
	n := len(oc.model.Requests())
	oc.prompt("START-LONG-TOOL")
	oc.reached("the long tool call", n, func(r stubmodel.Request) bool { return strings.Contains(r.LastUser(), "START-LONG-TOOL") })
	n = len(oc.model.Requests())
	urgent := sendToast(t, oc.store, "MERGE_FAILED during the call", maildir.Urgent)
	os.WriteFile(oc.release, nil, 0o644)
	i := oc.reached("the tool result", n, func(r stubmodel.Request) bool { return hasTool(r) && strings.Contains(r.Raw, "START-LONG-TOOL") })
	if !strings.Contains(oc.model.Requests()[i].Raw, urgent.ID) {
		t.Fatalf("the long call's result does not carry the urgent mail:\n%.3000s", oc.model.Requests()[i].LastUser())
	}
	// The MCP tool lists the mailbox: its result reaches the model.
	listed := sendToast(t, oc.store, "WORK gt-9: listed by the tool", maildir.Normal)
	n = len(oc.model.Requests())
	oc.prompt("CALL-MCP please")
	i = oc.reached("the MCP tool's result", n, func(r stubmodel.Request) bool {
		return hasTool(r) && strings.Contains(r.Raw, "CALL-MCP") && strings.Contains(r.Raw, listed.ID)
	})
	// Urgent mail lands while the model answers; the turn ends with it
	// unread and unshown: a new turn holds the session, naming it.
	held := sendToast(t, oc.store, "MERGE_FAILED at the end", maildir.Urgent)
	os.WriteFile(oc.answer, nil, 0o644)
	oc.reached("a new turn at idle", i, func(r stubmodel.Request) bool {
		return strings.Contains(r.LastUser(), "Before you stop") && strings.Contains(r.LastUser(), held.ID)
	})
	if liveRecord(oc.store, "opencode") != nil {
		t.Fatal("a deliverer runs although MAILFS_LIVE=off")
	}
}

// A burst into a busy OpenCode session names each message once, and its
// receipts say delivered exactly for what a request to the model named;
// then a doorbell OpenCode took while a tool call ran is not delivered
// until the model answers a request holding it: OpenCode killed (SIGKILL)
// with the doorbell queued behind the call leaves the receipt rung, never
// delivered, and no request to the model ever named the message.
func TestRealOpenCodeBurstAndAQueuedDoorbellKilled(t *testing.T) {
	oc := startOpenCode(t, nil, func(oc *ocSession, r stubmodel.Request) stubmodel.Reply {
		if strings.Contains(r.LastUser(), "START-LONG-TOOL") && !hasTool(r) {
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + oc.release + " ]; do sleep 0.05; done", "description": "wait for the test"}}
		}
		time.Sleep(300 * time.Millisecond) // the model takes its time: doorbells arrive while it works
		return stubmodel.Reply{Text: "done"}
	})
	oc.run()
	oc.prompt("hello there")
	oc.reached("the first prompt", 0, carries("hello there"))
	var rec *live.Record
	until(t, "the deliverer", 60*time.Second, func() bool {
		rec = liveRecord(oc.store, "opencode")
		return rec != nil
	})
	// The burst: 60 messages, urgent and high, as a loop of sends lands them.
	var sent []*maildir.Message
	for i := range 60 {
		p := maildir.Urgent
		if i%3 == 2 {
			p = maildir.High
		}
		sent = append(sent, sendToast(t, oc.store, fmt.Sprintf("MERGE_FAILED gt-%d", i), p))
		time.Sleep(50 * time.Millisecond)
	}
	rs := receiptsOf(t, oc.store, 90*time.Second, sent...)
	reqs := oc.model.Requests()
	last := reqs[len(reqs)-1].Raw
	delivered := 0
	for i, r := range rs {
		got := slices.ContainsFunc(reqs, func(q stubmodel.Request) bool { return strings.Contains(q.Raw, sent[i].ID) })
		if (r.Live == live.Delivered) != got {
			t.Errorf("%s: receipt %+v, but the model was given it: %v", sent[i].ID, r, got)
		}
		if r.Live == live.Delivered {
			delivered++
		}
		if c := strings.Count(last, sent[i].ID); c > 1 {
			t.Errorf("%s is named %d times in the conversation", sent[i].ID, c)
		}
	}
	t.Logf("60 messages: %d delivered, %d doorbells, %d model requests", delivered, liveRecord(oc.store, "opencode").Rings, len(reqs))
	if delivered != len(sent) {
		t.Fatalf("%d of %d delivered", delivered, len(sent))
	}
	// A doorbell queued behind a long tool call, then OpenCode killed.
	n := len(oc.model.Requests())
	oc.prompt("START-LONG-TOOL")
	oc.reached("the long tool call", n, carries("START-LONG-TOOL"))
	m := sendToast(t, oc.store, "MERGE_FAILED behind the call", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(oc.store, "opencode")
		return r != nil && !r.Rung[m.ID].IsZero()
	})
	// Taken, not answered: rung.
	if rs := receiptsOf(t, oc.store, 0, m); rs[0].Live != live.Rung {
		t.Fatalf("the receipt with the doorbell queued: %+v, want rung", rs[0])
	}
	if err := syscall.Kill(rec.Session.Process.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	until(t, "the deliverer to end with OpenCode", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs := receiptsOf(t, oc.store, 0, m); rs[0].Live == live.Delivered {
		t.Fatalf("after OpenCode was killed with the doorbell queued, its receipt: %+v", rs[0])
	}
	for _, r := range oc.model.Requests() {
		if strings.Contains(r.Raw, m.ID) {
			t.Fatal("a request to the model named the message: the test did not hold the doorbell queued")
		}
	}
	stillUnread(t, oc.store, m.ID)
	if rs := receiptsOf(t, oc.store, 0, sent[0]); rs[0].Live != live.Delivered {
		t.Fatalf("after OpenCode was killed, an earlier receipt: %+v", rs[0])
	}
}
