package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// geminiReply answers Gemini CLI's requests: its router's and its
// next-speaker check's (which want JSON) with JSON, the rest with text.
func geminiReply(r stubmodel.Request) stubmodel.Reply {
	if strings.Contains(r.Raw, `"responseJsonSchema"`) || strings.Contains(r.Raw, `"responseMimeType":"application/json"`) {
		return stubmodel.Reply{Text: `{"complexity_reasoning":"simple","complexity_score":10,"reasoning":"done","next_speaker":"user"}`}
	}
	return stubmodel.Reply{Text: "done"}
}

// Gemini CLI (npm: @google/gemini-cli, pinned in .ci/run) in a tmux pane,
// against the model stand-in (GOOGLE_GEMINI_BASE_URL), with "mailfs live
// tmux" beside it: a person's text in the input box, however it sits, is
// never sent nor mixed with a doorbell; a doorbell is submitted (Gemini
// CLI takes an Enter right after a paste as a newline: the door submits
// it anyway) and is delivered only once Gemini CLI's own chat record
// shows the model answered it — checked against the stand-in's log.
func TestRealGeminiInTmux(t *testing.T) {
	gemini, bin := interactiveCLI(t, "gemini", "@google/gemini-cli")
	base := t.TempDir()
	proj, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o700)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},`+
		`"general":{"disableAutoUpdate":true,"disableUpdateNag":true},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`), 0o600)
	root := filepath.Join(proj, ".chipset")
	store, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	// The model holds its answer to a request naming HOLD until the test
	// lets it go: the doorbell is then submitted, and not answered.
	var once sync.Once
	release := make(chan struct{})
	model, err := stubmodel.Start(func(r stubmodel.Request) stubmodel.Reply {
		if strings.Contains(r.Raw, "HOLD_THE_ANSWER") && !strings.Contains(r.Raw, `"responseJsonSchema"`) {
			<-release
		}
		return geminiReply(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	let := func() { once.Do(func() { close(release) }) }
	defer model.Close()
	defer let()

	sock := filepath.Join(base, "tmux.sock")
	tmux := func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
	env := []string{"HOME=" + home, "GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=" + model.URL, "PATH=" + os.Getenv("PATH"), "TERM=xterm-256color"}
	// env -i: Gemini CLI turns non-interactive (it reads no terminal and
	// exits) when it finds itself in CI ($CI, $CONTINUOUS_INTEGRATION,
	// $CI_*), which the tmux server would pass on from a CI run.
	script := "cd " + proj + " && exec env -i " + strings.Join(quoteAll(env), " ") + " " + gemini + " 2>" + filepath.Join(base, "gemini.err")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "160", "-y", "50", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	defer func() {
		if t.Failed() {
			errs, _ := os.ReadFile(filepath.Join(base, "gemini.err"))
			t.Logf("the pane:\n%s\nGemini CLI's stderr:\n%s", tmux("capture-pane", "-p"), errs)
		}
		tmux("kill-server")
		if left := endProcessesIn(proj); len(left) > 0 {
			t.Logf("ended after the pane: %q", left)
		}
	}()
	until(t, "Gemini CLI's input box", 60*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "Type your message") })

	door, err := live.FindTmux("", sock, "%0")
	if err != nil {
		t.Fatal(err)
	}
	if door.Prompt.Runtime != "gemini" || door.Record == nil {
		t.Fatalf("the door found %q (record %v) in the pane, want gemini and its chats", door.Prompt.Runtime, door.Record)
	}
	door.TypingQuiet = time.Nanosecond
	input := boxOf(t, tmux, door)
	const nonce = "5555666677778888"
	bell := "mailfs doorbell for toast: 1 new message(s), 1 URGENT.\n- [urgent] x from mayor: WAKE UP\nThe mail stays in your mailbox until you read it; this note is only a doorbell " + hook.RingMark(nonce) + "."
	neverOverAPerson(t, tmux, door, bell)
	for _, r := range model.Requests() {
		if strings.Contains(r.Raw, "PERSON") || strings.Contains(r.Raw, nonce) {
			t.Fatalf("a person's text or the doorbell reached the model:\n%s", r.Raw)
		}
	}
	// Shell mode (a person pressed "!"): not a message box, no ring.
	tmux("send-keys", "-t", "%0", "-l", "!")
	until(t, "shell mode", 10*time.Second, func() bool { return strings.Contains(input(), "shell mode") })
	if err := door.Ring(context.Background(), bell); !errors.Is(err, live.ErrBusy) {
		t.Fatalf("Ring into shell mode: %v, want ErrBusy", err)
	}
	tmux("send-keys", "-t", "%0", "Escape")
	until(t, "shell mode to end", 10*time.Second, func() bool { return input() == "" })

	// With no wait after the paste, Gemini CLI takes the Enter as a
	// newline (its 40 ms paste guard): the door takes it back and submits
	// again; the model gets the doorbell once, whole.
	door.Prompt.Settle = 0
	if err := door.Ring(context.Background(), bell); err != nil {
		t.Fatalf("Ring with no settle: %v", err)
	}
	until(t, "the unsettled doorbell to reach the model", 30*time.Second, func() bool {
		for _, r := range model.Requests() {
			if strings.HasSuffix(r.Path, ":streamGenerateContent") && userTurnsNaming(r, hook.RingMark(nonce)) == 1 {
				return true
			}
		}
		return false
	})
	until(t, "the box to empty", 10*time.Second, func() bool { return input() == "" })

	// The deliverer: a doorbell goes in and is submitted; the model holds
	// its answer, so it is not delivered (the stand-in has the request,
	// and gave no answer); once the model answers, it is.
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
	until(t, "the deliverer to start", 30*time.Second, func() bool { return liveRecord(store, "tmux") != nil })
	m := sendToast(t, store, "HOLD_THE_ANSWER: MERGE_FAILED", maildir.Urgent)
	until(t, "the doorbell to reach the model", 60*time.Second, func() bool {
		for _, r := range model.Requests() {
			if strings.Contains(r.Raw, "mailfs doorbell for toast") && strings.Contains(r.Raw, m.ID) {
				return true
			}
		}
		return false
	})
	until(t, "the box to be empty after the doorbell was submitted", 10*time.Second, func() bool { return input() == "" })
	// Submitted, not answered: whatever the receipt says, not delivered.
	if rs := receiptsOf(t, store, 3*time.Second, m); rs[0].Live == live.Delivered {
		t.Fatalf("delivered while the model has not answered: %+v", rs[0])
	}
	let()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if rs, err := live.WaitDelivered(ctx, store, []*maildir.Message{m}); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the receipt: %+v %v, want delivered\n%s", rs, err, out)
	}
	stillUnread(t, store, m.ID)
	// The conversation the model was last given names the message in one
	// user turn: the doorbell was submitted once, whole.
	var last stubmodel.Request
	for _, r := range model.Requests() {
		if strings.HasSuffix(r.Path, ":streamGenerateContent") {
			last = r
		}
	}
	if n := userTurnsNaming(last, m.ID); n != 1 {
		t.Fatalf("the model's last conversation has %d user turns naming %s, want 1:\n%s", n, m.ID, last.Raw)
	}

	// Doorbell after doorbell (the issue saw 7 of 7 "delivered" with none
	// reaching the model): mail sent 2.5 s apart, past the spacing, so
	// each rides a doorbell of its own. Every receipt that says delivered
	// names a message a request to the model carried, and the model
	// answered every request here.
	var more []*maildir.Message
	for i := range 6 {
		more = append(more, sendToast(t, store, fmt.Sprintf("AGAIN %d: MERGE_FAILED", i), maildir.Urgent))
		time.Sleep(2500 * time.Millisecond) // the traffic's shape, not a wait for an outcome
	}
	rs := receiptsOf(t, store, 60*time.Second, more...)
	delivered := 0
	for i, r := range rs {
		carried := false
		for _, q := range model.Requests() {
			if strings.HasSuffix(q.Path, ":streamGenerateContent") && userTurnsNaming(q, more[i].ID) > 0 {
				carried = true
			}
		}
		if r.Live == live.Delivered {
			delivered++
			if !carried {
				t.Fatalf("%s is delivered, yet no request to the model carried it", more[i].ID)
			}
		}
	}
	t.Logf("doorbell after doorbell: %d of %d delivered, each carried to the model", delivered, len(more))
	if delivered != len(more) {
		t.Fatalf("%d of %d delivered: %+v", delivered, len(more), rs)
	}

	tmux("kill-server")
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatalf("the deliverer outlived its pane:\n%s", out)
	}
}

// userTurnsNaming counts the user turns of a Gemini API request whose
// text holds s.
func userTurnsNaming(r stubmodel.Request, s string) int {
	var body struct {
		Contents []struct {
			Role  string          `json:"role"`
			Parts json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	json.Unmarshal([]byte(r.Raw), &body)
	n := 0
	for _, c := range body.Contents {
		if c.Role == "user" && strings.Contains(string(c.Parts), s) {
			n++
		}
	}
	return n
}

// boxOf returns a function that reads the door's input box from its pane.
func boxOf(t *testing.T, tmux func(...string) string, door *live.TmuxDoor) func() string {
	return func() string {
		out := tmux("display-message", "-p", "-t", "%0", "#{cursor_x} #{cursor_y}")
		var s live.Screen
		if _, err := fmt.Sscan(out, &s.X, &s.Y); err != nil {
			t.Fatalf("the cursor: %q: %v", out, err)
		}
		s.Rows = strings.Split(strings.TrimSuffix(tmux("capture-pane", "-p", "-t", "%0"), "\n"), "\n")
		in, err := door.Prompt.Input(s)
		if err != nil {
			return "error: " + err.Error()
		}
		return in
	}
}

// neverOverAPerson puts a person's text in the runtime's input box in
// each way a person leaves it (only those named in only, if any), rings,
// and checks the door waited (ErrBusy) and the box holds exactly the
// person's text, then clears it.
func neverOverAPerson(t *testing.T, tmux func(...string) string, door *live.TmuxDoor, bell string, only ...string) {
	t.Helper()
	input := boxOf(t, tmux, door)
	for _, c := range []struct {
		name  string
		keys  [][]string // tmux send-keys arguments, in turn
		want  string     // what the box then holds
		clear [][]string // keys to the box's last row, before it is cleared
	}{
		{"half-typed", [][]string{{"-l", "PERSON half a li"}}, "PERSON half a li", nil},
		{"cursor at the start", [][]string{{"-l", "PERSON some words"}, {"Home"}}, "PERSON some words", nil},
		{"multi-line", [][]string{{"-l", "PERSON first"}, {"C-j"}, {"-l", "second"}}, "PERSON first\nsecond", nil},
		{"multi-line, cursor on an empty last row", [][]string{{"-l", "PERSON first"}, {"C-j"}}, "PERSON first\n", nil},
		// The cursor's row and all above it blank, the text below: a door
		// that read the box only down to the cursor would type here.
		{"text below the cursor", [][]string{{"C-j"}, {"-l", "PERSON below"}, {"Up"}}, "\nPERSON below", [][]string{{"Down"}}},
		{"only >", [][]string{{"-l", "> "}}, ">", nil},
		{"only *", [][]string{{"-l", "* "}}, "*", nil},
		{"only |", [][]string{{"-l", "| "}}, "|", nil},
		{"only »", [][]string{{"-l", "» "}}, "»", nil},
	} {
		if len(only) > 0 && !slices.Contains(only, c.name) {
			continue
		}
		for _, k := range c.keys {
			tmux(append([]string{"send-keys", "-t", "%0"}, k...)...)
		}
		until(t, c.name+": the person's text in the box", 10*time.Second, func() bool { return input() == c.want })
		captureScreen(t, tmux, door.Prompt.Runtime, c.name)
		if err := door.Ring(context.Background(), bell); !errors.Is(err, live.ErrBusy) {
			t.Fatalf("%s: Ring: %v, want ErrBusy", c.name, err)
		}
		// The box as it settles (a TUI redraws its screen now and then):
		// the person's text alone, nothing added.
		until(t, c.name+": the box to hold only the person's text after the ring", 5*time.Second, func() bool { return input() == c.want })
		// The person clears the box, key by key (Ctrl+C on an empty box
		// is half of a quit).
		for _, k := range c.clear {
			tmux(append([]string{"send-keys", "-t", "%0"}, k...)...)
		}
		tmux("send-keys", "-t", "%0", "End")
		tmux("send-keys", "-t", "%0", "-N", "40", "BSpace")
		until(t, c.name+": the box to clear", 10*time.Second, func() bool { return input() == "" })
	}
}

// captureScreen writes the pane's screen as the table test reads it
// (testdata/tmux/*.screen: "cursor X Y", then capture-pane -p) into
// $MAILFS_TMUX_SCREENS, named rt-case, when that is set: how the screens
// of TestPromptInputFromRealScreens are taken from the real runtimes.
func captureScreen(t *testing.T, tmux func(...string) string, rt, name string) {
	dir := os.Getenv("MAILFS_TMUX_SCREENS")
	if dir == "" {
		return
	}
	if glyph, ok := strings.CutPrefix(name, "only "); ok {
		name = fmt.Sprintf("only glyph %x", glyph) // as the table names them
	}
	slug := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(name))
	slug = strings.Join(strings.FieldsFunc(slug, func(r rune) bool { return r == '-' }), "-")
	cursor := strings.TrimSpace(tmux("display-message", "-p", "-t", "%0", "#{cursor_x} #{cursor_y}"))
	screen := "cursor " + cursor + "\n" + tmux("capture-pane", "-p", "-t", "%0")
	if err := os.WriteFile(filepath.Join(dir, rt+"-"+slug+".screen"), []byte(screen), 0o644); err != nil {
		t.Fatal(err)
	}
}
