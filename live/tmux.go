package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
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
// as typed input. It never types over a person: not while a person typed
// into the pane in the last TypingQuiet (the client's activity time), not
// while the pane is in a mode (copy mode), and not while the program's
// input box holds anything: its Prompt reads the whole box, every row
// from the runtime's own prompt to its status line (see [Prompt.Input]),
// so text before the cursor, after it, on another row, or a lone "> " all
// make the door wait (ErrBusy, retried). It pastes the text (bracketed,
// when the program asked for it), reads the box back until it holds this
// doorbell and nothing else, waits the runtime's Settle, then sends Enter,
// and checks the box emptied: an Enter the runtime took as a newline
// (Gemini CLI, within 40 ms of a paste) is taken back and sent again,
// later. Up to three tries.
//
// Its evidence (a Confirmer): Record, the runtime's own record of the
// session where it keeps one (Gemini CLI's chats, Codex's rollouts: see
// [GeminiChats], [CodexRollouts]), says which doorbells the model
// answered; the doorbell's ring mark shown on the pane off the input box
// says only that the program took it as a message (Queued: submitted).
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
	// Prompt is how the program in the pane shows its input box.
	Prompt Prompt
	// Record, if set, reads the runtime's own record of the session.
	Record Confirmer
}

// ErrBusy wraps the error of a tmux doorbell put off because a person is
// typing, or the program's input box holds text or is in a mode: it is
// retried.
var ErrBusy = errors.New("live: a person is typing in the pane")

// FindTmux returns the door of pane (any target tmux understands) on the
// server at socket ("" for tmux's own choice); tmux is the tmux command,
// "" for "tmux". Its Prompt is the runtime's it finds running in the pane
// (see [DetectRuntime]), else [PlainPrompt]'s; its Record, that runtime's
// record of the session, under the home the runtime's process has.
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
	rt, env := DetectRuntime(n)
	d.Prompt, _ = PromptOf(rt)
	d.Record = RecordOf(rt, env, time.Now())
	return d, nil
}

// RecordOf returns the Confirmer reading runtime rt's own record of its
// sessions since since (Gemini CLI's chats, Codex's rollouts), found
// through getenv (the runtime's environment: HOME, GEMINI_CLI_HOME,
// CODEX_HOME), or nil for a runtime that keeps none mailfs reads.
func RecordOf(rt string, getenv func(string) string, since time.Time) Confirmer {
	switch rt {
	case string(agentrt.Gemini):
		home := getenv("GEMINI_CLI_HOME")
		if home == "" {
			home = getenv("HOME")
		}
		if home == "" {
			return nil
		}
		return &GeminiChats{Dir: filepath.Join(home, ".gemini", "tmp"), Since: since}
	case string(agentrt.Codex):
		home := getenv("CODEX_HOME")
		if home == "" && getenv("HOME") != "" {
			home = filepath.Join(getenv("HOME"), ".codex")
		}
		if home == "" {
			return nil
		}
		return &CodexRollouts{Dir: filepath.Join(home, "sessions"), Since: since}
	}
	return nil
}

// DetectRuntime finds the agent runtime running under the process pid (a
// tmux pane's): the first of its descendants whose command line names
// codex, gemini, qwen or claude, and that process's environment. It returns "" and the
// environment of this process where it finds none, or cannot look
// (it reads /proc: Linux only).
func DetectRuntime(pid int) (string, func(string) string) {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		kids[pp] = append(kids[pp], p)
	}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, kids[p]...)
		cmd, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		for _, a := range args[:min(len(args), 3)] { // node gemini.js, codex --flags
			switch base := filepath.Base(a); {
			case base == string(agentrt.Codex) || strings.Contains(a, "/@openai/codex"):
				return string(agentrt.Codex), environOf(p)
			case base == string(agentrt.Gemini) || strings.Contains(a, "/@google/gemini-cli"):
				return string(agentrt.Gemini), environOf(p)
			case base == string(agentrt.Qwen) || strings.Contains(a, "/@qwen-code/qwen-code"):
				return string(agentrt.Qwen), environOf(p)
			case base == string(agentrt.Claude) || strings.Contains(a, "/@anthropic-ai/claude-code"):
				return string(agentrt.Claude), environOf(p)
			}
		}
	}
	return "", os.Getenv
}

// environOf returns a getenv over process pid's environment.
func environOf(pid int) func(string) string {
	data, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	env := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return func(k string) string { return env[k] }
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

// Ring types text into the pane as one line, then submits it.
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
	// Empty twice, a moment apart: a TUI redrawing its screen (Ink
	// erases and rewrites it) may show a box half drawn.
	for i := range 2 {
		if i > 0 {
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
		if in, err := d.input(ctx); err != nil {
			return fmt.Errorf("%w %s: %v", ErrBusy, d.Pane, err)
		} else if in != "" {
			return fmt.Errorf("%w %s: its input box holds %q", ErrBusy, d.Pane, cutText(in, 40))
		}
	}
	line := strings.Join(strings.Fields(text), " ") // one line: a newline would submit half of it
	var err error
	for range 3 {
		if err = d.typeLine(ctx, line); err != nil {
			continue
		}
		var in string
		if in, err = d.holds(ctx, line); err != nil {
			if squash(in) != "" && !strings.HasPrefix(squash(line), squash(in)) {
				// Something not ours came with it: a person typed in the
				// moment between the look and the paste. Their text stays.
				return fmt.Errorf("%w %s: its input box holds %q besides the doorbell", ErrBusy, d.Pane, cutText(in, 40))
			}
			d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "C-u") // clear the half-pasted doorbell before the next try
			continue
		}
		if err = d.submit(ctx, in); err == nil {
			return nil
		}
	}
	return fmt.Errorf("live: typing into tmux pane %s: %w", d.Pane, err)
}

// submit sends Enter to submit held, the doorbell as the input box holds
// it, and waits for the box to let it go. An Enter the program took as a
// newline (the box holds the doorbell and an empty row under it) is taken
// back, and sent again after twice the wait. A box that keeps the
// doorbell is cleared.
func (d *TmuxDoor) submit(ctx context.Context, held string) error {
	settle := d.Prompt.Settle
	for range 3 {
		if err := sleepCtx(ctx, settle); err != nil {
			return err
		}
		if _, err := d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "Enter"); err != nil {
			return err
		}
		// A newline counts once it stays a tenth of a second: a program
		// that echoes the line, then draws its prompt again, shows one
		// for a moment.
		newline, since, seen := false, time.Time{}, false
		deadline := time.Now().Add(2 * time.Second)
		for !newline && time.Now().Before(deadline) {
			in, err := d.input(ctx)
			seen = seen || err == nil
			switch {
			case err != nil:
				// No box on the screen (a redraw, a turn's output): look
				// again.
				since = time.Time{}
			case squash(in) != squash(held):
				return nil // the box let it go
			case !strings.HasSuffix(in, "\n"):
				since = time.Time{}
			case since.IsZero():
				since = time.Now()
			default:
				newline = time.Since(since) >= 100*time.Millisecond
			}
			if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
				return err
			}
		}
		if !seen {
			// The box never showed again: the program took the Enter
			// (a turn's output hides it); its record says the rest.
			return nil
		}
		if newline {
			d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "BSpace")
		}
		settle = max(2*settle, 100*time.Millisecond)
	}
	d.tmuxCtx(ctx, "send-keys", "-t", d.Pane, "C-u")
	return errors.New("the doorbell stayed in the input box")
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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

// screen reads the pane's visible screen and its cursor.
func (d *TmuxDoor) screen(ctx context.Context) (Screen, error) {
	out, err := d.tmuxCtx(ctx, "display-message", "-p", "-t", d.Pane, "#{cursor_x} #{cursor_y}")
	if err != nil {
		return Screen{}, err
	}
	var s Screen
	if _, err := fmt.Sscan(out, &s.X, &s.Y); err != nil {
		return Screen{}, fmt.Errorf("live: tmux pane %s: cursor %q: %v", d.Pane, strings.TrimSpace(out), err)
	}
	text, err := d.tmuxCtx(ctx, "capture-pane", "-p", "-t", d.Pane)
	if err != nil {
		return Screen{}, err
	}
	s.Rows = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	return s, nil
}

// input is what the program's input box holds (see Prompt.Input).
func (d *TmuxDoor) input(ctx context.Context) (string, error) {
	s, err := d.screen(ctx)
	if err != nil {
		return "", err
	}
	return d.Prompt.Input(s)
}

// Evidence reads the runtime's record (Record) for the doorbells the
// model answered, and the pane for those only submitted: a ring mark
// shown off the input box, which the program took as a message.
func (d *TmuxDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	var recErr error
	if d.Record != nil {
		got, err := d.Record.Evidence(ctx, nonces)
		recErr = err
		maps.Copy(ev.Seen, got.Seen)
		for n := range got.Queued {
			ev.Queued[n] = true
		}
	}
	screen, err := d.tmuxCtx(ctx, "capture-pane", "-p", "-J", "-S", "-2000", "-t", d.Pane)
	if err != nil {
		return ev, errors.Join(recErr, err)
	}
	in, err := d.input(ctx)
	if err != nil {
		in = "" // no box to read (a mode, a dialog): what shows was submitted earlier
	}
	flat, input := flatten(screen), flatten(in)
	for _, n := range nonces {
		if _, ok := ev.Seen[n]; ok {
			continue
		}
		if m := hook.RingMark(n); strings.Contains(flat, m) && !strings.Contains(input, m) {
			ev.Queued[n] = true
		}
	}
	return ev, recErr
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

// blank reports the runes a TUI draws as nothing: white space, and the
// zero-width ones (Qwen Code puts a zero-width space after the cursor).
func blank(r rune) bool {
	return unicode.IsSpace(r) || r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff'
}

// isRule reports a row that is a horizontal rule of box drawing.
func isRule(row string) bool {
	row = strings.TrimSpace(row)
	return row != "" && strings.Trim(row, "─━═") == ""
}

// squash is s without its white space: text a TUI wrapped anywhere, even
// inside a word, compares whole.
func squash(s string) string {
	return strings.Map(func(r rune) rune {
		if blank(r) {
			return -1
		}
		return r
	}, s)
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

// holds waits up to a second for the input box to hold line, whole and
// alone (or a TUI's note that it folded a paste of line's length, as
// Codex's "[Pasted Content 2620 chars]"), and returns what it last held.
func (d *TmuxDoor) holds(ctx context.Context, line string) (string, error) {
	want := []string{squash(line),
		squash(fmt.Sprintf("[Pasted Content %d chars]", len(line))),
		squash(fmt.Sprintf("[Pasted Content %d chars]", utf8.RuneCountInString(line)))}
	deadline := time.Now().Add(time.Second)
	for {
		in, err := d.input(ctx)
		if err == nil && slices.Contains(want, squash(in)) {
			return in, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return in, fmt.Errorf("the doorbell did not appear whole in the input box")
		}
		sleepCtx(ctx, 50*time.Millisecond)
	}
}

// A Screen is what a pane shows: its rows, and the cursor's column and
// row (0-based).
type Screen struct {
	Rows []string
	X, Y int
}

// A Prompt is how one runtime's terminal UI shows its input box: the
// prompt that opens its first row, the indent of the rows after it, what
// it shows when empty. [Prompt.Input] reads the box from a [Screen].
type Prompt struct {
	// Runtime names it (codex, gemini; "" for PlainPrompt).
	Runtime string
	// Marks are the prompts that open the box's first row when it takes a
	// message, as they show from the row's first column (Codex "› ";
	// Gemini CLI " > ", and " * " in YOLO mode). None: the box is the
	// cursor's row alone, whole, with no prompt (PlainPrompt).
	Marks []string
	// Modes are prompts of the box in a mode where typed text is not a
	// message (Gemini CLI's shell mode, " ! "), with the mode's name: the
	// door does not type into them.
	Modes map[string]string
	// Indent opens the box's rows after the first.
	Indent string
	// Placeholders are the texts the empty box shows.
	Placeholders []string
	// Settle is how long the door waits, once the box holds the pasted
	// doorbell, before Enter: Gemini CLI takes an Enter within 40 ms of a
	// paste (by its clock, on a busy event loop) as a newline.
	Settle time.Duration
}

// TmuxRuntimes are the runtimes whose prompts [PromptOf] knows, and
// Plain, a program it does not know: what "mailfs live tmux --runtime"
// takes.
func TmuxRuntimes() []agentrt.Runtime {
	return []agentrt.Runtime{agentrt.Codex, agentrt.Gemini, agentrt.Qwen, agentrt.Claude, agentrt.Plain}
}

// PromptOf returns the Prompt of runtime rt (codex, gemini, qwen, claude), or
// PlainPrompt and false for one it does not know.
func PromptOf(rt string) (Prompt, bool) {
	switch rt {
	case string(agentrt.Codex):
		// Codex 0.171: "› " at column 0, rows after it indented by two;
		// a blank row, then its status line (model · directory).
		return Prompt{Runtime: rt, Marks: []string{"› "}, Indent: "  ",
			Placeholders: []string{"Ask Codex to do anything", "Ask a follow-up question"}}, true
	case string(agentrt.Gemini):
		// Gemini CLI 0.61: " > " (" * " in YOLO mode, " ! " in shell mode)
		// under a rule and the approval mode's line, rows after it
		// indented by three; a blank row, then its footer (workspace,
		// sandbox, model).
		return Prompt{Runtime: rt, Marks: []string{" > ", " * "}, Modes: map[string]string{" ! ": "shell mode"}, Indent: "   ",
			Placeholders: []string{"Type your message or @path/to/file"}, Settle: 250 * time.Millisecond}, true
	case string(agentrt.Claude):
		// Claude Code 2.1: "❯" and a no-break space at column 0 between
		// two rules, rows after it indented by two, no placeholder.
		return Prompt{Runtime: rt, Marks: []string{"❯\u00a0", "❯ "}, Indent: "  "}, true
	case string(agentrt.Qwen):
		// Qwen Code 0.24: "> " ("* " in YOLO mode) at column 0 between
		// two rules, rows after it indented by two; under the lower rule
		// its status lines.
		return Prompt{Runtime: rt, Marks: []string{"> ", "* "}, Indent: "  ",
			Placeholders: []string{"Type your message or @path/to/file"}, Settle: 250 * time.Millisecond}, true
	}
	return PlainPrompt(), false
}

// PlainPrompt is the Prompt of a program that shows no prompt on its
// input row (a program reading standard input): the box is the cursor's
// row, and empty only when the whole row is blank. A program whose
// prompt is text (a shell's "$ ") so always looks busy: the tmux door is
// for agents' TUIs.
func PlainPrompt() Prompt { return Prompt{} }

// maxBox bounds how many rows above the cursor the box's first row may
// be.
const maxBox = 200

// Input reads what the input box on s holds, "" when it is empty, with a
// trailing newline when the cursor sits on an empty row after the text
// (an Enter taken as a newline). The box runs from the nearest row at or
// above the cursor that opens with one of the Marks, every row between
// opening with the Indent (or blank), down to the runtime's status line:
// the block of rows at the bottom of the screen, after a blank row, that
// holds neither the prompt nor the cursor. Each row counts whole, left
// and right of the cursor. It returns an error when the box is not there
// (no prompt above the cursor: a dialog, a menu, another program) or is
// in one of the Modes.
func (p Prompt) Input(s Screen) (string, error) {
	rows := s.Rows
	if s.Y < 0 || s.Y >= len(rows) {
		return "", fmt.Errorf("the cursor (row %d) is off the screen", s.Y)
	}
	if len(p.Marks) == 0 {
		return strings.TrimSpace(rows[s.Y]), nil
	}
	top, mark := -1, ""
	for i := s.Y; i >= 0 && i > s.Y-maxBox && top < 0; i-- {
		for _, m := range p.Marks {
			if strings.HasPrefix(rows[i], m) || rows[i] == strings.TrimRight(m, " ") {
				top, mark = i, m
			}
		}
		if top >= 0 {
			break
		}
		for m, name := range p.Modes {
			if strings.HasPrefix(rows[i], m) || rows[i] == strings.TrimRight(m, " ") {
				return "", fmt.Errorf("the input box is in %s", name)
			}
		}
		if strings.TrimSpace(rows[i]) != "" && !strings.HasPrefix(rows[i], p.Indent) {
			break
		}
	}
	if top < 0 {
		return "", fmt.Errorf("no %s prompt at the cursor", cmp.Or(p.Runtime, "input"))
	}
	// The status line: the last block of non-blank rows, if it lies below
	// the box's prompt and the cursor.
	end := len(rows) - 1
	for end > top && strings.TrimSpace(rows[end]) == "" {
		end--
	}
	status := end
	for status > 0 && strings.TrimSpace(rows[status-1]) != "" {
		status--
	}
	if status > max(top, s.Y) {
		end = status - 1
	}
	end = max(end, s.Y)
	for i := top + 1; i <= end; i++ {
		if i > s.Y && isRule(rows[i]) {
			end = i - 1 // a rule under the box closes it (Qwen Code)
			break
		}
	}
	var lines []string
	for i := top; i <= end; i++ {
		row := rows[i]
		if i == top {
			row = strings.TrimPrefix(row, strings.TrimRight(mark, " "))
			row = strings.TrimPrefix(row, " ")
		} else {
			row = strings.TrimPrefix(row, p.Indent)
		}
		lines = append(lines, strings.TrimRightFunc(row, blank))
	}
	// Rows after the text, blank, are the box's padding; the cursor on one
	// of them is an empty last line.
	last := len(lines) - 1
	for last >= 0 && lines[last] == "" {
		last--
	}
	text := strings.Join(lines[:last+1], "\n")
	if strings.TrimSpace(text) == "" {
		return "", nil
	}
	for _, ph := range p.Placeholders {
		if strings.TrimSpace(text) == ph {
			return "", nil
		}
	}
	if s.Y > top+last {
		text += "\n"
	}
	return text, nil
}
