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

	"github.com/mailfs/mailfs/live"
)

// tmuxDoor returns a door on the test's own tmux server.
func tmuxDoor(t *testing.T, sock string) *live.TmuxDoor {
	t.Helper()
	d, err := live.FindTmux("", sock, "%0")
	if err != nil {
		t.Fatal(err)
	}
	d.TypingQuiet = time.Nanosecond
	d.Prompt = live.Prompt{Runtime: "test", Marks: []string{"› "}} // the test programs' prompt: a line's echo wraps unindented
	return d
}

func TestTmuxDoorRings(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to test the tmux doorbell")
	}
	dir := t.TempDir()
	sock, got := filepath.Join(dir, "tmux.sock"), filepath.Join(dir, "got")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "300", "-y", "20", "sh", "-c", "printf '› '; read line; printf '%s' \"$line\" > "+got+".tmp && mv "+got+".tmp "+got+"; printf '› '; sleep 60").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	d := tmuxDoor(t, sock)
	if _, err := d.Session(context.Background()); err != nil {
		t.Fatalf("session: %v", err)
	}
	text := "mailfs doorbell for toast: 1 new message(s).\n- id from mayor: " + strings.Repeat("long subject ", 60)
	if err := d.Ring(context.Background(), text); err != nil {
		t.Fatal(err)
	}
	until(t, "the line to arrive", 10*time.Second, func() bool { _, err := os.Stat(got); return err == nil })
	line, _ := os.ReadFile(got)
	if want := strings.Join(strings.Fields(text), " "); string(line) != want {
		t.Fatalf("the pane read %q\nwant %q", line, want)
	}
	exec.Command("tmux", "-S", sock, "kill-server").Run()
	if _, err := d.Session(context.Background()); err == nil {
		t.Fatal("a killed pane is still a session")
	}
}

// tmuxServer starts a tmux server running script in pane %0, and returns
// its socket and a function that runs tmux commands on it.
func tmuxServer(t *testing.T, script string) (string, func(args ...string) string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to test the tmux doorbell")
	}
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "120", "-y", "20", "sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	return sock, func(args ...string) string {
		out, _ := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		return string(out)
	}
}

// A person's half-typed line is never sent, nor mixed with the doorbell:
// the door waits (ErrBusy) while the input line holds text, and types
// once it is empty; the doorbell is confirmed by its own ring mark,
// submitted off the input line.
func TestTmuxDoorNeverTypesOverAPerson(t *testing.T) {
	got := filepath.Join(t.TempDir(), "got")
	// A prompt, then what is typed at it goes to got, line by line.
	sock, tmux := tmuxServer(t, "printf '› '; while IFS= read -r l; do printf '%s\\n' \"$l\" >> "+got+"; printf '› '; done")
	d := tmuxDoor(t, sock)
	until(t, "the prompt", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "›") })
	tmux("send-keys", "-t", "%0", "-l", "PERSON half a li")
	until(t, "the person's typing to show", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p"), "PERSON half a li") })
	const nonce = "0123456789abcdef"
	bell := "mailfs doorbell for toast: 1 new message(s).\n- id from mayor: MERGE_FAILED\nThe mail stays in your mailbox until you read it; this note is only a doorbell (ring " + nonce + ")."
	for range 3 {
		if err := d.Ring(context.Background(), bell); !errors.Is(err, live.ErrBusy) || !strings.Contains(err.Error(), "PERSON half a li") {
			t.Fatalf("Ring over a half-typed line: %v, want ErrBusy naming it", err)
		}
	}
	if ev, err := d.Evidence(context.Background(), []string{nonce}); err != nil || len(ev.Seen)+len(ev.Queued) != 0 {
		t.Fatalf("evidence before the ring: %v %v", ev, err)
	}
	tmux("send-keys", "-t", "%0", "C-u") // the person clears the line
	until(t, "the line to clear", 10*time.Second, func() bool { return !strings.Contains(tmux("capture-pane", "-p"), "PERSON") })
	if err := d.Ring(context.Background(), bell); err != nil {
		t.Fatal(err)
	}
	until(t, "the line to arrive", 10*time.Second, func() bool { b, _ := os.ReadFile(got); return strings.Contains(string(b), "\n") })
	line, _ := os.ReadFile(got)
	if want := strings.Join(strings.Fields(bell), " ") + "\n"; string(line) != want {
		t.Fatalf("the program read %q\nwant %q", line, want)
	}
	// The program shows it submitted: queued, never delivered, for no
	// record says the model answered it.
	ev, err := d.Evidence(context.Background(), []string{nonce, "fedcba9876543210"})
	if err != nil || !ev.Queued[nonce] || len(ev.Queued) != 1 || len(ev.Seen) != 0 {
		t.Fatalf("evidence after the ring: %v %v, want only %s queued, none seen", ev, err, nonce)
	}
}

// A paste that never shows is not a ring, even with an older doorbell, the
// same but for its ring mark, still on the screen: the door looks for this
// doorbell's own mark, and reports the failure.
func TestTmuxDoorFailedPasteIsNotARing(t *testing.T) {
	old := "mailfs doorbell for toast: 1 new message(s). - id from mayor: MERGE_FAILED The mail stays in your mailbox until you read it; this note is only a doorbell (ring 1111111111111111)."
	// The old doorbell is on the screen; the program then takes input
	// without echoing it: a paste never shows.
	sock, tmux := tmuxServer(t, "printf '%s\\n› ' '"+old+"'; stty -echo; cat > /dev/null")
	d := tmuxDoor(t, sock)
	until(t, "the old doorbell on the screen", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p", "-J"), "ring 1111111111111111") })
	const nonce = "2222222222222222"
	bell := strings.Replace(old, "1111111111111111", nonce, 1)
	err := d.Ring(context.Background(), bell)
	if err == nil || errors.Is(err, live.ErrBusy) || !strings.Contains(err.Error(), "did not appear") {
		t.Fatalf("Ring into a pane that never shows it: %v, want a failure", err)
	}
	if ev, err := d.Evidence(context.Background(), []string{nonce}); err != nil || len(ev.Seen)+len(ev.Queued) != 0 {
		t.Fatalf("evidence of a failed paste: %v %v", ev, err)
	}
}

// readScreen reads a screen captured from a real runtime in tmux
// (testdata/tmux/*.screen: a line "cursor X Y", then capture-pane -p).
func readScreen(t *testing.T, name string) live.Screen {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tmux", name+".screen"))
	if err != nil {
		t.Fatal(err)
	}
	head, rest, _ := strings.Cut(string(data), "\n")
	var s live.Screen
	if _, err := fmt.Sscanf(head, "cursor %d %d", &s.X, &s.Y); err != nil {
		t.Fatalf("%s: %q: %v", name, head, err)
	}
	s.Rows = strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	return s
}

// The input box as each runtime draws it, read from screens captured from
// the real Codex 0.171.0, Gemini CLI 0.61.0, Qwen Code 0.24.4 and Claude Code 2.1.332 in tmux: the whole box,
// every row from the runtime's prompt to its status line, left and right
// of the cursor; a placeholder is empty, a lone glyph is text.
func TestPromptInputFromRealScreens(t *testing.T) {
	for _, c := range []struct {
		screen, want, err string
	}{
		{screen: "codex-empty", want: ""},
		{screen: "codex-busy-empty", want: ""},  // a turn runs; the box is empty
		{screen: "codex-busy-queued", want: ""}, // a queued message shows above the box, not in it
		{screen: "codex-half-typed", want: "PERSON half a li"},
		{screen: "codex-cursor-at-start", want: "PERSON half a li"},
		{screen: "codex-busy-typed", want: "PERSON typing while busy"},
		{screen: "codex-multiline", want: "PERSON half a li\nsecond line"},
		{screen: "codex-multiline-cursor-on-empty-last-row", want: "PERSON half a li\nsecond line\n"},
		{screen: "codex-text-below-the-cursor", want: "\nPERSON below"}, // the cursor on the blank first row
		{screen: "codex-only-glyph-3e", want: ">"},
		{screen: "codex-only-glyph-2a", want: "*"},
		{screen: "codex-only-glyph-7c", want: "|"},
		{screen: "codex-only-glyph-c2bb", want: "»"},
		{screen: "gemini-empty", want: ""},
		{screen: "gemini-yolo-empty", want: ""},
		{screen: "gemini-auto-edit-empty", want: ""},
		{screen: "gemini-busy-empty", want: ""},
		{screen: "gemini-busy-queued", want: ""},
		{screen: "gemini-half-typed", want: "PERSON half a li"},
		{screen: "gemini-cursor-at-start", want: "PERSON half a li"},
		{screen: "gemini-busy-typed", want: "PERSON typing while busy"},
		{screen: "gemini-multiline-cursor-on-empty-last-row", want: "first lineS-Entersecond\nthird\\\n"},
		{screen: "gemini-multiline", want: "PERSON first\nsecond"},
		{screen: "gemini-text-below-the-cursor", want: "\nPERSON below"}, // Gemini CLI draws its own cursor; tmux's stays at the text's end
		{screen: "gemini-only-glyph-3e", want: ">"},
		{screen: "gemini-only-glyph-2a", want: "*"},
		{screen: "gemini-only-glyph-7c", want: "|"},
		{screen: "gemini-only-glyph-c2bb", want: "»"},
		// The Enter right after a paste, taken as a newline.
		{screen: "gemini-paste-then-enter", want: "mailfs doorbell for toast: 1 new message(s). - id from mayor: TEST The mail stays in your mailbox (ring\n1111222233334444).\n"},
		{screen: "gemini-shell-mode", err: "shell mode"},
		{screen: "claude-empty", want: ""},
		{screen: "claude-half-typed", want: "PERSON half a li"},
		{screen: "claude-cursor-at-start", want: "PERSON half a li"},
		{screen: "claude-multiline", want: "PERSON half a li\nsecond line"},
		{screen: "claude-multiline-cursor-on-empty-last-row", want: "PERSON half a li\nsecond line\n"},
		{screen: "claude-text-below-the-cursor", want: "\nPERSON below"}, // the cursor on the blank first row
		{screen: "claude-only-glyph-3e", want: ">"},
		{screen: "claude-only-glyph-2a", want: "*"},
		{screen: "claude-only-glyph-7c", want: "|"},
		{screen: "claude-only-glyph-c2bb", want: "»"},
		{screen: "qwen-empty", want: ""},
		{screen: "qwen-yolo-empty", want: ""}, // "* " in YOLO mode (--yolo, as the real-runtime tests run it)
		{screen: "qwen-half-typed", want: "PERSON half a li"},
		{screen: "qwen-cursor-at-start", want: "PERSON half a li"},
		{screen: "qwen-multiline", want: "PERSON half a li\nsecond line"},
		{screen: "qwen-multiline-cursor-on-empty-last-row", want: "PERSON half a li\nsecond line\n"},
		{screen: "qwen-text-below-the-cursor", want: "\nPERSON below"}, // Qwen Code draws its own cursor, as Gemini CLI does
		{screen: "qwen-only-glyph-3e", want: ">"},
		{screen: "qwen-only-glyph-2a", want: "*"},
		{screen: "qwen-only-glyph-7c", want: "|"},
		{screen: "qwen-only-glyph-c2bb", want: "»"},
	} {
		t.Run(c.screen, func(t *testing.T) {
			rt, _, _ := strings.Cut(c.screen, "-")
			p, ok := live.PromptOf(rt)
			if !ok {
				t.Fatalf("no prompt for %s", rt)
			}
			got, err := p.Input(readScreen(t, c.screen))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Input: %q, %v; want an error naming %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Input: %q, %v\nwant %q", got, err, c.want)
			}
		})
	}
}

// What the screens of the runtimes do not show: a dialog at the cursor
// (no prompt above it) and a program the door does not know.
func TestPromptInputWithoutABox(t *testing.T) {
	codex, _ := live.PromptOf("codex")
	// Either way the door does not type: no box, or a box that holds
	// text.
	for _, dialog := range []live.Screen{
		{Rows: []string{"• done", "", "Allow command?", "  1. Yes", "  2. No", "", "  status"}, X: 4, Y: 3},
		{Rows: []string{"› ", "", "  Allow command?", "  1. Yes", "  2. No", "", "  status"}, X: 4, Y: 3},
	} {
		if in, err := codex.Input(dialog); err == nil && in == "" {
			t.Fatalf("a dialog read as an empty box: %q", dialog.Rows)
		}
	}
	plain := live.PlainPrompt()
	for _, c := range []struct {
		row  string
		want string
	}{{"", ""}, {"   ", ""}, {"$ ", "$"}, {"PERSON", "PERSON"}} {
		if in, err := plain.Input(live.Screen{Rows: []string{"old output", c.row}, X: len(c.row), Y: 1}); err != nil || in != c.want {
			t.Fatalf("plain box %q: %q %v, want %q", c.row, in, err, c.want)
		}
	}
	if _, ok := live.PromptOf("nethack"); ok {
		t.Fatal("a prompt for a runtime the door does not know")
	}
}
