package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/live"
)

type hookCmd struct {
	Event    string        `arg:"" enum:"session-start,prompt-submit,post-tool,stop" help:"session-start, prompt-submit, post-tool or stop."`
	Agent    string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail."`
	Runtime  string        `default:"claude" enum:"claude,codex,gemini,qwen,copilot,plain" help:"The format to answer in: claude (Claude Code), codex (Codex), gemini (Gemini CLI), qwen (Qwen Code), copilot (Copilot CLI: the stop event only) or plain text."`
	Budget   time.Duration `default:"3s" placeholder:"D" help:"Stop after this long, reading the event included, and say what was had."`
	Every    time.Duration `default:"2m" placeholder:"D" help:"post-tool: check at most once per D for each agent."`
	MaxBytes int           `name:"max-bytes" default:"9000" placeholder:"N" help:"Print at most N bytes (at least 1024), counted as the runtime receives them (Claude Code shows at most 10,000 characters)."`
}

func (c *hookCmd) Help() string {
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
(startup, resume, clear, compact) lists it all again. A handoff note shows as one only when the agent sent it to
itself. Message text is neutralised ("<" and ">" cannot close a block) and
the answer is at most --max-bytes as the runtime receives it, JSON escaping
included; nudges that do not fit stay queued, and the answer says so.

What a hook remembers (its rate limit, the stops it blocked, what it showed
this turn) is kept per user, in $XDG_STATE_HOME/mailfs (default
~/.local/state/mailfs; $MAILFS_STATE_DIR overrides), under a lock: parallel
hooks decide one at a time, and a hook that cannot record a decision stays
silent rather than repeat itself. "mailfs setup" installs these hooks.`
}

// minHookBytes is the least --max-bytes a hook runs with.
const minHookBytes = 1024

func (c *hookCmd) Run(a *app) error {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.err, "mailfs: error: hook %s: %v\n", c.Event, r)
		}
	}()
	if c.MaxBytes < minHookBytes {
		// A hook exits 0 whatever happens: a bound too small to say
		// anything is raised to the least that can, and said.
		fmt.Fprintf(a.err, "mailfs: warning: --max-bytes %d is too small to say anything; using %d\n", c.MaxBytes, minHookBytes)
		c.MaxBytes = minHookBytes
	}
	agent, err := needAgent(c.Agent)
	if err != nil {
		if hook.Event(c.Event) == hook.SessionStart {
			a.out.Write(hook.NoAgent(hook.Runtime(c.Runtime))) // said to the session, not only to a debug log
		}
		a.exit(err)
		return nil
	}
	// The budget starts now: reading the event is part of it.
	start := time.Now()
	in := c.input(a, start.Add(c.Budget))
	s, err := a.read()
	if err != nil {
		a.exit(err)
		return nil
	}
	q, err := a.nudges()
	if err != nil {
		a.exit(err)
		return nil
	}
	budget := c.Budget - time.Since(start)
	if budget <= 0 {
		budget = time.Millisecond // what is at hand, at once
	}
	h := &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q, Budget: budget}, PostToolEvery: c.Every, MaxBytes: c.MaxBytes,
		Doorbells: func(agent string, nonces []string) error { return live.Confirm(s, agent, nonces) }}
	ans := h.Handle(a.ctx, hook.Runtime(c.Runtime), hook.Event(c.Event), agent, in)
	a.out.Write(ans.Output)
	for _, err := range ans.Errs {
		a.exit(err)
	}
	return nil
}

// input reads the runtime's event from stdin until deadline: a runtime
// that never closes stdin costs the hook its budget, not its turn.
func (c *hookCmd) input(a *app, deadline time.Time) hook.Input {
	return hookInput(a, "hook "+c.Event, deadline, fmt.Sprintf("within the %v budget", c.Budget))
}

// hookInput reads a runtime's hook event from stdin until deadline; what
// names the reader in warnings, and within the deadline.
func hookInput(a *app, what string, deadline time.Time, within string) hook.Input {
	var in hook.Input
	if f, ok := a.in.(*os.File); ok && isTerminal(f) {
		return in
	}
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		data, err := io.ReadAll(io.LimitReader(a.in, 1<<20))
		done <- read{data, err}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err == nil && len(r.data) > 0 {
			if err := json.Unmarshal(r.data, &in); err != nil {
				a.warn(fmt.Errorf("%s: the event on stdin is not JSON (%v); going on without it", what, err))
			}
		}
	case <-timer.C:
		a.warn(fmt.Errorf("%s: stdin was not closed %s; going on without the event", what, within))
	}
	return in
}

// isTerminal reports whether f is a character device (a terminal): a hook
// run by hand has no event to read.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
