package live_test

import (
	"context"
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
	if _, err := d.Session(); err != nil {
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
	if _, err := d.Session(); err == nil {
		t.Fatal("a killed pane is still a session")
	}
}
