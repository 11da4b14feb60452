package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// TmuxDoor types the doorbell into the tmux pane an agent runs in: any
// agent in a terminal (Codex, Gemini CLI, an older Claude Code) takes it
// as typed input. It takes Gas Town's care with a terminal: it does not
// type while a person typed into the pane in the last TypingQuiet (the
// client's activity time), it pastes the text (bracketed, when the
// program asked for it), reads the pane back to see the text arrived,
// then sends Enter, up to three tries.
type TmuxDoor struct {
	Pane string // the pane's id (%3), resolved once so a renumbered window does not move the doorbell
	Proc Process
	// Tmux is the tmux command; "" means "tmux".
	Tmux string
	// Socket is the tmux server's socket (tmux -S); "" means the server
	// $TMUX names, else the default one.
	Socket string
	// TypingQuiet is how long since a person last typed into the pane's
	// session before the doorbell may type; 0 means 2 seconds.
	TypingQuiet time.Duration
}

// ErrBusy wraps the error of a tmux doorbell put off because a person is
// typing: it is retried.
var ErrBusy = errors.New("live: a person is typing in the pane")

// FindTmux returns the door of pane (any target tmux understands) on the
// server at socket ("" for tmux's own choice); tmux is the tmux command,
// "" for "tmux".
func FindTmux(tmux, socket, pane string) (*TmuxDoor, error) {
	d := &TmuxDoor{Pane: pane, Tmux: tmux, Socket: socket}
	out, err := d.tmux("display-message", "-p", "-t", pane, "#{pane_id} #{pane_pid}")
	if err != nil {
		return nil, fmt.Errorf("%w: tmux pane %s: %v", ErrNoSession, pane, err)
	}
	id, pid, _ := strings.Cut(strings.TrimSpace(out), " ")
	n, _ := strconv.Atoi(pid)
	proc, err := ProcessOf(n)
	if err != nil {
		proc = Process{PID: n}
	}
	d.Pane, d.Proc = id, proc
	return d, nil
}

func (d *TmuxDoor) tmux(args ...string) (string, error) {
	bin := d.Tmux
	if bin == "" {
		bin = "tmux"
	}
	if d.Socket != "" {
		args = append([]string{"-S", d.Socket}, args...)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Session reports the pane: gone when it (or its first process) is.
func (d *TmuxDoor) Session() (Info, error) {
	out, err := d.tmux("display-message", "-p", "-t", d.Pane, "#{pane_id} #{pane_dead}")
	if err != nil || !strings.HasPrefix(out, d.Pane+" ") || strings.TrimSpace(out) == d.Pane+" 1" || !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: tmux pane %s", ErrGone, d.Pane)
	}
	return Info{Runtime: "tmux", Process: d.Proc, Where: d.Pane}, nil
}

// Ring types text into the pane as one line, then Enter.
func (d *TmuxDoor) Ring(ctx context.Context, text string) error {
	if _, err := d.Session(); err != nil {
		return err
	}
	quiet := d.TypingQuiet
	if quiet <= 0 {
		quiet = 2 * time.Second
	}
	if out, err := d.tmux("display-message", "-p", "-t", d.Pane, "#{client_activity}"); err == nil {
		if at, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64); err == nil && at > 0 && time.Since(time.Unix(at, 0)) < quiet {
			return fmt.Errorf("%w %s", ErrBusy, d.Pane)
		}
	}
	line := strings.Join(strings.Fields(text), " ") // one line: a newline would submit half of it
	marker := line
	if len(marker) > 40 {
		marker = marker[:40]
	}
	var err error
	for range 3 {
		if err = d.typeLine(line); err != nil {
			continue
		}
		if err = d.shows(ctx, marker); err == nil {
			_, err = d.tmux("send-keys", "-t", d.Pane, "Enter")
			return err
		}
		d.tmux("send-keys", "-t", d.Pane, "C-u") // clear the half-typed line before the next try
	}
	return fmt.Errorf("live: typing into tmux pane %s: %w", d.Pane, err)
}

// typeLine pastes line into the pane through a tmux buffer, bracketed
// (paste-buffer -p) when the program in the pane asked for bracketed
// paste: a TUI then knows where the paste ends, so the Enter after it is
// a key press, not a newline inside a burst of typing (Codex's composer
// took a fast Enter after typed text as one, under load).
func (d *TmuxDoor) typeLine(line string) error {
	buf := fmt.Sprintf("mailfs-doorbell-%d", os.Getpid())
	if _, err := d.tmux("set-buffer", "-b", buf, "--", line); err != nil {
		return err
	}
	_, err := d.tmux("paste-buffer", "-p", "-d", "-b", buf, "-t", d.Pane)
	return err
}

// shows waits up to a second for marker to appear on the pane's screen.
func (d *TmuxDoor) shows(ctx context.Context, marker string) error {
	deadline := time.Now().Add(time.Second)
	for {
		out, err := d.tmux("capture-pane", "-p", "-J", "-t", d.Pane)
		if err == nil && strings.Contains(strings.Join(strings.Fields(out), " "), marker) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the text did not appear on the pane")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
