package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mailfs/mailfs/hook"
)

type hookCmd struct {
	Event   string        `arg:"" enum:"session-start,prompt-submit,post-tool,stop" help:"session-start, prompt-submit, post-tool or stop."`
	Agent   string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail (default $MAILFS_AGENT)."`
	Runtime string        `default:"claude" enum:"claude,gemini,plain" help:"The format to answer in: claude (Claude Code), gemini (Gemini CLI) or plain text."`
	Budget  time.Duration `default:"3s" placeholder:"D" help:"Stop after this long and say what was had."`
	Every   time.Duration `default:"2m" placeholder:"D" help:"post-tool: check at most once per D for each agent."`
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
                 follows a block, never more than 3 times in a row

Message text is neutralised ("<" and ">" cannot close a block) and the
answer is bounded to 16 KiB. "mailfs setup claude|gemini" installs these.`
}

func (c *hookCmd) Run(a *app) error {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.err, "mailfs: error: hook %s: %v\n", c.Event, r)
		}
	}()
	agent, err := needAgent(c.Agent)
	if err != nil {
		a.exit(err)
		return nil
	}
	var in hook.Input
	if f, ok := a.in.(*os.File); !ok || !isTerminal(f) {
		data, err := io.ReadAll(io.LimitReader(a.in, 1<<20))
		if err == nil && len(data) > 0 {
			if err := json.Unmarshal(data, &in); err != nil {
				a.warn(fmt.Errorf("hook %s: the event on stdin is not JSON (%v); going on without it", c.Event, err))
			}
		}
	}
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
	h := &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q, Budget: c.Budget}, PostToolEvery: c.Every}
	ans := h.Handle(a.ctx, hook.Runtime(c.Runtime), hook.Event(c.Event), agent, in)
	a.out.Write(ans.Output)
	for _, err := range ans.Errs {
		a.exit(err)
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal): a hook
// run by hand has no event to read.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
