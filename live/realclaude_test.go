package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// These tests run the real Claude Code CLI (npm: @anthropic-ai/claude-code,
// pinned in .ci/run) against a loopback stand-in for the model API, with
// mailfs's hooks and live deliverer installed as "mailfs setup claude"
// installs them. Without claude on $PATH they skip, saying so.

// binDir is the folder buildOnce built the binaries in, which TestMain
// removes once every test has run.
var binDir string

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mailfs-live-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	// mailfs, and beside it mailfs-mcp, which "mailfs mcp" runs,
	// mailfs-codex, which "mailfs live codex" runs, and mailfs-hook, which
	// the hooks setup writes run.
	out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/mailfs/mailfs/cmd/mailfs", "github.com/mailfs/mailfs/cmd/mailfs-mcp", "github.com/mailfs/mailfs/cmd/mailfs-codex", "github.com/mailfs/mailfs/cmd/mailfs-hook").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "mailfs"), nil
})

// town is one test's Claude Code session set-up: a project with a root,
// a home of its own, the model stand-in and the mailfs binary.
type town struct {
	t       testing.TB
	claude  string
	bin     string
	proj    string
	home    string
	store   *maildir.Store
	model   *stubmodel.Server
	release string // the file the long tool call waits for
	sock    string // the tmux server's socket, for an interactive session
	env     []string
	// hold, when set, runs before the stand-in answers a request, on its
	// goroutine: a model that takes its time until the test says.
	hold atomic.Pointer[func(stubmodel.Request)]
}

// tools is what the model stand-in does: the first prompt asks for a
// Bash call that waits until the test releases it ("the long tool call");
// everything else is answered "done".
func newTown(t testing.TB, liveArgs string) *town {
	t.Helper()
	claude, err := exec.LookPath("claude")
	if err != nil {
		t.Skip("claude is not on $PATH: install @anthropic-ai/claude-code (npm) to test live delivery against it")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	tw := &town{t: t, claude: claude, bin: bin, proj: filepath.Join(base, "proj"), home: filepath.Join(base, "home"), release: filepath.Join(base, "release")}
	os.MkdirAll(tw.proj, 0o755)
	os.MkdirAll(tw.home, 0o755)
	root := filepath.Join(tw.proj, ".chipset")
	tw.store, err = maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	changes, err := setup.Plan(agentrt.Claude, tw.proj, bin, "toast")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		data := c.New
		if liveArgs != "" {
			data = []byte(strings.ReplaceAll(string(data), "live claude toast", "live claude toast "+liveArgs))
		}
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		if err := os.WriteFile(c.Target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tw.model, err = stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		if h := tw.hold.Load(); h != nil {
			(*h)(r)
		}
		last := r.LastUser()
		if _, err := os.Stat(tw.release); strings.Contains(r.Raw, "START-BUSY-LOOP") && err != nil {
			// A busy session: one short tool call after another, until
			// the test releases it.
			return stubmodel.Reply{Tool: "Bash", Input: map[string]any{"command": "sleep 0.2", "description": "work"}}
		}
		if strings.Contains(last, "START-LONG-TOOL") && !strings.Contains(last, "tool_result") {
			// It ends too when the test's folder goes: a release written
			// just before the folder is removed may be missed, and the
			// loop would outlive the test.
			return stubmodel.Reply{Tool: "Bash", Input: map[string]any{
				"command":     "while [ ! -e " + tw.release + " ] && [ -d " + filepath.Dir(tw.release) + " ]; do sleep 0.05; done",
				"description": "wait for the test",
			}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(tw.release, nil, 0o644) // no tool call left waiting
		tw.model.Close()
		if t.Failed() {
			t.Logf("claude's debug log, hooks and messaging:\n%s", tw.debugLog())
		}
	})
	tw.env = append(os.Environ(), "HOME="+tw.home, "ANTHROPIC_BASE_URL="+tw.model.URL, "ANTHROPIC_API_KEY="+testKey,
		"MAILFS_ROOT="+root, "MAILFS_STATE_DIR="+filepath.Join(base, "state"), "IS_SANDBOX=1",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	return tw
}

// start runs "claude -p" on a prompt that makes the long tool call; the
// returned channel closes when claude exits.
func (tw *town) start(ctx context.Context, perms ...string) (*exec.Cmd, <-chan error) {
	return tw.startWith(ctx, "START-LONG-TOOL", perms...)
}

// startWith runs "claude -p" on prompt.
func (tw *town) startWith(ctx context.Context, prompt string, perms ...string) (*exec.Cmd, <-chan error) {
	if perms == nil {
		perms = []string{"--dangerously-skip-permissions"}
	}
	args := append([]string{"-p", prompt, "--debug-file", filepath.Join(tw.home, "debug.log")}, perms...)
	cmd := exec.CommandContext(ctx, tw.claude, args...)
	cmd.Dir = tw.proj
	cmd.Env = tw.env
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		tw.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		done <- err
	}()
	return cmd, done
}

// debugLog is what Claude Code's debug log says of hooks and its socket.
func (tw *town) debugLog() string {
	data, _ := os.ReadFile(filepath.Join(tw.home, "debug.log"))
	var keep []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "uds-messaging") || strings.Contains(line, "cross-session") || strings.Contains(strings.ToLower(line), "hook") && !strings.Contains(line, "hooks module") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// busy starts a session, waits for its deliverer and for the long tool
// call to begin, and returns them.
func (tw *town) busy() (*exec.Cmd, <-chan error, *live.Record) {
	tw.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	tw.t.Cleanup(cancel)
	cmd, done := tw.start(ctx)
	rec := tw.deliverer()
	until(tw.t, "the long tool call", 60*time.Second, func() bool { return len(tw.model.Requests()) >= 1 })
	return cmd, done, rec
}

// until polls cond (a condition on files, not a guess at timing) until it
// holds or the deadline passes.
func until(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliverer waits for the session's deliverer to publish its record.
func (tw *town) deliverer() *live.Record {
	tw.t.Helper()
	var rec *live.Record
	until(tw.t, "the live deliverer to start", 60*time.Second, func() bool {
		recs, _ := live.Records(tw.store, "toast")
		for _, r := range recs {
			if r.Live() {
				rec = r
				return true
			}
		}
		return false
	})
	return rec
}

func (tw *town) record() *live.Record { return liveRecord(tw.store, "") }

func (tw *town) send(subject string, p maildir.Priority) *maildir.Message {
	tw.t.Helper()
	return sendToast(tw.t, tw.store, subject, p)
}

// bells returns the doorbell texts that reached the model, each once.
func (tw *town) bells() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range tw.model.Requests() {
		msgs, _ := r.Body["messages"].([]any)
		for _, m := range msgs {
			b, _ := json.Marshal(m)
			var msg struct {
				Role    string
				Content json.RawMessage
			}
			json.Unmarshal(b, &msg)
			var texts []string
			var s string
			if json.Unmarshal(msg.Content, &s) == nil {
				texts = append(texts, s)
			} else {
				var blocks []struct{ Type, Text string }
				json.Unmarshal(msg.Content, &blocks)
				for _, bl := range blocks {
					texts = append(texts, bl.Text)
				}
			}
			for _, s := range texts {
				// Claude Code may join queued messages into one: each
				// doorbell is cut at the next one's start and at its end.
				for _, piece := range strings.Split(s, "mailfs doorbell for toast")[1:] {
					piece, _, _ = strings.Cut(piece, "The mail waits in your mailbox")
					if !seen[piece] {
						seen[piece] = true
						out = append(out, piece)
					}
				}
			}
		}
	}
	return out
}

// An urgent message sent while the session runs a long tool call reaches
// the model in the very next request, and the deliverer ends with the
// session.
func TestRealClaudeUrgentMailMidTurn(t *testing.T) {
	tw := newTown(t, "")
	_, done, rec := tw.busy()
	n := len(tw.model.Requests())
	m := tw.send("MERGE_FAILED nux", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := tw.record()
		return r != nil && !r.Rung[m.ID].IsZero()
	})
	// Written, and queued by Claude Code until the tool call ends: the
	// model has not seen it, and the receipt says so: submitted.
	tw.queued()
	if rs := receipts(t, tw, 0, m); rs[0].Live != live.Submitted || rs[0].Final {
		t.Fatalf("the receipt while the doorbell waits in Claude Code's queue: %+v, want submitted, not final", rs[0])
	}
	os.WriteFile(tw.release, nil, 0o644)
	// Confirmed from the session's own transcript once it went to the
	// model.
	if rs := receipts(t, tw, 30*time.Second, m); rs[0].Live != live.Delivered {
		t.Fatalf("the receipt after the tool call: %+v, want delivered", rs[0])
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	reqs := tw.model.Requests()
	if len(reqs) <= n {
		t.Fatalf("no request after the tool call")
	}
	next := reqs[n] // the first request after the mail landed
	if !strings.Contains(next.Raw, "mailfs doorbell for toast") || !strings.Contains(next.Raw, m.ID) || !strings.Contains(next.Raw, "MERGE_FAILED nux") {
		t.Fatalf("the request after the tool call does not carry the doorbell for %s:\n%.3000s", m.ID, next.LastUser())
	}
	// No orphan: the deliverer ended with the session.
	until(t, "the deliverer to end", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
}

// A session whose settings hold messages from other processes
// (crossSessionInbound: "hold") is never written a doorbell it would park
// unseen, and the sender's receipt says held, not delivered; the hooks
// still show the mail to the model.
func TestRealClaudeHoldIsNotDelivered(t *testing.T) {
	tw := newTown(t, "")
	_, done, _ := tw.busy()
	if err := os.WriteFile(filepath.Join(tw.proj, ".claude", "settings.local.json"), []byte(`{"crossSessionInbound": "hold"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := tw.send("MERGE_FAILED under hold", maildir.Urgent)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	receipts, _ := live.WaitDelivered(ctx, tw.store, []*maildir.Message{m})
	if len(receipts) != 1 || receipts[0].Live != live.Held || !strings.Contains(receipts[0].Why, "held by the session") {
		t.Fatalf("the receipt under hold: %+v, want held by the session", receipts)
	}
	if r := tw.record(); r == nil || !r.Rung[m.ID].IsZero() || !strings.Contains(r.Error, "crossSessionInbound") {
		t.Fatalf("the record under hold: %+v", r)
	}
	os.WriteFile(tw.release, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range tw.model.Requests() {
		if strings.Contains(r.Raw, "mailfs doorbell for toast") {
			t.Fatalf("a doorbell reached the model under hold")
		}
	}
}

// 100 messages in a burst to a busy session ring a bounded number of
// doorbells; every message is named exactly once across them, and each
// request names each message once (the doorbells queued during the tool
// call, each with its prompt hook's note, go in one request).
func TestRealClaudeBurstIsBatched(t *testing.T) {
	tw := newTown(t, "--every 1s")
	_, done, _ := tw.busy()
	var ids []string
	for i := range 100 {
		ids = append(ids, tw.send(fmt.Sprintf("WORK gt-%d", i), maildir.Normal).ID)
	}
	until(t, "every message to be rung", 90*time.Second, func() bool {
		r := tw.record()
		if r == nil {
			return false
		}
		for _, id := range ids {
			if r.Rung[id].IsZero() {
				return false
			}
		}
		return true
	})
	rings := tw.record().Rings
	os.WriteFile(tw.release, nil, 0o644)
	// Each message is confirmed: the model was given every doorbell.
	var sent []*maildir.Message
	for _, id := range ids {
		sent = append(sent, &maildir.Message{ID: id, Box: maildir.Address{Kind: maildir.KindAgent, Name: "toast"}})
	}
	for _, r := range receipts(t, tw, 60*time.Second, sent...) {
		if r.Live != live.Delivered {
			t.Errorf("%s: %+v, want delivered", r.ID, r)
			break
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if max := (100+live.MaxLines-1)/live.MaxLines + 1; rings > max {
		t.Errorf("%d doorbells for 100 messages; want at most %d", rings, max)
	}
	tw.namedOnce(ids)
}

// Killing the deliverer loses no mail: urgent mail sent after it died
// still reaches the model, through the post-tool hook.
func TestRealClaudeKilledDelivererLosesNothing(t *testing.T) {
	tw := newTown(t, "")
	_, done, rec := tw.busy()
	if p, err := os.FindProcess(rec.Deliverer.PID); err == nil {
		p.Kill()
	}
	until(t, "the deliverer to die", 10*time.Second, func() bool { return !rec.Deliverer.Alive() })
	m := tw.send("MERGE_FAILED after the kill", maildir.Urgent)
	os.WriteFile(tw.release, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, r := range tw.model.Requests() {
		all += r.Raw
	}
	if !strings.Contains(all, m.ID) {
		t.Fatalf("%s never reached the model after the deliverer was killed", m.ID)
	}
	stillUnread(t, tw.store, m.ID)
}

// A session whose socket is gone (removed under it) loses no mail: the
// doorbell cannot ring, the deliverer says why and keeps the message
// waiting, and the post-tool hook shows it.
func TestRealClaudeLostSocketLosesNothing(t *testing.T) {
	tw := newTown(t, "")
	_, done, rec := tw.busy()
	if rec.Session.Where == "" {
		t.Fatal("the deliverer's record names no socket")
	}
	if err := os.Remove(rec.Session.Where); err != nil {
		t.Fatal(err)
	}
	m := tw.send("MERGE_FAILED with no socket", maildir.Urgent)
	until(t, "the deliverer to hold the message for a retry", 30*time.Second, func() bool {
		r := tw.record()
		return r != nil && r.Held[m.ID] != "" && r.Error != ""
	})
	if r := tw.record(); !r.Rung[m.ID].IsZero() {
		t.Fatalf("the record says %s was rung through a socket that is gone", m.ID)
	}
	os.WriteFile(tw.release, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, r := range tw.model.Requests() {
		all += r.Raw
	}
	if !strings.Contains(all, m.ID) {
		t.Fatalf("%s never reached the model after the socket was removed", m.ID)
	}
	stillUnread(t, tw.store, m.ID)
}

// Killing the session loses no mail and leaves no deliverer behind.
func TestRealClaudeKilledSessionLeavesNoOrphan(t *testing.T) {
	tw := newTown(t, "")
	cmd, done, rec := tw.busy()
	cmd.Process.Kill() // SIGKILL: the session cannot stop its hooks
	<-done
	m := tw.send("sent to a dead session", maildir.Urgent)
	until(t, "the deliverer to notice its session ended", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	stillUnread(t, tw.store, m.ID)
}

// interactive runs Claude Code interactively in a tmux pane, as a person
// runs it, and waits for its deliverer to start and the session to be
// idle. It returns the deliverer's record and a function that runs tmux
// commands on the pane's server.
func (tw *town) interactive() (*live.Record, func(args ...string) string) {
	t := tw.t
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to run an interactive session")
	}
	// A first run's dialogs, answered as a person who set it up would.
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "theme": "dark",
		"customApiKeyResponses": map[string]any{"approved": []string{testKey[len(testKey)-20:]}},
		"projects":              map[string]any{tw.proj: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
	})
	os.WriteFile(filepath.Join(tw.home, ".claude.json"), cfg, 0o600)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tw.sock = sock
	env := []string{}
	for _, kv := range tw.env {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "ANTHROPIC_") || strings.HasPrefix(kv, "MAILFS_") || strings.HasPrefix(kv, "IS_SANDBOX") {
			env = append(env, kv)
		}
	}
	script := "cd " + tw.proj + " && env " + strings.Join(quoteAll(env), " ") + " " + tw.claude + " --debug-file " + filepath.Join(tw.home, "debug.log")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	rec := tw.deliverer()
	t.Cleanup(func() {
		// Claude Code, and what it writes into its home, end before the
		// test's folders are removed.
		tmux("kill-server")
		until(t, "the session to end", 30*time.Second, func() bool { return !rec.Session.Process.Alive() })
		endProcessesIn(filepath.Dir(tw.proj))
	})
	until(t, "the session to be idle", 60*time.Second, func() bool {
		r := tw.record()
		return r != nil && r.Session.Status == "idle" || sessionStatus(tw, rec) == "idle"
	})
	return rec, tmux
}

// An idle interactive session (in a tmux pane, as a person runs it) is
// woken into a new turn by urgent mail; then the tmux door, on the same
// session, never types over a person and submits a doorbell once.
func TestRealClaudeIdleSessionWakes(t *testing.T) {
	tw := newTown(t, "")
	rec, tmux := tw.interactive()
	before := len(tw.model.Requests())
	m := tw.send("WAKE UP: MERGE_FAILED", maildir.Urgent)
	var woke string
	until(t, "a new turn carrying the doorbell", 60*time.Second, func() bool {
		for _, r := range tw.model.Requests()[before:] {
			if strings.Contains(r.Raw, m.ID) {
				woke = r.Raw
				return true
			}
		}
		return false
	})
	// The doorbell became the prompt: its own prompt hook saw the nonce.
	if rs := receipts(t, tw, 30*time.Second, m); rs[0].Live != live.Delivered {
		t.Errorf("the receipt of the wake: %+v, want delivered", rs[0])
	}
	// The prompt hook does not list its mail a second time beside it.
	if n := strings.Count(woke, m.ID); n != 1 {
		t.Errorf("the turn the doorbell started names the message %d times, want once (the doorbell; the prompt hook must not repeat it)", n)
	}
	// The same session through the tmux door, as "mailfs live tmux"
	// would ring it.
	until(t, "the session to be idle again", 60*time.Second, func() bool { return sessionStatus(tw, rec) == "idle" })
	submitsThroughTmux(t, "claude", tw.sock, tmux, tw.model.Requests, "1212343456567878")
	tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	// Claude Code itself, and what it writes into its home, end too before
	// the test's folders are removed.
	until(t, "the session to end", 30*time.Second, func() bool { return !rec.Session.Process.Alive() })
}

// receipts waits up to d for the copies' receipts (0: looks once).
func receipts(t testing.TB, tw *town, d time.Duration, sent ...*maildir.Message) []live.Receipt {
	t.Helper()
	return receiptsOf(t, tw.store, d, sent...)
}

// sessionStatus reads the session's status from Claude Code's registry.
func sessionStatus(tw *town, rec *live.Record) string {
	data, _ := os.ReadFile(filepath.Join(tw.home, ".claude", "sessions", fmt.Sprint(rec.Session.Process.PID)+".json"))
	var v struct{ Status string }
	json.Unmarshal(data, &v)
	return v.Status
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}

// testKey is the API key the sessions present to the stand-in.
const testKey = "sk-ant-test-0000000000000000"

// 100 messages of mixed priority sent from a shell loop (a "mailfs send"
// process each, as scripts send) to an idle interactive session: at most
// 10 doorbells; every message confirmed delivered; each named by exactly
// one doorbell the model saw; and no prompt names a message twice (the
// doorbell and its prompt hook together).
func TestRealClaudeShellLoopBurstToAnIdleSession(t *testing.T) {
	tw := newTown(t, "--every 5s")
	tw.interactive()
	ids := tw.shellLoop(100)
	var sent []*maildir.Message
	for _, id := range ids {
		sent = append(sent, &maildir.Message{ID: id, Box: maildir.Address{Kind: maildir.KindAgent, Name: "toast"}})
	}
	rung := tw.deliveredOrHooked(receipts(t, tw, 120*time.Second, sent...))
	rec := tw.record()
	if rec.Rings > 10 {
		t.Errorf("%d doorbells for 100 messages from a shell loop; want at most 10", rec.Rings)
	}
	tw.namedOnce(rung)
	t.Logf("100 messages from a shell loop: %d doorbells", rec.Rings)
}

// The same during a long tool call: the doorbells wait in Claude Code's
// queue, reach the model after the call, and are confirmed then.
func TestRealClaudeShellLoopBurstDuringALongToolCall(t *testing.T) {
	tw := newTown(t, "--every 5s")
	_, tmux := tw.interactive()
	tmux("send-keys", "-l", "START-LONG-TOOL")
	tmux("send-keys", "Enter")
	until(t, "the long tool call", 60*time.Second, func() bool {
		for _, r := range tw.model.Requests() {
			if strings.Contains(r.LastUser(), "START-LONG-TOOL") {
				return true
			}
		}
		return false
	})
	ids := tw.shellLoop(100)
	var sent []*maildir.Message
	for _, id := range ids {
		sent = append(sent, &maildir.Message{ID: id, Box: maildir.Address{Kind: maildir.KindAgent, Name: "toast"}})
	}
	// While the call runs nothing is delivered: the doorbells wait in
	// Claude Code's queue.
	for _, r := range receipts(t, tw, 0, sent...) {
		if r.Live == live.Delivered {
			t.Fatalf("%s is delivered while the tool call still runs: %+v", r.ID, r)
		}
	}
	os.WriteFile(tw.release, nil, 0o644)
	rung := tw.deliveredOrHooked(receipts(t, tw, 120*time.Second, sent...))
	if rec := tw.record(); rec.Rings > 10 {
		t.Errorf("%d doorbells for 100 messages during a long tool call; want at most 10", rec.Rings)
	}
	tw.namedOnce(rung)
}

// hookShown reports whether r is the receipt of a copy the session's hooks
// showed the model before any doorbell named it (a stop or post-tool
// hook's note at the end of the burst's first turn): final, and named by
// no doorbell, so that no request names it twice.
func hookShown(r live.Receipt) bool {
	return r.Live == live.Held && r.Final && strings.Contains(r.Why, "hooks showed it")
}

// deliveredOrHooked fails the test unless every receipt is delivered or
// hook-shown, checks that each hook-shown copy reached the model, and
// returns the ids of the delivered ones: those the doorbells named.
func (tw *town) deliveredOrHooked(rs []live.Receipt) (rung []string) {
	tw.t.Helper()
	var hooked []string
	for _, r := range rs {
		switch {
		case r.Live == live.Delivered:
			rung = append(rung, r.ID)
		case hookShown(r):
			hooked = append(hooked, r.ID)
		default:
			tw.t.Fatalf("%s: %+v, want delivered, or held (final) as the hooks showed it", r.ID, r)
		}
	}
	for _, id := range hooked {
		if !slices.ContainsFunc(tw.model.Requests(), func(r stubmodel.Request) bool { return strings.Contains(newInputAll(r), id) }) {
			tw.t.Errorf("%s: held as the hooks showed it, but no request to the model names it", id)
		}
	}
	tw.t.Logf("%d delivered by doorbells, %d shown by the hooks first", len(rung), len(hooked))
	return rung
}

// shellLoop sends n messages to toast from a shell loop, one "mailfs send"
// each, priorities urgent, high, normal, low in turn, and returns their ids.
func (tw *town) shellLoop(n int) []string {
	tw.t.Helper()
	loop := fmt.Sprintf(`for i in $(seq 0 %d); do
  case $((i %% 4)) in 0) p=urgent;; 1) p=high;; 2) p=normal;; 3) p=low;; esac
  %s send toast --from mayor --priority $p -s "WORK gt-$i" -m "see gt-$i" || exit 1
done`, n-1, tw.bin)
	cmd := exec.Command("sh", "-c", loop)
	cmd.Env = tw.env
	out, err := cmd.Output()
	if err != nil {
		tw.t.Fatalf("the shell loop: %v", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) != n {
		tw.t.Fatalf("the shell loop sent %d messages, want %d", len(ids), n)
	}
	return ids
}

// namedOnce checks that each id is named by exactly one doorbell the model
// saw, and that no request's new input names an id twice.
func (tw *town) namedOnce(ids []string) {
	tw.t.Helper()
	// The prompt hook confirms a doorbell as the prompt is submitted, a
	// moment before the request reaches the model.
	var bells string
	until(tw.t, "every message to reach the model", 30*time.Second, func() bool {
		bells = strings.Join(tw.bells(), "\n")
		return !slices.ContainsFunc(ids, func(id string) bool { return !strings.Contains(bells, id) })
	})
	for _, id := range ids {
		if n := strings.Count(bells, id); n != 1 {
			tw.t.Errorf("%s is named %d times across the doorbells the model saw; want 1", id, n)
			return
		}
	}
	for _, r := range tw.model.Requests() {
		in := newInput(r)
		for _, id := range ids {
			if n := strings.Count(in, id); n > 1 {
				tw.t.Errorf("request %d's new input names %s %d times:\n%.3000s", r.N, id, n, in)
				return
			}
		}
	}
}

// newInput is what a request adds after the model's last answer: every
// message after the last assistant message (the doorbells queued during a
// tool call, each with its prompt hook's note, and the tool's result), as
// JSON. Claude Code's "system" messages are left out: it echoes a
// blocking stop hook's one output there a second time, beside the
// reminder it makes of it.
func newInput(r stubmodel.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	var in []any
	for _, m := range msgs {
		switch mm, _ := m.(map[string]any); mm["role"] {
		case "assistant":
			in = nil
		case "system":
		default:
			in = append(in, m)
		}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

// transcriptHas reports whether a line of the session's transcripts holds
// every one of parts.
func (tw *town) transcriptHas(parts ...string) bool {
	files, _ := filepath.Glob(filepath.Join(tw.home, ".claude", "projects", "*", "*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, line := range strings.Split(string(data), "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return true
			}
		}
	}
	return false
}

// nonceOf is the ring nonce of the last doorbell the record shows naming id.
func (tw *town) nonceOf(id string) string {
	tw.t.Helper()
	var nonce string
	until(tw.t, "the doorbell's bell in the record", 30*time.Second, func() bool {
		r := tw.record()
		if r == nil {
			return false
		}
		for _, b := range r.Bells {
			if slices.Contains(b.IDs, id) {
				nonce = b.Nonce
			}
		}
		return nonce != ""
	})
	return nonce
}

// queued waits until the transcript shows the session's one doorbell in
// Claude Code's queue: taken in while the tool call runs. A test that ends
// the tool call only then knows the doorbell goes with the next request;
// one that came after the call ended would wait behind that request.
func (tw *town) queued() {
	tw.t.Helper()
	until(tw.t, "the transcript to show the doorbell queued", 30*time.Second, func() bool {
		r := tw.record()
		return r != nil && len(r.Bells) == 1 && r.Bells[0].Queued
	})
}

// reachedModel counts the stand-in's requests, from the n-th on, that
// carry s.
func (tw *town) reachedModel(n int, s string) int {
	c := 0
	for _, r := range tw.model.Requests()[n:] {
		if strings.Contains(r.Raw, s) {
			c++
		}
	}
	return c
}

// The model endpoint is down when the doorbell goes on: Claude Code
// takes it in (the queued command, the request built and sent into a
// dead endpoint) and never gets an answer. The receipt says submitted,
// never delivered — not while Claude Code retries, not once the session
// is gone — and the stand-in's log agrees: no request reached the model.
func TestRealClaudeEndpointDownIsNotDelivered(t *testing.T) {
	tw := newTown(t, "")
	cmd, done, rec := tw.busy()
	n := len(tw.model.Requests())
	tw.model.Close() // the endpoint is down from here on
	m := tw.send("MERGE_FAILED with the model down", maildir.Urgent)
	nonce := tw.nonceOf(m.ID)
	// In Claude Code's queue before the tool call ends: a doorbell that
	// came after it would wait behind the retries of the tool result's
	// own request to the dead endpoint, longer than this test waits.
	tw.queued()
	os.WriteFile(tw.release, nil, 0o644)
	// The tool call ends: Claude Code attaches the doorbell to the next
	// request, written to its transcript before the call.
	until(t, "the doorbell to go into a request", 30*time.Second, func() bool {
		return tw.transcriptHas(`"queued_command"`, nonce)
	})
	// Claude Code retries the dead endpoint; whatever it writes meanwhile
	// is no answer.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if rs := receipts(t, tw, 0, m); rs[0].Live == live.Delivered {
			t.Fatalf("delivered with the model endpoint down: %+v", rs[0])
		}
	}
	if rs := receipts(t, tw, 0, m); rs[0].Live != live.Submitted || rs[0].Final {
		t.Fatalf("the receipt while Claude Code retries: %+v, want submitted, not final", rs[0])
	}
	cmd.Process.Kill()
	<-done
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs := receipts(t, tw, 10*time.Second, m); rs[0].Live != live.Submitted || !rs[0].Final {
		t.Fatalf("the receipt once the session ended: %+v, want submitted, final", rs[0])
	}
	if got := tw.reachedModel(n, m.ID); got != 0 || len(tw.model.Requests()) != n {
		t.Fatalf("the stand-in's log: %d requests after it went down, %d carrying the doorbell", len(tw.model.Requests())-n, got)
	}
}

// The session is killed while the request carrying the doorbell waits for
// the model (the stand-in holds its answer), and, in a second session,
// the moment the doorbell is rung: in neither did the model produce
// output for it, and neither receipt says delivered. The stand-in's log
// agrees: the first request reached it and was never answered; in the
// second none carried the doorbell.
func TestRealClaudeKilledSessionIsNotDelivered(t *testing.T) {
	t.Run("request in flight", func(t *testing.T) {
		tw := newTown(t, "")
		reached := make(chan struct{})
		never := make(chan struct{})
		t.Cleanup(func() { close(never) })
		var once sync.Once
		hold := func(r stubmodel.Request) {
			if strings.Contains(r.Raw, "mailfs doorbell for toast") {
				once.Do(func() { close(reached) })
				<-never
			}
		}
		tw.hold.Store(&hold)
		cmd, done, rec := tw.busy()
		n := len(tw.model.Requests())
		m := tw.send("MERGE_FAILED, then the session dies", maildir.Urgent)
		nonce := tw.nonceOf(m.ID)
		tw.queued() // before the tool call ends, as above
		os.WriteFile(tw.release, nil, 0o644)
		select {
		case <-reached:
		case <-time.After(30 * time.Second):
			t.Fatal("the request carrying the doorbell never reached the stand-in")
		}
		// Claude Code's transcript holds the doorbell as the request's
		// input (what the prompt hook and the transcript's user lines
		// said "delivered" on before): then the session dies.
		until(t, "the transcript to hold the doorbell as input", 30*time.Second, func() bool {
			return tw.transcriptHas(`"queued_command"`, nonce)
		})
		cmd.Process.Kill()
		<-done
		until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
		rs := receipts(t, tw, 10*time.Second, m)
		if rs[0].Live == live.Delivered || !rs[0].Final {
			t.Fatalf("killed with the request in flight: %+v, want final, not delivered", rs[0])
		}
		if tw.reachedModel(n, m.ID) == 0 {
			t.Fatalf("the stand-in never saw the request: the case did not happen")
		}
	})
	t.Run("right after the ring", func(t *testing.T) {
		tw := newTown(t, "")
		cmd, done, rec := tw.busy()
		n := len(tw.model.Requests())
		m := tw.send("MERGE_FAILED, the session dies at once", maildir.Urgent)
		until(t, "the doorbell to ring", 30*time.Second, func() bool {
			r := tw.record()
			return r != nil && !r.Rung[m.ID].IsZero()
		})
		cmd.Process.Kill()
		<-done
		until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
		rs := receipts(t, tw, 10*time.Second, m)
		if rs[0].Live == live.Delivered || !rs[0].Final {
			t.Fatalf("killed right after the ring: %+v, want final, not delivered", rs[0])
		}
		if got := tw.reachedModel(n, m.ID); got != 0 {
			t.Fatalf("%d requests carried the doorbell to the model; the receipt's truth is in doubt", got)
		}
		stillUnread(t, tw.store, m.ID)
	})
}

// The deliverer is killed (-9) while its session runs, after a message
// was delivered and the moment a 30-message burst is named, then the
// session is /cleared, which starts the session's next deliverer: every receipt
// the first gave stands (delivered stays delivered, one record for the
// session), mail sent while no deliverer served the session is never
// "none", and the new deliverer delivers what comes next. Checked against
// the stand-in's log: each delivered doorbell reached the model.
func TestRealClaudeKilledDelivererThenClearKeepsEveryReceipt(t *testing.T) {
	tw := newTown(t, "")
	rec, tmux := tw.interactive()
	first := tw.send("FIRST: MERGE_FAILED", maildir.Urgent)
	if rs := receipts(t, tw, 60*time.Second, first); rs[0].Live != live.Delivered {
		t.Fatalf("the first message: %+v, want delivered", rs[0])
	}
	// A burst, and the deliverer killed once every message of it is named
	// (rung, taken in or answered: whatever each has come to).
	burst := sentIDs(tw.store, tw.shellLoop(30))
	until(t, "every message of the burst to be named", 60*time.Second, func() bool {
		r := tw.record()
		return r != nil && !slices.ContainsFunc(burst, func(m *maildir.Message) bool {
			return r.Rung[m.ID].IsZero() && r.Hooked[m.ID].IsZero()
		})
	})
	if p, err := os.FindProcess(rec.Deliverer.PID); err == nil {
		p.Kill()
	}
	until(t, "the deliverer to die", 10*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs := receipts(t, tw, 0, first); rs[0].Live != live.Delivered || !rs[0].Final {
		t.Fatalf("the first message after its deliverer was killed: %+v", rs[0])
	}
	beforeClear := receipts(t, tw, 0, burst...)
	between := tw.send("SECOND: sent with no deliverer", maildir.Urgent)
	if rs := receipts(t, tw, 0, between); rs[0].Live == live.NoSession || rs[0].Final {
		t.Fatalf("mail to a running session whose deliverer died: %+v, want an answer that waits, never none", rs[0])
	}
	tmux("send-keys", "-l", "/clear")
	until(t, "the typed /clear on the pane", 30*time.Second, func() bool {
		return strings.Contains(tmux("capture-pane", "-p"), "/clear")
	})
	tmux("send-keys", "Enter")
	var second *live.Record
	until(t, "the session's next deliverer (started by /clear's SessionStart)", 60*time.Second, func() bool {
		r := tw.record()
		if r != nil && r.Live() && r.Deliverer.PID != rec.Deliverer.PID {
			second = r
			return true
		}
		return false
	})
	recs, _ := live.Records(tw.store, "toast")
	if len(recs) != 1 || recs[0].Confirmed[first.ID].IsZero() {
		t.Fatalf("the records after /clear: %d, want the session's one, keeping the first delivery: %+v", len(recs), recs)
	}
	rs := receipts(t, tw, 10*time.Second, first, between)
	if rs[0].Live != live.Delivered || !rs[0].Final {
		t.Fatalf("the first message after /clear: %+v, want delivered still", rs[0])
	}
	// Every receipt of the burst is where it was or further on: a final
	// answer stays, a delivered one stays delivered, none goes back to
	// held or none (#52: 60 turned "held, not yet rung" here).
	rank := map[string]int{live.NoSession: -1, live.Held: 0, live.Refused: 0, live.Rung: 1, live.Submitted: 2, live.Delivered: 3, live.Read: 3}
	for i, now := range receipts(t, tw, 0, burst...) {
		was := beforeClear[i]
		if rank[now.Live] < rank[was.Live] || was.Final && !now.Final || was.Final && was.Live != now.Live && now.Live != live.Delivered && now.Live != live.Read {
			t.Errorf("%s: %+v before /clear, %+v after it", now.ID, was, now)
		}
	}
	counts := map[string]int{}
	for _, r := range beforeClear {
		counts[r.Live]++
	}
	t.Logf("the burst's receipts when its deliverer was killed: %v", counts)
	if rs[1].Live == live.NoSession || !rs[1].Final {
		t.Fatalf("mail the /clear session-start showed: %+v, want final, never none", rs[1])
	}
	n := len(tw.model.Requests())
	third := tw.send("THIRD: after /clear", maildir.Urgent)
	if rs := receipts(t, tw, 60*time.Second, third); rs[0].Live != live.Delivered {
		t.Fatalf("the third message, rung by the new deliverer: %+v, want delivered", rs[0])
	}
	if tw.reachedModel(n, third.ID) == 0 {
		t.Fatalf("delivered, yet no request after /clear carried %s", third.ID)
	}
	if tw.reachedModel(0, first.ID) == 0 {
		t.Fatalf("delivered, yet no request carried %s", first.ID)
	}
	// The burst ends delivered (a doorbell the cleared conversation never
	// answered rings again into the new one) or shown by the hooks, each
	// delivered one carried to the model.
	for _, r := range receipts(t, tw, 60*time.Second, burst...) {
		switch {
		case r.Live == live.Delivered:
			if tw.reachedModel(0, r.ID) == 0 {
				t.Errorf("%s is delivered, yet no request carried it", r.ID)
			}
		case hookShown(r):
		default:
			t.Errorf("%s after /clear: %+v, want delivered, or held (final) as the hooks showed it", r.ID, r)
		}
	}
	_ = second
}

// A busy session (one short tool call after another, the post-tool hook
// free to speak at each) is sent three urgent messages each followed by
// two normal ones, three times over: the post-tool hook tells of the
// urgent mail the spacing holds, the doorbells name the rest, and across
// every request the model received each message is named once (#52,
// item 3: 4 of 9 were named twice).
func TestRealClaudeBusyHooksAndDoorbellsNameEachMessageOnce(t *testing.T) {
	tw := newTown(t, "")
	tw.rewriteSettings("hook post-tool toast", "hook post-tool toast --every 100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, done := tw.startWith(ctx, "START-BUSY-LOOP")
	tw.deliverer()
	until(t, "the busy loop", 60*time.Second, func() bool { return len(tw.model.Requests()) >= 2 })
	var ids []string
	for round := range 3 {
		first := len(ids)
		for i := range 3 {
			ids = append(ids, tw.send(fmt.Sprintf("URGENT %d.%d", round, i), maildir.Urgent).ID)
			for j := range 2 {
				ids = append(ids, tw.send(fmt.Sprintf("normal %d.%d.%d", round, i, j), maildir.Normal).ID)
			}
		}
		// The next round once this one has reached the model.
		until(t, "the round to reach the model", 60*time.Second, func() bool {
			all := ""
			for _, r := range tw.model.Requests() {
				all += r.Raw
			}
			return !slices.ContainsFunc(ids[first:], func(id string) bool { return !strings.Contains(all, id) })
		})
	}
	os.WriteFile(tw.release, nil, 0o644)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// What each request added (after the model's last answer: the tool's
	// result, the hooks' notes and the queued doorbells, which Claude Code
	// sends as system messages), each such input once: a message is named
	// once across all of them.
	named := map[string]int{}
	inputs := map[string]bool{}
	for _, r := range tw.model.Requests() {
		in := newInputAll(r)
		if inputs[in] {
			continue
		}
		inputs[in] = true
		for _, id := range ids {
			named[id] += strings.Count(in, id)
		}
	}
	twice, byHooks := 0, 0
	for _, id := range ids {
		if named[id] != 1 {
			t.Errorf("%s is named %d times in what the model received; want 1", id, named[id])
		}
		if named[id] > 1 {
			twice++
		}
	}
	rs := receipts(t, tw, 30*time.Second, sentIDs(tw.store, ids)...)
	for _, r := range rs {
		if r.Live == live.Held && r.Final {
			byHooks++
		} else if r.Live != live.Delivered {
			t.Errorf("%s: %+v, want delivered, or held (final) as the hooks showed it", r.ID, r)
		}
	}
	t.Logf("%d messages to a busy session: %d named twice; %d doorbells; %d told by the post-tool hook first; receipts %s", len(ids), twice, tw.bellCount(), byHooks, live.Summary(rs))
}

// newInputAll is every message of a request after the model's last
// answer, system messages too, as JSON.
func newInputAll(r stubmodel.Request) string {
	msgs, _ := r.Body["messages"].([]any)
	var in []any
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			in = nil
		} else {
			in = append(in, m)
		}
	}
	b, _ := json.Marshal(in)
	return string(b)
}

// rewriteSettings replaces old with new in the project's Claude Code
// settings, as a person tuning a hook would.
func (tw *town) rewriteSettings(old, new string) {
	tw.t.Helper()
	files, _ := filepath.Glob(filepath.Join(tw.proj, ".claude", "settings*.json"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tw.t.Fatal(err)
		}
		if strings.Contains(string(data), old) {
			n++
			os.WriteFile(f, []byte(strings.ReplaceAll(string(data), old, new)), 0o644)
		}
	}
	if n == 0 {
		tw.t.Fatalf("no Claude Code settings in %s hold %q", tw.proj, old)
	}
}

// bellCount is how many doorbells the session's record says rang.
func (tw *town) bellCount() int {
	recs, _ := live.Records(tw.store, "toast")
	n := 0
	for _, r := range recs {
		n += r.Rings
	}
	return n
}
