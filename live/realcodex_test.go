package live_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// Codex (npm: @openai/codex, pinned in .ci/run) has no per-session socket a
// deliverer can reach, and runs its hooks in a shared app-server daemon
// that outlives each session (see docs/agents.md), so its live path is the
// tmux doorbell: this test runs the real Codex TUI in a tmux pane against
// the model stand-in (its Responses API) with "mailfs live tmux" beside
// it.
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
