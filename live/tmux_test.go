package live_test

import (
	"context"
	"errors"
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
	return d
}

func TestTmuxDoorRings(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to test the tmux doorbell")
	}
	dir := t.TempDir()
	sock, got := filepath.Join(dir, "tmux.sock"), filepath.Join(dir, "got")
	if out, err := exec.Command("tmux", "-S", sock, "new-session", "-d", "-x", "300", "-y", "20", "sh", "-c", "read line; printf '%s' \"$line\" > "+got+".tmp && mv "+got+".tmp "+got+"; sleep 60").CombinedOutput(); err != nil {
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
	sock, tmux := tmuxServer(t, "printf '› '; cat > "+got)
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
	if ev, err := d.Evidence(context.Background(), []string{nonce}); err != nil || len(ev.Seen) != 0 {
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
	ev, err := d.Evidence(context.Background(), []string{nonce, "fedcba9876543210"})
	if _, ok := ev.Seen[nonce]; err != nil || !ok || len(ev.Seen) != 1 {
		t.Fatalf("evidence after the ring: %v %v, want only %s seen", ev, err, nonce)
	}
}

// A paste that never shows is not a ring, even with an older doorbell, the
// same but for its ring mark, still on the screen: the door looks for this
// doorbell's own mark, and reports the failure.
func TestTmuxDoorFailedPasteIsNotARing(t *testing.T) {
	old := "mailfs doorbell for toast: 1 new message(s). - id from mayor: MERGE_FAILED The mail stays in your mailbox until you read it; this note is only a doorbell (ring 1111111111111111)."
	// The old doorbell is on the screen; the program then takes input
	// without echoing it: a paste never shows.
	sock, tmux := tmuxServer(t, "printf '%s\\n' '"+old+"'; stty -echo; cat > /dev/null")
	d := tmuxDoor(t, sock)
	until(t, "the old doorbell on the screen", 10*time.Second, func() bool { return strings.Contains(tmux("capture-pane", "-p", "-J"), "ring 1111111111111111") })
	const nonce = "2222222222222222"
	bell := strings.Replace(old, "1111111111111111", nonce, 1)
	err := d.Ring(context.Background(), bell)
	if err == nil || errors.Is(err, live.ErrBusy) || !strings.Contains(err.Error(), "did not appear") {
		t.Fatalf("Ring into a pane that never shows it: %v, want a failure", err)
	}
	if ev, err := d.Evidence(context.Background(), []string{nonce}); err != nil || len(ev.Seen) != 0 {
		t.Fatalf("evidence of a failed paste: %v %v", ev, err)
	}
}
