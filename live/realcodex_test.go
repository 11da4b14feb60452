package live_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// Codex (npm: @openai/codex, pinned in .ci/run) in tmux, for a Codex
// started by a person rather than by "mailfs live codex": this test runs
// the real Codex TUI in a tmux pane against the model stand-in (its
// Responses API) with "mailfs live tmux" beside it, which finds Codex in
// the pane, reads its input box by Codex's prompt, and its rollouts for
// the evidence.
func TestRealCodexInTmuxWakes(t *testing.T) {
	codex, bin := interactiveCLI(t, "codex", "@openai/codex")
	base := t.TempDir()
	proj, codexHome := filepath.Join(base, "proj"), filepath.Join(base, "codex")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(codexHome, 0o700)
	root := filepath.Join(proj, ".chipset")
	store, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(stubmodel.Request) stubmodel.Reply { return stubmodel.Reply{Text: "done"} })
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	config := fmt.Sprintf("model = \"stub-model\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\nbase_url = %q\nwire_api = \"responses\"\nenv_key = \"STUB_KEY\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n",
		model.URL+"/v1", proj)
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600)

	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	env := []string{"CODEX_HOME=" + codexHome, "STUB_KEY=" + testKey, "PATH=" + os.Getenv("PATH"), "HOME=" + base}
	// --no-daemon: the session's app server is its own process, which
	// ends with it (the shared daemon would outlive the test).
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + codex + " --no-daemon"
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer tmux("kill-server")
	defer func() {
		if t.Failed() {
			t.Logf("the pane:\n%s", tmux("capture-pane", "-p"))
		}
	}()
	until(t, "Codex's input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "Ask Codex") })

	deliverer := exec.Command(bin, "live", "tmux", "toast", "--pane", "%0", "--socket", sock)
	deliverer.Env = append(os.Environ(), "MAILFS_ROOT="+root, "MAILFS_STATE_DIR="+filepath.Join(base, "state"))
	out := &strings.Builder{}
	deliverer.Stdout, deliverer.Stderr = out, out
	if err := deliverer.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- deliverer.Wait() }()
	defer deliverer.Process.Kill()
	until(t, "the deliverer to start", 30*time.Second, func() bool {
		data, _ := exec.Command(bin, "--root", root, "live", "list", "toast", "--json").Output()
		return strings.Contains(string(data), `"tmux"`)
	})

	// A person has half a line typed: the doorbell waits, and is neither
	// sent nor mixed into it.
	tmux("send-keys", "-t", "%0", "-l", "PERSON half a li")
	until(t, "the person's typing to show", 30*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "PERSON half a li") })
	m := sendToast(t, store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	id := m.ID
	until(t, "the deliverer to hold the doorbell for the person", 30*time.Second, func() bool {
		r := liveRecord(store, "tmux")
		return r != nil && r.Held[id] == "a person is typing"
	})
	if screen := tmux("capture-pane", "-p"); strings.Contains(screen, "mailfs doorbell") || !strings.Contains(screen, "PERSON half a li") {
		t.Fatalf("the doorbell was typed over the person's line:\n%s", screen)
	}
	tmux("send-keys", "-t", "%0", "C-u") // the person clears the line
	var turn string
	until(t, "a new turn carrying the doorbell", 90*time.Second, func() bool {
		for _, r := range model.Requests() {
			if strings.Contains(r.Raw, "mailfs doorbell for toast") && strings.Contains(r.Raw, id) {
				turn = r.Raw
				return true
			}
		}
		return false
	})
	if strings.Contains(turn, "PERSON") {
		t.Fatalf("the person's half line reached the model with the doorbell")
	}
	// Confirmed by its own ring mark, shown submitted in Codex's
	// conversation.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{m}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the receipt: %+v %v, want delivered", rs, err)
	}
	stillUnread(t, store, id)

	// A long doorbell, which Codex folds into "[Pasted Content N chars]",
	// goes whole, and is confirmed.
	var burst []*maildir.Message
	for i := range 12 {
		burst = append(burst, sendToast(t, store, fmt.Sprintf("MERGE_FAILED gt-%d: the refinery could not rebase the branch onto main after the last merge", i), maildir.Urgent))
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	rs, err := live.WaitDelivered(ctx2, store, burst)
	if err != nil {
		t.Fatalf("the long doorbell: %v %+v", err, rs)
	}
	for _, r := range rs {
		if r.Live != live.Delivered {
			t.Fatalf("the long doorbell: %+v, want delivered", r)
		}
	}

	// A person reading back in copy mode: nothing is typed (an Enter
	// would go to the mode).
	door, err := live.FindTmux("", sock, "%0")
	if err != nil {
		t.Fatal(err)
	}
	door.TypingQuiet = time.Nanosecond
	bell := func(nonce string) string {
		return "mailfs doorbell for toast: 1 new message(s), 1 URGENT.\n- [urgent] " + id + " from mayor: WAKE UP: MERGE_FAILED\nThe mail stays in your mailbox until you read it; this note is only a doorbell (ring " + nonce + ")."
	}
	// A person's text in the box, however it sits: never sent, never
	// mixed.
	if door.Prompt.Runtime != "codex" || door.Record == nil {
		t.Fatalf("the door found %q (record %v) in the pane, want codex and its rollouts", door.Prompt.Runtime, door.Record)
	}
	neverOverAPerson(t, tmux, door, bell("5555555555555555"))
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, "PERSON") || strings.Contains(r.Raw, "5555555555555555") {
			t.Fatalf("a person's text or the doorbell reached the model:\n%s", r.Raw)
		}
	}
	tmux("copy-mode", "-t", "%0")
	if err := door.Ring(context.Background(), bell("3333333333333333")); !errors.Is(err, live.ErrBusy) {
		t.Fatalf("Ring into a pane in copy mode: %v, want ErrBusy", err)
	}
	tmux("send-keys", "-t", "%0", "-X", "cancel")
	// A paste that never arrives (here a tmux that drops it), with the
	// first doorbell, the same but for its ring mark, still on Codex's
	// screen: not a ring, and no evidence.
	wrapper := filepath.Join(base, "tmux-drops-pastes")
	os.WriteFile(wrapper, []byte("#!/bin/sh\ncase \"$*\" in *paste-buffer*) exit 0;; esac\nexec tmux \"$@\"\n"), 0o755)
	door.Tmux = wrapper
	if err := door.Ring(context.Background(), bell("4444444444444444")); err == nil || !strings.Contains(err.Error(), "did not appear") {
		t.Fatalf("Ring of a paste that never arrived: %v, want a failure", err)
	}
	if ev, err := door.Evidence(context.Background(), []string{"4444444444444444"}); err != nil || len(ev.Seen) != 0 {
		t.Fatalf("evidence of a paste that never arrived: %v %v", ev, err)
	}
	tmux("kill-server")
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatalf("the deliverer outlived its pane:\n%s", out)
	}
}

// Codex through "mailfs live codex": its own app server, the TUI on it
// (here in tmux only to give it a terminal: nothing is typed by mailfs),
// and the deliverer as a second client of the server. An idle session
// wakes with a new turn; a busy one has the doorbell steered into its
// running turn; each receipt is delivered only once Codex's rollout shows
// the model answered, checked against the stand-in's log; /new keeps every
// receipt, and a doorbell the old conversation never answered rings again
// into the new one.
func TestRealCodexLive(t *testing.T) {
	codex, bin := interactiveCLI(t, "codex", "@openai/codex")
	base := t.TempDir()
	proj, codexHome := filepath.Join(base, "proj"), filepath.Join(base, "codex")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(codexHome, 0o700)
	root := filepath.Join(proj, ".chipset")
	store, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	// The model holds its answer to the person's long turn until the test
	// lets it go: the turn runs meanwhile.
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	defer let()
	// And its answer to the doorbell rung just before /new, until the
	// test lets that go.
	across := make(chan struct{})
	var onceAcross sync.Once
	letAcross := func() { onceAcross.Do(func() { close(across) }) }
	defer letAcross()
	model, err := stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		if strings.Contains(r.Raw, "LONG_TURN") && !strings.Contains(r.Raw, "MID-TURN") {
			<-release
		}
		if strings.Contains(r.Raw, "ACROSS-NEW") {
			<-across
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	config := fmt.Sprintf("model = \"stub-model\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\nbase_url = %q\nwire_api = \"responses\"\nenv_key = \"STUB_KEY\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n",
		model.URL+"/v1", proj)
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600)

	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	env := []string{"CODEX_HOME=" + codexHome, "STUB_KEY=" + testKey, "PATH=" + os.Getenv("PATH"), "HOME=" + base,
		"MAILFS_ROOT=" + root, "MAILFS_STATE_DIR=" + filepath.Join(base, "state"), "TMPDIR=" + base}
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + bin + " live codex toast --codex " + codex + " 2>" + filepath.Join(base, "live.err")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer func() {
		if t.Failed() {
			errs, _ := os.ReadFile(filepath.Join(base, "live.err"))
			t.Logf("the pane:\n%s\nstderr:\n%s", tmux("capture-pane", "-p"), errs)
		}
		tmux("kill-server") // a hangup: the launcher ends the TUI and its server
		gone := time.Now().Add(15 * time.Second)
		for len(processesIn(proj)) > 0 && time.Now().Before(gone) {
			time.Sleep(50 * time.Millisecond)
		}
		if left := endProcessesIn(proj); len(left) > 0 {
			t.Errorf("left running 15s after the session: %q", left)
		}
	}()
	until(t, "Codex's input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "Ask Codex") })
	until(t, "the deliverer to start", 30*time.Second, func() bool { return liveRecord(store, "codex") != nil })
	reached := func(id string) bool {
		for _, r := range model.Requests() {
			if strings.Contains(r.Raw, "mailfs doorbell for toast") && strings.Contains(r.Raw, id) {
				return true
			}
		}
		return false
	}

	// Idle: a new turn.
	m := sendToast(t, store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{m}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the idle wake's receipt: %+v %v, want delivered", rs, err)
	}
	if !reached(m.ID) {
		t.Fatalf("delivered, yet no request to the model named %s", m.ID)
	}
	stillUnread(t, store, m.ID)

	// Busy: a person's turn runs (the model holds its answer); urgent mail
	// is steered into it, and is not delivered until the model answers.
	tmux("send-keys", "-t", "%0", "-l", "LONG_TURN: refactor everything")
	until(t, "the person's prompt in the box", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "LONG_TURN: refactor") })
	tmux("send-keys", "-t", "%0", "Enter")
	until(t, "the long turn to reach the model", 30*time.Second, func() bool {
		for _, r := range model.Requests() {
			if strings.Contains(r.Raw, "LONG_TURN") {
				return true
			}
		}
		return false
	})
	busy := sendToast(t, store, "MID-TURN: the build broke", maildir.Urgent)
	until(t, "the doorbell to be rung into the running turn", 30*time.Second, func() bool {
		r := liveRecord(store, "codex")
		return r != nil && !r.Rung[busy.ID].IsZero()
	})
	if reached(busy.ID) {
		t.Fatal("the doorbell reached the model while its request was held")
	}
	if rs := receiptsOf(t, store, 2*time.Second, busy); rs[0].Live == live.Delivered {
		t.Fatalf("delivered before the model answered: %+v", rs[0])
	}
	let()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel2()
	if rs, err := live.WaitDelivered(ctx2, store, []*maildir.Message{busy}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the mid-turn receipt: %+v %v, want delivered", rs, err)
	}
	if !reached(busy.ID) {
		t.Fatalf("delivered, yet no request to the model named %s", busy.ID)
	}
	// Steered, not a turn of its own: in Codex's rollout no turn starts
	// between the person's prompt and the doorbell.
	if n := turnsBetween(t, codexHome, "LONG_TURN", busy.ID); n != 0 {
		t.Fatalf("%d turns started between the person's prompt and the doorbell, want 0 (steered into the running turn)", n)
	}

	// /new, a new conversation in the same session. A doorbell rung just
	// before it, whose turn a person interrupted before the model
	// answered, is not delivered by the old conversation: it rings again
	// into the new one and is delivered there; the receipts delivered
	// before /new stay delivered; mail after it goes into the new
	// conversation and is delivered there.
	until(t, "the session to be idle", 30*time.Second, func() bool {
		r := liveRecord(store, "codex")
		return r != nil && r.Session.Status == "idle"
	})
	before := liveRecord(store, "codex").Session.ID
	held := sendToast(t, store, "ACROSS-NEW: rung before /new", maildir.Urgent)
	until(t, "the doorbell before /new to reach the model", 30*time.Second, func() bool { return reached(held.ID) })
	until(t, "the turn on screen", 30*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "esc to interrupt") })
	tmux("send-keys", "-t", "%0", "Escape") // the person interrupts the turn
	until(t, "the interrupted turn to end", 30*time.Second, func() bool { return !strings.Contains(tmux("capture-pane", "-p"), "esc to interrupt") })
	tmux("send-keys", "-t", "%0", "-l", "/new")
	until(t, "/new in the box", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "/new") })
	// An Enter that came before the command's menu was drawn only picks
	// it there: Enter again while the box still holds it.
	var entered time.Time
	until(t, "the new conversation", 30*time.Second, func() bool {
		if r := liveRecord(store, "codex"); r != nil && r.Session.ID != "" && r.Session.ID != before {
			return true
		}
		if time.Since(entered) > time.Second && strings.Contains(tmux("capture-pane", "-p"), "› /new") {
			tmux("send-keys", "-t", "%0", "Enter")
			entered = time.Now()
		}
		return false
	})
	if rs := receiptsOf(t, store, 0, held); rs[0].Live == live.Delivered {
		t.Fatalf("the doorbell interrupted before the model answered, at /new: %+v, want not delivered", rs[0])
	}
	letAcross() // the interrupted turn's answer comes too late for any turn
	after := sendToast(t, store, "AFTER-NEW: in the new conversation", maildir.Urgent)
	ctx3, cancel3 := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel3()
	if rs, err := live.WaitDelivered(ctx3, store, []*maildir.Message{after}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the receipt after /new: %+v %v, want delivered", rs, err)
	}
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, after.ID) && (strings.Contains(r.Raw, m.ID) || strings.Contains(r.Raw, "LONG_TURN")) {
			t.Fatalf("the doorbell after /new went into the old conversation:\n%.2000s", r.Raw)
		}
	}
	rs := receiptsOf(t, store, 60*time.Second, m, busy, held)
	if rs[0].Live != live.Delivered || rs[1].Live != live.Delivered {
		t.Fatalf("receipts delivered before /new, after it: %+v", rs[:2])
	}
	if rs[2].Live != live.Delivered {
		t.Fatalf("the doorbell interrupted before the model answered, then /new: %+v, want delivered by the new conversation", rs[2])
	}
	inNew := false // a request of the new conversation named it
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, held.ID) && !strings.Contains(r.Raw, "LONG_TURN") {
			inNew = true
		}
	}
	if !inNew {
		t.Fatalf("%s is delivered, yet no request of the new conversation named it", held.ID)
	}
	t.Logf("/new: before it %s, %s; interrupted, then rung again into the new conversation: %s; after it %s", rs[0].Live, rs[1].Live, rs[2].Live, live.Delivered)

	// The session ends with the TUI; the launcher, its server and its
	// deliverer with it.
	tmux("send-keys", "-t", "%0", "C-c")
	time.Sleep(300 * time.Millisecond)
	tmux("send-keys", "-t", "%0", "C-c")
	until(t, "the session to end", 30*time.Second, func() bool { return liveRecord(store, "codex") == nil })
}

// turnsBetween counts the turns Codex's rollouts show starting after the
// user message holding from and before the one holding to.
func turnsBetween(t *testing.T, codexHome, from, to string) int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		n, seen := 0, false
		for _, line := range strings.Split(string(data), "\n") {
			user := strings.Contains(line, `"type":"response_item"`) && strings.Contains(line, `"role":"user"`)
			switch {
			case user && strings.Contains(line, from):
				seen, n = true, 0
			case seen && strings.Contains(line, `"type":"task_started"`):
				n++
			case seen && user && strings.Contains(line, to):
				return n
			}
		}
	}
	t.Fatalf("no rollout holds %q then %q", from, to)
	return -1
}

// processesIn lists the processes working in dir or below (Linux; none
// elsewhere).
func processesIn(dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// "mailfs live codex" killed with SIGKILL, which it cannot catch, leaves
// nothing running: the real Codex TUI and its app server end with it (on
// Linux, by their parent-death signal). The pane stays open after the
// launcher dies, so the TUI does not end merely by losing its terminal.
func TestRealCodexLiveKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a parent-death signal: on macOS a launcher killed with SIGKILL leaves Codex running (documented)")
	}
	codex, bin := interactiveCLI(t, "codex", "@openai/codex")
	base := t.TempDir()
	proj, codexHome := filepath.Join(base, "proj"), filepath.Join(base, "codex")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(codexHome, 0o700)
	root := filepath.Join(proj, ".chipset")
	store, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(stubmodel.Request) stubmodel.Reply { return stubmodel.Reply{Text: "done"} })
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	config := fmt.Sprintf("model = \"stub-model\"\nmodel_provider = \"stub\"\n\n[model_providers.stub]\nname = \"stub\"\nbase_url = %q\nwire_api = \"responses\"\nenv_key = \"STUB_KEY\"\n\n[projects.%q]\ntrust_level = \"trusted\"\n",
		model.URL+"/v1", proj)
	os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600)
	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	env := []string{"CODEX_HOME=" + codexHome, "STUB_KEY=" + testKey, "PATH=" + os.Getenv("PATH"), "HOME=" + base,
		"MAILFS_ROOT=" + root, "MAILFS_STATE_DIR=" + filepath.Join(base, "state"), "TMPDIR=" + base}
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + bin + " live codex toast --codex " + codex + " 2>" + filepath.Join(base, "live.err")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "200", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer func() {
		if t.Failed() {
			errs, _ := os.ReadFile(filepath.Join(base, "live.err"))
			t.Logf("the pane:\n%s\nstderr:\n%s", tmux("capture-pane", "-p"), errs)
		}
		tmux("kill-server")
		if left := endProcessesIn(proj); len(left) > 0 {
			t.Errorf("left running after the test: %q", left)
		}
	}()
	tmux("set-option", "-g", "remain-on-exit", "on") // the terminal outlives the launcher
	until(t, "Codex's input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "Ask Codex") })
	until(t, "the deliverer to start", 30*time.Second, func() bool { return liveRecord(store, "codex") != nil })

	// The pane's process is the launcher: mailfs execs mailfs-codex.
	launcher, err := strconv.Atoi(strings.TrimSpace(tmux("display-message", "-p", "-t", "%0", "#{pane_pid}")))
	if err != nil {
		t.Fatal(err)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", launcher)); filepath.Base(exe) != "mailfs-codex" {
		t.Fatalf("the pane runs %q, want mailfs-codex", exe)
	}
	var children []int
	for _, pid := range processesIn(proj) {
		if pid != launcher {
			children = append(children, pid)
		}
	}
	if len(children) < 2 {
		t.Fatalf("the launcher's session runs %v besides it, want at least the app server and the TUI", children)
	}
	t.Logf("killing the launcher (pid %d), which runs %d processes: %v", launcher, len(children), children)
	if err := syscall.Kill(launcher, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	gone := time.Now().Add(15 * time.Second)
	for len(processesIn(proj)) > 0 && time.Now().Before(gone) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := processesIn(proj); len(left) > 0 {
		t.Fatalf("%d of the %d processes the launcher started still ran 15s after it was killed: %v", len(left), len(children), left)
	}
	if !strings.Contains(tmux("list-panes", "-F", "#{pane_dead}"), "1") {
		t.Fatalf("the pane closed: the TUI may have ended by losing its terminal, not by the parent-death signal")
	}
}
