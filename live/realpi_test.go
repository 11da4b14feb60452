package live_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// The real pi (npm: @mariozechner/pi-coding-agent, pinned in .ci/run),
// interactive in a tmux pane, offline against the model stand-in through
// an openai-completions provider, in a project "mailfs setup pi" set up:
// the deliverer starts with the session; the first turn carries the
// waiting mail; an idle session is woken by urgent mail and the receipt
// says delivered (the extension showed "mailfs live seen" the request that
// carried it); urgent mail sent during a long tool call reaches the model
// after it; when pi ends, so does the deliverer, keeping its receipts.
func TestRealPi(t *testing.T) {
	pi, bin := interactiveCLI(t, "pi", "@mariozechner/pi-coding-agent")
	base := t.TempDir()
	proj, home, release := filepath.Join(base, "proj"), filepath.Join(base, "home"), filepath.Join(base, "release")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(filepath.Join(home, ".pi", "agent"), 0o755)
	store, err := maildir.Open(filepath.Join(proj, ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		if last := r.LastUser(); strings.Contains(last, "START-LONG-TOOL") && !strings.Contains(r.Raw, `"role":"tool"`) {
			return stubmodel.Reply{Tool: "bash", Input: map[string]any{"command": "while [ ! -e " + release + " ]; do sleep 0.05; done"}}
		}
		return stubmodel.Reply{Text: "done"}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	defer os.WriteFile(release, nil, 0o644)
	os.WriteFile(filepath.Join(home, ".pi", "agent", "models.json"), []byte(`{"providers": {"stub": {"baseUrl": "`+model.URL+`/v1", "api": "openai-completions", "apiKey": "k",
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
	waiting := sendToast(t, store, "WORK gt-8: before the session", maildir.Normal)
	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	script := "cd " + proj + " && exec env " + strings.Join(quoteAll(env), " ") + " " + pi + " --model stub/stub-model"
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
	var rec *live.Record
	until(t, "the deliverer to start with the session", 60*time.Second, func() bool {
		rec = liveRecord(store, "pi")
		return rec != nil
	})
	type_ := func(text string) {
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
	type_("hello there")
	if i := reached("the first turn", "hello there", 0); !strings.Contains(model.Requests()[i].Raw, waiting.ID) {
		t.Fatalf("the first turn does not carry the waiting mail:\n%.3000s", model.Requests()[i].Raw)
	}
	idle := func() {
		until(t, "the session to be idle", 60*time.Second, func() bool {
			r := liveRecord(store, "pi")
			return r != nil && r.Session.Status == "idle"
		})
	}
	idle()
	n := len(model.Requests())
	wake := sendToast(t, store, "WAKE UP: MERGE_FAILED", maildir.Urgent)
	reached("a new turn carrying the doorbell", wake.ID, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{wake}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the wake's receipt: %+v %v", rs, err)
	}
	idle()
	n = len(model.Requests())
	type_("START-LONG-TOOL")
	reached("the long tool call", "START-LONG-TOOL", n)
	n = len(model.Requests())
	busy := sendToast(t, store, "MERGE_FAILED mid-call", maildir.Urgent)
	until(t, "the doorbell to ring", 30*time.Second, func() bool {
		r := liveRecord(store, "pi")
		return r != nil && !r.Rung[busy.ID].IsZero()
	})
	os.WriteFile(release, nil, 0o644)
	reached("the urgent mail after the tool call", busy.ID, n)
	stillUnread(t, store, busy.ID)
	tmux("kill-server")
	until(t, "the deliverer to end with the session", 30*time.Second, func() bool { return !rec.Deliverer.Alive() })
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{wake}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("after the session ended, the wake's receipt: %+v %v", rs, err)
	}
}
