// Package hookcmd is the calls an agent runtime makes every turn or tool
// call — its hook events ([Hook]), "check --inject" ([Inject]) and the
// doorbell's confirmation ([Seen]) — as both mailfs and the slim
// mailfs-hook ([Main]) run them: the same flags, output and promises,
// whichever binary a runtime's settings name.
package hookcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// ErrNoAgent is returned (through Env.Report) when a call names no agent
// and $MAILFS_AGENT is unset; NoAgentHint is the hint to print with it.
var ErrNoAgent = errors.New("no agent given")

// NoAgentHint says how to name the agent.
const NoAgentHint = "name the agent, or set MAILFS_AGENT"

// Vars are the kong variables the per-turn commands' tags use: the
// runtimes, from agentrt.
func Vars() kong.Vars {
	var formats []string
	for _, rt := range agentrt.HookFormats() {
		formats = append(formats, string(rt))
	}
	return kong.Vars{"hookFormats": strings.Join(formats, ","), "hookDefault": string(agentrt.Claude)}
}

// An Env is what a per-turn call runs with: its streams, the town, and
// how its program reports problems. A hook never fails the agent's turn:
// what goes wrong is reported, and the exit status stays 0.
type Env struct {
	Ctx      context.Context
	In       io.Reader
	Out, Err io.Writer
	// Open opens the town for reading.
	Open func() (*maildir.Store, *nudgeq.Queue, error)
	// Report says an error on Err; Warn says a warning.
	Report, Warn func(error)
}

// Hook is "hook EVENT [AGENT]": the kong grammar of a runtime's hook call.
type Hook struct {
	Event    string        `arg:"" enum:"session-start,prompt-submit,post-tool,stop" help:"session-start, prompt-submit, post-tool or stop."`
	Agent    string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail."`
	Runtime  string        `default:"${hookDefault}" enum:"${hookFormats}" help:"The format to answer in: claude (Claude Code), codex (Codex), gemini (Gemini CLI), qwen (Qwen Code), copilot (Copilot CLI: the stop event only) or plain text."`
	Budget   time.Duration `default:"3s" placeholder:"D" help:"Stop after this long, reading the event included, and say what was had."`
	Every    time.Duration `default:"2m" placeholder:"D" help:"post-tool: check at most once per D for each agent."`
	MaxBytes int           `name:"max-bytes" default:"9000" placeholder:"N" help:"Print at most N bytes (at least 1024), counted as the runtime receives them (Claude Code shows at most 10,000 characters)."`
}

// Help is the paragraph "hook --help" prints.
func (c *Hook) Help() string {
	return `Answers an agent runtime's hook event. Reads the runtime's JSON event on
standard input (if any) and prints the answer in the runtime's documented
format, or nothing when there is nothing to say. It never fails the agent's
turn: problems go to stderr and the exit status is 0.

  session-start  the agent's unread handoff notes (mailfs handoff), then its
                 unread mail by tier and its nudges (SessionStart)
  prompt-submit  unread mail by tier and nudges, as "check --inject" prints
                 them (UserPromptSubmit; Gemini CLI: BeforeAgent)
  post-tool      only urgent and high-priority unread mail and urgent
                 nudges, at most once per --every (PostToolUse; AfterTool)
  stop           while urgent or high-priority mail waits unread, blocks the
                 stop with a reason naming it (Stop; AfterAgent), never twice
                 for the same messages, never when the runtime says this stop
                 follows a block, never more than 3 times in a row (a
                 row ends when a stop passes, a session starts, or a person
                 prompts after the agent stopped)

One message is shown once per turn: the post-tool and stop hooks say
nothing of mail the agent was shown since the turn began (a session start,
or a prompt). And it is listed in full once a session: a later prompt
counts mail named before, still unread, in one line; a session start
(startup, resume, clear, compact) lists it all again. A handoff note shows
as one only when the agent sent it to itself. Message text is neutralised ("<" and ">" cannot close a block) and
the answer is at most --max-bytes as the runtime receives it, JSON escaping
included; nudges that do not fit stay queued, and the answer says so.

What a hook remembers (its rate limit, the stops it blocked, what it showed
this turn) is kept per user, in $XDG_STATE_HOME/mailfs (default
~/.local/state/mailfs; $MAILFS_STATE_DIR overrides), under a lock: parallel
hooks decide one at a time, and a hook that cannot record a decision stays
silent rather than repeat itself. "mailfs setup" installs these hooks
(through mailfs-hook, the same command in a smaller binary).`
}

// minHookBytes is the least --max-bytes a hook runs with.
const minHookBytes = 1024

// Run answers the event. Every problem goes to e.Report: the error is
// always nil (kong runs commands that return one).
func (c *Hook) Run(e *Env) error {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.Err, "mailfs: error: hook %s: %v\n", c.Event, r)
		}
	}()
	if c.MaxBytes < minHookBytes {
		// A hook exits 0 whatever happens: a bound too small to say
		// anything is raised to the least that can, and said.
		fmt.Fprintf(e.Err, "mailfs: warning: --max-bytes %d is too small to say anything; using %d\n", c.MaxBytes, minHookBytes)
		c.MaxBytes = minHookBytes
	}
	if c.Agent == "" {
		if hook.Event(c.Event) == hook.SessionStart {
			e.Out.Write(hook.NoAgent(agentrt.Runtime(c.Runtime))) // said to the session, not only to a debug log
		}
		e.Report(ErrNoAgent)
		return nil
	}
	// The budget starts now: reading the event is part of it.
	start := time.Now()
	in := ReadEvent(e, "hook "+c.Event, start.Add(c.Budget), fmt.Sprintf("within the %v budget", c.Budget))
	s, q, err := e.Open()
	if err != nil {
		e.Report(err)
		return nil
	}
	budget := c.Budget - time.Since(start)
	if budget <= 0 {
		budget = time.Millisecond // what is at hand, at once
	}
	h := &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q, Budget: budget}, PostToolEvery: c.Every, MaxBytes: c.MaxBytes,
		Doorbells: func(agent string, nonces []string) error { return hook.Confirm(s, agent, nonces) }}
	answer(e, h.Handle(e.Ctx, agentrt.Runtime(c.Runtime), hook.Event(c.Event), c.Agent, in))
	return nil
}

// Inject prints agent's prompt reminder, as "check --inject": its unread
// mail by tier and its nudges, which are drained, stopping after budget.
// Every problem goes to e.Report.
func Inject(e *Env, agent string, budget time.Duration) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(e.Err, "mailfs: error: check --inject: %v\n", r)
		}
	}()
	if agent == "" {
		e.Report(ErrNoAgent)
		return
	}
	s, q, err := e.Open()
	if err != nil {
		e.Report(err)
		return
	}
	h := &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q, Budget: budget}}
	answer(e, h.Handle(e.Ctx, agentrt.Plain, hook.PromptSubmit, agent, hook.Input{}))
}

// Seen is "live seen [AGENT]": the doorbell's confirmation a runtime's
// plugin sends with what it gave the model.
type Seen struct {
	Agent    string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose doorbells."`
	Answered bool   `help:"The model has answered the turn this text was the input of: record its doorbells delivered, not submitted."`
}

// Help is the paragraph "live seen --help" prints.
func (c *Seen) Help() string {
	return `Reads text from standard input (at most 1 MiB), finds the agent's doorbells
in it by their ring marks, and records them as taken in by the session as
input: "submitted", not "delivered", for the model may never be called (see
"mailfs live"). With --answered the text is a turn the model answered (the
turn's input, given once the model's reply to it is in): the evidence
"delivered" is said on. A runtime's plugin runs it; a prompt hook records
submitted on its own. Nothing is printed; the exit status is 0 whatever it
finds.`
}

// Run records the doorbells e.In names as seen.
func (c *Seen) Run(e *Env) error {
	if c.Agent == "" {
		return ErrNoAgent
	}
	agent, err := maildir.ParseAgent(c.Agent)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(io.LimitReader(e.In, 1<<20))
	if err != nil {
		return err
	}
	nonces := hook.RingNonces(agent, string(data))
	if len(nonces) == 0 {
		return nil
	}
	s, _, err := e.Open()
	if err != nil {
		return err
	}
	if c.Answered {
		return hook.Answered(s, agent, nonces)
	}
	return hook.Confirm(s, agent, nonces)
}

func answer(e *Env, ans hook.Answer) {
	e.Out.Write(ans.Output)
	for _, err := range ans.Errs {
		e.Report(err)
	}
}

// ReadEvent reads a runtime's hook event from e.In until deadline: a
// runtime that never closes stdin costs the hook its budget, not its
// turn. what names the reader in warnings, and within the deadline.
func ReadEvent(e *Env, what string, deadline time.Time, within string) hook.Input {
	var in hook.Input
	if f, ok := e.In.(*os.File); ok && IsTerminal(f) {
		return in
	}
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(e.In, 1<<20))
		done <- read{data, err}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err == nil && len(r.data) > 0 {
			if err := json.Unmarshal(r.data, &in); err != nil {
				e.Warn(fmt.Errorf("%s: the event on stdin is not JSON (%v); going on without it", what, err))
			}
		}
	case <-timer.C:
		e.Warn(fmt.Errorf("%s: stdin was not closed %s; going on without the event", what, within))
	}
	return in
}

// IsTerminal reports whether f is a character device (a terminal): a hook
// run by hand has no event to read.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
