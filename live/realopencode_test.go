package live_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// The real OpenCode (npm: opencode-ai, pinned in .ci/run), interactive in a
// tmux pane, offline against the model stand-in through an
// openai-compatible provider, in a project "mailfs setup opencode" set up
// (its opencode.json edited in place beside the provider): the MCP server
// connects; mail waiting at the session's first prompt reaches the model
// with it; an idle session is woken by urgent mail and the receipt says
// delivered (the plugin's prompt hook saw the doorbell's ring mark); urgent
// mail sent during a long tool call reaches the model after it; when the
// session ends, its deliverer does.
func TestRealOpenCode(t *testing.T) {
	opencode, err := exec.LookPath("opencode")
	if err != nil {
		t.Skip("opencode is not on $PATH: install opencode-ai (npm) to test mailfs with it")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to run an interactive session")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	proj, home, release := filepath.Join(base, "proj"), filepath.Join(base, "home"), filepath.Join(base, "release")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(home, 0o755)
	store, err := maildir.Open(filepath.Join(proj, ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		if last := r.LastUser(); strings.Contains(last, "START-LONG-TOOL") && !strings.Contains(r.Raw, `"role":"tool"`) {
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + release + " ]; do sleep 0.05; done", "description": "wait for the test"}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	defer os.WriteFile(release, nil, 0o644)
	// The person's own opencode.json: the provider. Setup edits it.
	cfg, _ := json.MarshalIndent(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"stub": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "stub",
			"options": map[string]any{"baseURL": model.URL + "/v1", "apiKey": "k"}, "models": map[string]any{"stub-model": map[string]any{"name": "stub"}}}},
		"model": "stub/stub-model",
	}, "", "  ")
	os.WriteFile(filepath.Join(proj, "opencode.json"), cfg, 0o644)
	changes, err := setup.Plan(setup.OpenCode, proj, bin, "toast")
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
	mcp := exec.Command(opencode, "mcp", "list")
	mcp.Dir, mcp.Env = proj, env
	if out, _ := mcp.CombinedOutput(); !strings.Contains(string(out), "mailfs") || !strings.Contains(string(out), "connected") {
		t.Fatalf("opencode mcp list:\n%s", out)
	}

	waiting := sendToast(t, store, "WORK gt-7: before the session", maildir.Normal)
	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + opencode
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "160", "-y", "45", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the pane:\n%s", tmux("capture-pane", "-p"))
		}
		tmux("kill-server")
		endProcessesIn(base)
	}()
	type_ := func(text string) {
		until(t, "the input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "/tmp") })
		time.Sleep(500 * time.Millisecond) // the TUI takes keys once drawn
		tmux("send-keys", "-l", text)
		until(t, "the prompt on screen", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), text) })
		tmux("send-keys", "Enter")
	}
	reached := func(what, s string, from int) int {
		at := -1
		until(t, what, 60*time.Second, func() bool {
			for i, r := range model.Requests()[from:] {
				if strings.Contains(r.Raw, s) {
					at = from + i
					return true
				}
			}
			return false
		})
		return at
	}
	// The first prompt carries the session-start reminder: the mail waiting.
	type_("hello there")
	if i := reached("the first prompt", "hello there", 0); !strings.Contains(model.Requests()[i].Raw, waiting.ID) {
		t.Fatalf("the first prompt does not carry the waiting mail:\n%.3000s", model.Requests()[i].LastUser())
	}
	var rec *live.Record
	until(t, "the deliverer to start and the session to be idle", 60*time.Second, func() bool {
		rec = liveRecord(store, "opencode")
		return rec != nil && rec.Session.Status == "idle"
	})
	// Idle: urgent mail wakes it, confirmed from inside.
	n := len(model.Requests())
	wake := sendToast(t, store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	reached("a new turn carrying the doorbell", wake.ID, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{wake}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the wake's receipt: %+v %v", rs, err)
	}
	// Busy: urgent mail during a long tool call reaches the model after it.
	until(t, "the session to be idle again", 60*time.Second, func() bool {
		r := liveRecord(store, "opencode")
		return r != nil && r.Session.Status == "idle"
	})
	n = len(model.Requests())
	type_("START-LONG-TOOL")
	reached("the long tool call", "START-LONG-TOOL", n)
	n = len(model.Requests())
	busy := sendToast(t, store, "MERGE_FAILED mid-call", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(store, "opencode")
		return r != nil && !r.Rung[busy.ID].IsZero()
	})
	os.WriteFile(release, nil, 0o644)
	reached("the urgent mail after the tool call", busy.ID, n)
	stillUnread(t, store, busy.ID)
	// The session ends: so does its deliverer.
	tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	// It kept its receipts, and left no lock.
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{wake}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("after the session ended, the wake's receipt: %+v %v", rs, err)
	}
	if locks, _ := filepath.Glob(filepath.Join(proj, ".chipset", live.Dir, "toast", ".*.lock")); len(locks) != 0 {
		t.Fatalf("the deliverer left its lock: %v", locks)
	}
}

// Without live delivery (MAILFS_LIVE=off), OpenCode still gets mail
// through what the plugin and the MCP server do: the MCP tool lists the
// mailbox to the model; urgent mail sent during a long tool call reaches
// the model in that call's result (tool.execute.after); and a turn that
// ends with urgent mail waiting is followed by a new one saying so
// (session.idle), once.
func TestRealOpenCodeWithoutLive(t *testing.T) {
	opencode, err := exec.LookPath("opencode")
	if err != nil {
		t.Skip("opencode is not on $PATH: install opencode-ai (npm) to test mailfs with it")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to run an interactive session")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	proj, home, release, answer := filepath.Join(base, "proj"), filepath.Join(base, "home"), filepath.Join(base, "release"), filepath.Join(base, "answer")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(home, 0o755)
	store, err := maildir.Open(filepath.Join(proj, ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		last := r.LastUser()
		tool := strings.Contains(r.Raw, `"role":"tool"`)
		switch {
		case strings.Contains(last, "CALL-MCP") && !tool:
			return stubmodel.Reply{Tool: "mailfs_inbox", Input: map[string]any{}}
		case strings.Contains(r.Raw, "CALL-MCP") && tool && !strings.Contains(r.Raw, "Before you stop"):
			// The model takes its time over the tool's result, until the
			// test says.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(answer); err == nil {
					break
				}
			}
		case strings.Contains(last, "START-LONG-TOOL") && !tool:
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + release + " ]; do sleep 0.05; done", "description": "wait for the test"}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	defer os.WriteFile(release, nil, 0o644)
	defer os.WriteFile(answer, nil, 0o644)
	cfg, _ := json.MarshalIndent(map[string]any{
		"$schema": "https://opencode.ai/config.json",
		"provider": map[string]any{"stub": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "stub",
			"options": map[string]any{"baseURL": model.URL + "/v1", "apiKey": "k"}, "models": map[string]any{"stub-model": map[string]any{"name": "stub"}}}},
		"model": "stub/stub-model",
	}, "", "  ")
	os.WriteFile(filepath.Join(proj, "opencode.json"), cfg, 0o644)
	changes, err := setup.Plan(setup.OpenCode, proj, bin, "toast")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		os.WriteFile(c.Target, c.New, 0o644)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "MAILFS_ROOT=" + filepath.Join(proj, ".chipset"), "MAILFS_STATE_DIR=" + filepath.Join(base, "state"), "MAILFS_LIVE=off"}
	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + opencode
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "160", "-y", "45", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer func() {
		if t.Failed() {
			t.Logf("the pane:\n%s", tmux("capture-pane", "-p"))
		}
		tmux("kill-server")
		endProcessesIn(base)
	}()
	type_ := func(text string) {
		until(t, "the input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "/tmp") })
		time.Sleep(500 * time.Millisecond)
		tmux("send-keys", "-l", text)
		until(t, "the prompt on screen", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), text) })
		tmux("send-keys", "Enter")
	}
	reached := func(what string, ok func(stubmodel.Request) bool, from int) int {
		at := -1
		until(t, what, 60*time.Second, func() bool {
			for i, r := range model.Requests()[from:] {
				if ok(r) {
					at = from + i
					return true
				}
			}
			return false
		})
		return at
	}
	turnDone := func(from int) {
		until(t, "the turn to end", 60*time.Second, func() bool {
			for _, r := range model.Requests()[from:] {
				if !strings.Contains(r.LastUser(), "CALL-MCP") && !strings.Contains(r.LastUser(), "START-LONG-TOOL") || strings.Contains(r.Raw, `"role":"tool"`) {
					return true
				}
			}
			return false
		})
	}
	type_("hello first")
	reached("the first turn", func(r stubmodel.Request) bool { return strings.Contains(r.Raw, "hello first") }, 0)
	// Urgent mail during a long tool call comes back in the call's result.
	n := len(model.Requests())
	type_("START-LONG-TOOL")
	reached("the long tool call", func(r stubmodel.Request) bool { return strings.Contains(r.LastUser(), "START-LONG-TOOL") }, n)
	n = len(model.Requests())
	urgent := sendToast(t, store, "MERGE_FAILED during the call", maildir.Urgent)
	os.WriteFile(release, nil, 0o644)
	i := reached("the tool result", func(r stubmodel.Request) bool {
		return strings.Contains(r.Raw, `"role":"tool"`) && strings.Contains(r.Raw, "START-LONG-TOOL")
	}, n)
	if !strings.Contains(model.Requests()[i].Raw, urgent.ID) {
		t.Fatalf("the long call's result does not carry the urgent mail:\n%.3000s", model.Requests()[i].LastUser())
	}
	turnDone(i)
	// The MCP tool lists the mailbox: its result reaches the model.
	listed := sendToast(t, store, "WORK gt-9: listed by the tool", maildir.Normal)
	n = len(model.Requests())
	type_("CALL-MCP please")
	i = reached("the MCP tool's result", func(r stubmodel.Request) bool {
		return strings.Contains(r.Raw, `"role":"tool"`) && strings.Contains(r.Raw, "CALL-MCP") && strings.Contains(r.Raw, listed.ID)
	}, n)
	// Urgent mail lands while the model answers; the turn ends with it
	// unread and unshown: a new turn holds the session, naming it.
	held := sendToast(t, store, "MERGE_FAILED at the end", maildir.Urgent)
	os.WriteFile(answer, nil, 0o644)
	reached("a new turn at idle", func(r stubmodel.Request) bool {
		return strings.Contains(r.LastUser(), "Before you stop") && strings.Contains(r.LastUser(), held.ID)
	}, i)
	if liveRecord(store, "opencode") != nil {
		t.Fatal("a deliverer runs although MAILFS_LIVE=off")
	}
}
