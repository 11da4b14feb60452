package live

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/hook"
)

// TmuxDoor types the doorbell into the tmux pane an agent runs in: any
// agent in a terminal (Codex, Gemini CLI, an older Claude Code) takes it
// as typed input. It never types over a person: it does not type while a
// person typed into the pane in the last TypingQuiet (the client's
// activity time), nor while the program's input line holds text (the
// cursor's row, left of the cursor, once the prompt's glyphs and borders
// are trimmed: a half-typed line waits, ErrBusy, and is retried). It
// pastes the text (bracketed, when the program asked for it), reads the
// pane back until the doorbell's own ring mark shows (never a prefix every
// doorbell shares), then sends Enter; up to three tries, the line cleared
// between them.
//
// Its evidence (a Confirmer): the doorbell's ring mark on the pane, off
// the input line — the program took the line as a submitted message and
// shows it in its conversation. That says less than a prompt hook seeing
// it (Codex and Gemini CLI run mailfs's prompt hook too, where "mailfs
// setup" installed it, and that evidence counts first).
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

// tmuxTimeout bounds each tmux command: a server that hangs holds no
// deliverer.
const tmuxTimeout = 5 * time.Second

func (d *TmuxDoor) tmux(args ...string) (string, error) {
	return d.tmuxCtx(context.Background(), args...)
}

func (d *TmuxDoor) tmuxCtx(ctx context.Context, args ...string) (string, error) {
	bin := d.Tmux
	if bin == "" {
		bin = "tmux"
	}
	if d.Socket != "" {
		args = append([]string{"-S", d.Socket}, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, tmuxTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Session reports the pane: gone when it (or its first process) is.
func (d *TmuxDoor) Session(ctx context.Context) (Info, error) {
	out, err := d.tmuxCtx(ctx, "display-message", "-p", "-t", d.Pane, "#{pane_id} #{pane_dead}")
	if err != nil || !strings.HasPrefix(out, d.Pane+" ") || strings.TrimSpace(out) == d.Pane+" 1" || !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: tmux pane %s", ErrGone, d.Pane)
	}
	return Info{Runtime: string(agentrt.Tmux), Process: d.Proc, Where: d.Pane}, nil
}

// Ring types text into the pane as one line, then Enter.
func (d *TmuxDoor) Ring(ctx context.Context, text string) error {
	if _, err := d.Session(ctx); err != nil {
		return err
	}
	quiet := d.TypingQuiet
	if quiet <= 0 {
		quiet = 2 * time.Second
	}
	if out, err := d.tmuxCtx(ctx, "display-message", "-p", "-t", d.Pane, "#{client_activity}|#{pane_in_mode}"); err == nil {
		activity, mode, _ := strings.Cut(strings.TrimSpace(out), "|") // no client attached: no activity
		if at, err := strconv.ParseInt(activity, 10, 64); err == nil && at > 0 && time.Since(time.Unix(at, 0)) < quiet {
			return fmt.Errorf("%w %s", ErrBusy, d.Pane)
		}
		if mode == "1" {
			// A person scrolling back (copy mode): an Enter sent now would
			// go to the mode, not the program.
			return fmt.Errorf("%w %s: the pane is in a mode (copy mode: a person is reading back)", ErrBusy, d.Pane)
		}
	}
	if in, err := d.inputLine(ctx); err != nil {
		return err
	} else if in != "" {
		return fmt.Errorf("%w %s: its input line holds %q", ErrBusy, d.Pane, cutText(in, 40))
	}
	line := strings.Join(strings.Fields(text), " ") // one line: a newline would submit half of it
	// What must show before Enter: the doorbell's own ring mark (a prefix
	// is the same for every doorbell, and yesterday's may still be on the
	// screen), and its start.
	marks := []string{cutText(line, 40)}
	for _, n := range hook.RingMarks(line) {
		marks = append(marks, hook.RingMark(n))
	}
	// A TUI may fold a long paste into a note of its length (Codex:
	// "[Pasted Content 2620 chars]"): that note, with this line's length,
	// says the paste arrived whole.
	folded := []string{fmt.Sprintf("[Pasted Content %d chars]", len(line)), fmt.Sprintf("[Pasted Content %d chars]", utf8.RuneCountInString(line))}
	var err error
	for range 3 {
		if err = d.typeLine(ctx, line); err != nil {
			continue
		}
		if err = d.shows(ctx, marks, folded); err == nil {
			_, err = d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "Enter")
			return err
		}
		d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "C-u") // clear the half-typed line before the next try
	}
	return fmt.Errorf("live: typing into tmux pane %s: %w", d.Pane, err)
}

// cutText is s cut to at most n bytes, at a rune boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// inputLine is what the program's input line holds: the cursor's row,
// left of the cursor, less the prompt's glyphs and the box around it
// (Codex's "› ", Gemini CLI's "│ > ", a bare "> "). A program whose prompt
// is text (a shell's "user@host:~$ ") always looks busy: the tmux door
// is for agents' TUIs.
func (d *TmuxDoor) inputLine(ctx context.Context) (string, error) {
	out, err := d.tmuxCtx(ctx, "display-message", "-p", "-t", d.Pane, "#{cursor_x} #{cursor_y}")
	if err != nil {
		return "", err
	}
	var x, y int
	if _, err := fmt.Sscan(out, &x, &y); err != nil {
		return "", fmt.Errorf("live: tmux pane %s: cursor %q: %v", d.Pane, strings.TrimSpace(out), err)
	}
	screen, err := d.tmuxCtx(ctx, "capture-pane", "-p", "-t", d.Pane)
	if err != nil {
		return "", err
	}
	rows := strings.Split(screen, "\n")
	if y < 0 || y >= len(rows) {
		return "", nil
	}
	row := []rune(rows[y])
	return strings.TrimFunc(string(row[:min(x, len(row))]), promptRune), nil
}

// promptRune reports the runes of a prompt and its box, not of input.
func promptRune(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(">›❯»|*", r) || r >= 0x2500 && r <= 0x257f // box drawing
}

// Evidence reads the pane and its history: a doorbell whose ring mark
// shows off the input line was submitted (see TmuxDoor).
func (d *TmuxDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}}
	screen, err := d.tmuxCtx(ctx, "capture-pane", "-p", "-J", "-S", "-2000", "-t", d.Pane)
	if err != nil {
		return ev, err
	}
	in, err := d.inputLine(ctx)
	if err != nil {
		return ev, err
	}
	flat, input := flatten(screen), flatten(in)
	now := time.Now()
	for _, n := range nonces {
		if m := hook.RingMark(n); strings.Contains(flat, m) && !strings.Contains(input, m) {
			ev.Seen[n] = now
		}
	}
	return ev, nil
}

// flatten is the pane's text without its boxes, its spaces and line
// breaks each one space: a TUI wraps and frames text as it likes.
func flatten(s string) string {
	s = strings.Map(func(r rune) rune {
		if r >= 0x2500 && r <= 0x257f {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// typeLine pastes line into the pane through a tmux buffer, bracketed
// (paste-buffer -p) when the program in the pane asked for bracketed
// paste: a TUI then knows where the paste ends, so the Enter after it is
// a key press, not a newline inside a burst of typing (Codex's composer
// took a fast Enter after typed text as one, under load).
func (d *TmuxDoor) typeLine(ctx context.Context, line string) error {
	buf := fmt.Sprintf("mailfs-doorbell-%d", os.Getpid())
	if _, err := d.tmuxCtx(ctx, "set-buffer", "-b", buf, "--", line); err != nil {
		return err
	}
	_, err := d.tmuxCtx(ctx, "paste-buffer", "-p", "-d", "-b", buf, "-t", d.Pane)
	return err
}

// shows waits up to a second for every mark to appear on the pane's
// screen, or for one of folded on the input line.
func (d *TmuxDoor) shows(ctx context.Context, marks, folded []string) error {
	deadline := time.Now().Add(time.Second)
	for {
		out, err := d.tmuxCtx(ctx, "capture-pane", "-p", "-J", "-t", d.Pane)
		if err == nil {
			flat := flatten(out)
			if !slices.ContainsFunc(marks, func(m string) bool { return !strings.Contains(flat, flatten(m)) }) {
				return nil
			}
		}
		if in, err := d.inputLine(ctx); err == nil && slices.Contains(folded, in) {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the doorbell did not appear whole on the pane")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
