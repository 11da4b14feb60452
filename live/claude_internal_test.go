package live

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A Claude Code session whose settings hold or refuse messages from other
// processes gets no doorbell written, and the ring says held (so no
// receipt says delivered); with accept, or unset, the doorbell is
// written. The most restrictive scope wins.
func TestClaudeDoorHonoursCrossSessionInbound(t *testing.T) {
	dir := t.TempDir()
	config, proj := filepath.Join(dir, "config"), filepath.Join(dir, "proj")
	os.MkdirAll(filepath.Join(config, "sessions"), 0o700)
	os.MkdirAll(filepath.Join(proj, ".claude"), 0o700)
	sock := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 1<<16)
			n, _ := c.Read(b)
			got <- string(b[:n])
			c.Close()
		}
	}()
	self := Self()
	reg, _ := json.Marshal(map[string]any{"pid": self.PID, "sessionId": "s", "procStart": self.Start, "messagingSocketPath": sock, "status": "idle", "cwd": proj})
	if err := os.WriteFile(filepath.Join(config, "sessions", strconv.Itoa(self.PID)+".json"), reg, 0o600); err != nil {
		t.Fatal(err)
	}
	door := &ClaudeDoor{Config: config, Proc: self}
	set := func(file, value string) {
		t.Helper()
		if value == "" {
			os.Remove(file)
			return
		}
		if err := os.WriteFile(file, []byte(`{"crossSessionInbound": "`+value+`"}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	user, local := filepath.Join(config, "settings.json"), filepath.Join(proj, ".claude", "settings.local.json")
	for i, c := range []struct {
		user, local string
		held        error
	}{
		{"", "", nil},
		{"accept", "", nil},
		{"hold", "", ErrHeld},
		{"accept", "refuse", ErrRefused},
		{"hold", "accept", ErrHeld},
		{"refuse", "hold", ErrRefused},
		{"accept", "accept", nil},
	} {
		set(user, c.user)
		set(local, c.local)
		text := "mailfs doorbell for toast: case " + strconv.Itoa(i) + "."
		err := door.Ring(context.Background(), text)
		if c.held != nil {
			if !errors.Is(err, c.held) || !strings.Contains(err.Error(), "crossSessionInbound") {
				t.Fatalf("user %q, local %q: Ring gave %v, want %v", c.user, c.local, err, c.held)
			}
			select {
			case line := <-got:
				t.Fatalf("user %q, local %q: a held session was written to: %s", c.user, c.local, line)
			default:
			}
			continue
		}
		if err != nil {
			t.Fatalf("user %q, local %q: %v", c.user, c.local, err)
		}
		// The next line is this case's: a held case before it wrote nothing.
		if line := <-got; !strings.Contains(line, text) {
			t.Fatalf("user %q, local %q: the socket got %q, want %q", c.user, c.local, line, text)
		}
	}
}
