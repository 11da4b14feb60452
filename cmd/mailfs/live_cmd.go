package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

type liveCmd struct {
	Claude   liveClaudeCmd   `cmd:"" help:"Deliver to the Claude Code session this runs under (its async SessionStart hook)."`
	Qwen     liveQwenCmd     `cmd:"" help:"Deliver to the Qwen Code session this runs under (its SessionStart hook), or to one named by pid."`
	Tmux     liveTmuxCmd     `cmd:"" help:"Deliver to an agent in a tmux pane, by typing a doorbell into it."`
	Codex    liveCodexCmd    `cmd:"" help:"Run Codex with an app server of its own, and deliver to it through the server (no tmux)."`
	OpenCode liveOpenCodeCmd `cmd:"" name:"opencode" help:"Deliver to an OpenCode session, through mailfs's OpenCode plugin (which starts it)."`
	Pi       livePiCmd       `cmd:"" name:"pi" help:"Deliver to a pi session, through mailfs's pi extension (which starts it)."`
	Seen     liveSeenCmd     `cmd:"" help:"Record as taken in (submitted; with --answered, delivered) the doorbells whose ring marks standard input holds (what a runtime's plugin sent the model)."`
	List     liveListCmd     `cmd:"" help:"List the running deliverers: which session each serves, what it rang, what waits."`
}

func (c *liveCmd) Help() string {
	return `Live delivery: a small process per agent session that watches the agent's
mailbox and nudge queue and pushes a short doorbell into the running session
the moment mail lands: urgent and high-priority mail at once (between two
tool calls of a busy turn; an idle session gets a new turn), normal mail at
most once per --every, nothing but urgent mail while do not disturb is on.
The doorbell names the messages (id, sender, subject) and says how to read
them; the mail stays in the mailbox, the only copy, so a push that is lost
loses nothing: the next doorbell or hook shows it.

Each doorbell ends with a ring mark, fresh for each ring; a message is
"delivered" only when the runtime's own record shows the model answered a
turn whose input held the mark (Claude Code's transcript); "submitted" when
the session took it in (its prompt hook saw the mark, the runtime queued
it) and the model has not answered; else it is "rung", and rung again (at
most 3 doorbells) when no evidence comes; "mailfs send --wait-for
delivered" and "mailfs live list" say which.

A deliverer ends when its session ends. "mailfs setup claude" and "mailfs
setup qwen" install it as the runtime's async SessionStart hook; OpenCode's
and pi's mailfs plugins ("mailfs setup opencode", "mailfs setup pi") start
it over pipes; MAILFS_LIVE=off in a session's environment turns it off
there.`
}

// liveFlags are what every deliverer takes.
type liveFlags struct {
	Agent string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail."`
	Every time.Duration `default:"30s" placeholder:"D" help:"The least time between two doorbells for normal and low mail and normal nudges (urgent and high ring at once, yet never within 2s of the last doorbell nor more than 10 a minute: a burst rides a few doorbells)."`
}

// Validate checks the agent's name with maildir's one parser before a
// deliverer looks for its session: a bad name is said, with a non-zero
// exit, even where a hook's problems otherwise exit 0 (live claude, live
// qwen), and even with live delivery off.
func (f *liveFlags) Validate() error {
	if f.Agent == "" {
		return nil // needAgent says it, where a deliverer needs one
	}
	_, err := maildir.ParseAgent(f.Agent)
	return err
}

// agent checks --every and returns the agent whose mail is delivered,
// for a deliverer: here, or in the Codex launcher it runs.
func (f *liveFlags) agent() (string, error) {
	if f.Every <= 0 {
		return "", usage("write durations such as 30s or 10m", "--every must be positive")
	}
	agent, err := needAgent(f.Agent)
	if err != nil {
		return "", err
	}
	return maildir.ParseAgent(agent)
}

// deliver runs a deliverer on door until its session ends.
func (f *liveFlags) deliver(a *app, door live.Door) error {
	agent, err := f.agent()
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	return live.Serve(a.ctx, &live.Deliverer{Store: s, Nudges: q, Agent: agent, Door: door, Every: f.Every, Warn: a.warn})
}

// liveOff reports whether live delivery is turned off in this environment.
func liveOff() bool { return live.Off(os.Getenv) }

type liveClaudeCmd struct {
	liveFlags
}

func (c *liveClaudeCmd) Help() string {
	return `Run as Claude Code's SessionStart hook with "async": true (mailfs setup
claude writes it): Claude Code starts it in the background with the
session's CLAUDE_CODE_MESSAGING_SOCKET and CLAUDE_CODE_MESSAGING_TOKEN, and
stops it when the session ends. It finds its session in
~/.claude/sessions/<pid>.json ($CLAUDE_CONFIG_DIR) among its ancestors, and
checks the session's pid and procStart every half second, so it never
outlives it. A second SessionStart of the same session (/clear, /resume,
compaction) finds the first deliverer running and leaves at once.

Being the session's own child is what lets Claude Code deliver the doorbell
without asking, also in a session that bypasses permissions. Exit status 0
whatever happens once it runs, as a hook's must be; problems go to stderr.
A name that is no agent id is refused before it starts (exit 80).`
}

func (c *liveClaudeCmd) Run(a *app) error {
	if liveOff() {
		return nil
	}
	// The hook's event names the session's transcript, where Claude Code
	// records which doorbells it gave the model (see live.ClaudeDoor).
	in := hookcmd.ReadEvent(a.hookEnv(), "live claude", time.Now().Add(2*time.Second), "within 2s")
	// The session registers a moment after it starts its hooks; outside
	// a session (no socket given) one look says so.
	wait := 30 * time.Second
	if os.Getenv("CLAUDE_CODE_MESSAGING_SOCKET") == "" {
		wait = 0
	}
	ctx, cancel := context.WithTimeout(a.ctx, wait)
	door, err := live.FindClaude(ctx, agentrt.ClaudeConfig(os.Getenv), os.Getpid(), os.Getenv("CLAUDE_CODE_MESSAGING_TOKEN"), os.Getenv("CLAUDE_CODE_MESSAGING_SOCKET"))
	cancel()
	if err == nil {
		if in.TranscriptPath != "" {
			door.Transcripts = filepath.Dir(in.TranscriptPath)
		}
		err = c.deliver(a, door)
	}
	if err != nil {
		a.exit(err) // said on stderr; a hook exits 0
	}
	return nil
}

type liveQwenCmd struct {
	liveFlags
	PID int `placeholder:"PID" help:"The Qwen Code session's pid; default: the session this runs under."`
}

func (c *liveQwenCmd) Help() string {
	return `Run as Qwen Code's SessionStart hook with "async": true (mailfs setup qwen
writes it), or by hand with --pid. Qwen Code queues the doorbell for the
session's next turn: at once when it is idle, after the running turn when
it is busy. It reads the
session's record in $QWEN_HOME/sessions (default ~/.qwen/sessions) and speaks
Qwen Code's published cross-session protocol (schema 1, frames 1): an auth
line with the session's QWEN_CODE_MESSAGING_TOKEN when it runs under the
session (delivered as the session's own process), else the record's
ipcToken (Qwen Code then holds it for review unless the user set
agents.crossSessionInbound to "accept"), then a user frame addressed to the
record's sessionId, which the session queues for its next turn.`
}

func (c *liveQwenCmd) Run(a *app) error {
	if liveOff() {
		return nil
	}
	if c.PID == 0 {
		drainStdin(a)
	}
	// Under a session (its socket given) the record may lag the hook by a
	// moment: look again for up to 30 seconds.
	deadline := time.Now()
	if c.PID == 0 && os.Getenv("QWEN_CODE_MESSAGING_SOCKET") != "" {
		deadline = deadline.Add(30 * time.Second)
	}
	// A deliverer detached from the hook (see live.DetachQwenHook) is told
	// its session's pid.
	self, detached := os.Getpid(), false
	if p, err := strconv.Atoi(os.Getenv(live.QwenSessionEnv)); err == nil && c.PID == 0 {
		self, detached = p, true
	}
	door, err := live.FindQwen(agentrt.QwenHome(os.Getenv), c.PID, self, os.Getenv("QWEN_CODE_MESSAGING_TOKEN"))
	for errors.Is(err, live.ErrNoSession) && time.Now().Before(deadline) && a.ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		door, err = live.FindQwen(agentrt.QwenHome(os.Getenv), c.PID, self, os.Getenv("QWEN_CODE_MESSAGING_TOKEN"))
	}
	if err == nil && c.PID == 0 && !detached {
		derr := live.DetachQwenHook(door, os.Args[1:])
		if derr == nil {
			return nil // the detached deliverer serves the session
		}
		a.warn(derr) // deliver from here, then
	}
	if err == nil {
		err = c.deliver(a, door)
	}
	if err != nil && c.PID == 0 {
		a.exit(err) // from a hook: exit 0
		return nil
	}
	return err
}

type liveOpenCodeCmd struct {
	liveFlags
	Session string `required:"" placeholder:"ID" help:"The OpenCode session id (the plugin gives it)."`
}

func (c *liveOpenCodeCmd) Help() string {
	return `Started by mailfs's OpenCode plugin (.opencode/plugins/mailfs.js, which
"mailfs setup opencode" writes) at a session's first prompt, with pipes for
its standard input and output: it writes each doorbell as a JSON line, the
plugin hands it to the session (an idle session starts a turn, a busy one
takes it after its running tool call) and answers on standard input, and
tells it the session's status. When OpenCode exits the pipe closes and the
deliverer ends. Run by hand it has no plugin to answer it: use it through
the plugin.`
}

func (c *liveOpenCodeCmd) Run(a *app) error { return c.pipe(a, string(agentrt.OpenCode), c.Session) }

// pipe delivers to runtime's session id through the plugin that started
// this process, over its standard input and output.
func (f *liveFlags) pipe(a *app, runtime, id string) error {
	if liveOff() {
		return nil
	}
	proc, err := live.ProcessOf(os.Getppid())
	if err != nil {
		proc = live.Process{}
	}
	return f.deliver(a, live.NewPipeDoor(runtime, id, proc, a.in, a.out))
}

type livePiCmd struct {
	liveFlags
	Session string `required:"" placeholder:"ID" help:"The pi session (the extension gives it)."`
}

func (c *livePiCmd) Help() string {
	return `Started by mailfs's pi extension (.pi/extensions/mailfs.ts, which "mailfs
setup pi" writes) when a session starts, with pipes for its standard input
and output, as "mailfs live opencode" is by OpenCode's plugin: each
doorbell goes to the session as a user message (steered into a busy turn,
after its running tool call), and the deliverer ends when pi does.`
}

func (c *livePiCmd) Run(a *app) error { return c.pipe(a, string(agentrt.Pi), c.Session) }

// liveSeenCmd is hookcmd.Seen, which mailfs-hook runs too.
type liveSeenCmd struct{ hookcmd.Seen }

func (c *liveSeenCmd) Run(a *app) error { return c.Seen.Run(a.hookEnv()) }

type liveTmuxCmd struct {
	liveFlags
	Pane    string `required:"" placeholder:"PANE" help:"The tmux pane the agent runs in (%3, session:window.pane)."`
	Socket  string `type:"path" placeholder:"PATH" help:"The tmux server's socket (tmux -S); default: the server $TMUX names, else tmux's default."`
	Runtime string `enum:",${tmuxRuntimes}" default:"" placeholder:"NAME" help:"The runtime in the pane (codex, gemini, qwen, claude, plain); default: the one found running in it."`
}

func (c *liveTmuxCmd) Help() string {
	return `Types the doorbell into the agent's tmux pane, never over a person: not
while a person typed into the pane's client in the last 2 seconds, not
while the pane is in copy mode, not while the runtime's input box holds
anything. The box is read whole, by the runtime's own prompt (Codex's
"› ", Gemini CLI's " > ", Qwen Code's "> ", Claude Code's "❯"), every row
down to its status line, left and
right of the cursor: a half-typed line, a cursor moved to its start, a
second line, a lone "> " all make the doorbell wait, and it is retried; a
box in a mode (Gemini CLI's shell mode) or no box at the cursor (a dialog)
too. The runtime is the one found running in the pane (Codex, Gemini CLI,
Qwen Code, Claude Code; --runtime says it where it cannot be found); any
other program is
"plain": its box is the cursor's row, which must be blank.

The text is pasted through a tmux buffer (bracketed, when the program
asked for it), the box read back until it holds the doorbell and nothing
else, then Enter after the runtime's settle time, and the box read again
until it lets the doorbell go (Gemini CLI takes an Enter within 40 ms of a
paste as a newline: it is taken back and sent again); up to 3 tries.

A doorbell is delivered when the runtime's own record shows the model
answered it (Codex's rollouts under $CODEX_HOME, Gemini CLI's chats under
~/.gemini/tmp, read with the home the runtime runs with), or the runtime's
prompt hook saw it; its ring mark shown on the pane says only that the
program took it (submitted), which is the most a plain program gets. It
ends when the pane does. For Codex without tmux, see mailfs live codex.`
}

func (c *liveTmuxCmd) Run(a *app) error {
	door, err := live.FindTmux("", c.Socket, c.Pane)
	if err != nil {
		return err
	}
	if c.Runtime != "" && c.Runtime != door.Prompt.Runtime {
		door.Prompt, _ = live.PromptOf(c.Runtime)
		_, env := live.DetectRuntime(door.Proc.PID)
		door.Record = live.RecordOf(c.Runtime, env, time.Now())
	}
	return c.deliver(a, door)
}

type liveListCmd struct {
	Agent string `arg:"" optional:"" help:"Whose deliverers; default: every agent's."`
	JSON  bool   `help:"Print each running deliverer's record whole, one JSON object per line."`
}

func (c *liveListCmd) Help() string {
	return `One line per running deliverer: its agent, runtime and session pid, the
session's status as the runtime says it now (busy, idle; - where the
runtime does not say), how many doorbells it rang, and of the messages they
named how many are DELIVERED (the runtime's own record shows the model
answered a turn whose input held the doorbell: Claude Code's transcript, a
runtime plugin's report), how many are SUBMITTED and no more (the session
took the doorbell in: its prompt hook saw the ring mark, the runtime queued
it; the model has not answered), how many are RUNG and not delivered
(the SUBMITTED ones among them, those not yet taken in, and those given up
on after the re-rings), how many are HELD (dnd, batched, spacing, retrying, held or refused by the
session), and when it last rang. --json prints each record whole:
confirmed, submitted, bells (doorbells awaiting an answer), unconfirmed
and held by message id. Exit status 0.`
}

func (c *liveListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	agents := []string{}
	if c.Agent != "" {
		agent, err := maildir.ParseAgent(c.Agent)
		if err != nil {
			return err
		}
		agents = append(agents, agent)
	} else if agents, err = live.Agents(s); err != nil {
		return err
	}
	if !c.JSON {
		fmt.Fprintf(a.out, "%-20s %-7s %-8s %-6s %-5s %-9s %-9s %-5s %-5s %s\n", "AGENT", "RUNTIME", "SESSION", "STATUS", "RINGS", "DELIVERED", "SUBMITTED", "RUNG", "HELD", "LAST RING")
	}
	for _, agent := range agents {
		recs, err := live.Records(s, agent)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if !r.Live() {
				continue
			}
			// The deliverer writes its session's status down every few
			// seconds; Claude Code's registry says it now.
			if r.Session.Runtime == string(agentrt.Claude) {
				if st := live.ClaudeStatus(agentrt.ClaudeConfig(os.Getenv), r.Session.Process.PID); st != "" {
					r.Session.Status = st
				}
			}
			if c.JSON {
				if err := printValue(a.out, r); err != nil {
					return err
				}
				continue
			}
			last := "-"
			if !r.LastRing.IsZero() {
				last = r.LastRing.Format(time.RFC3339)
			}
			fmt.Fprintf(a.out, "%-20s %-7s %-8d %-6s %-5d %-9d %-9d %-5d %-5d %s\n", r.Agent, r.Session.Runtime, r.Session.Process.PID, cmp.Or(r.Session.Status, "-"), r.Rings, len(r.Confirmed), r.NotAnswered(), r.NotConfirmed(), len(r.Held), last)
		}
	}
	return nil
}

// drainStdin reads and drops a hook's event, so the runtime's write never
// blocks on a full pipe.
func drainStdin(a *app) {
	if f, ok := a.in.(*os.File); ok && isTerminal(f) {
		return
	}
	go io.Copy(io.Discard, io.LimitReader(a.in, 1<<20))
}
