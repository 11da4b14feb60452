package main

import (
	"fmt"
	"time"

	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/maildir"
)

type checkCmd struct {
	Agent  string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail and nudges."`
	Inject bool          `help:"Print <system-reminder> blocks for an agent's prompt hook, draining the nudges; never fail."`
	Budget time.Duration `default:"3s" placeholder:"D" help:"With --inject, stop after this long and say so."`
	JSON   bool          `help:"Print the summary as JSON (without --inject)."`
}

func (c *checkCmd) Help() string {
	return `Without --inject, prints a one-line summary of unread mail and queued
nudges and changes nothing; the exit status is 0 when there is something, 1
when there is nothing, so "if mailfs check me; then ...; fi" works.

With --inject, meant for an agent's prompt-submit hook: prints the agent's
unread mail grouped by priority (urgent first, with the strongest
instruction) and then its nudges, which are drained, as <system-reminder>
blocks; prints nothing at all when there is nothing to say. Mail a
reminder already named in this session is counted in one line, not listed
again, until the next session start. It never fails
the hook: problems go to stderr and the exit status is 0. If the work takes
longer than --budget it prints what it has, says it stopped early, and
leaves unprinted nudges to come back later.`
}

func (c *checkCmd) Run(a *app) error {
	if c.Inject && c.JSON {
		return usage("--inject prints the reminder a hook adds to the agent's context; --json is the summary's form", "--inject and --json: choose one")
	}
	if c.Inject {
		c.inject(a)
		return nil
	}
	agent, err := mailbox(c.Agent)
	if err == nil && agent.Kind != maildir.KindAgent {
		err = usage(`"mailfs inbox" lists a queue or a channel`, "check takes an agent, not %s", agent)
	}
	if err != nil {
		return err
	}
	s, err := a.peek()
	if err != nil {
		return err
	}
	mail, err := s.List(agent, maildir.ListOptions{})
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	nudges, err := q.Len(agent.Name)
	if err != nil {
		return err
	}
	sum := struct {
		Agent  string `json:"agent"`
		Unread int    `json:"unread"`
		Urgent int    `json:"urgent"`
		High   int    `json:"high"`
		Nudges int    `json:"nudges"`
	}{Agent: agent.Name, Unread: len(mail), Nudges: nudges}
	for _, m := range mail {
		switch m.Priority {
		case maildir.Urgent:
			sum.Urgent++
		case maildir.High:
			sum.High++
		}
	}
	if c.JSON {
		err = printValue(a.out, sum)
	} else {
		_, err = fmt.Fprintf(a.out, "%s: %d unread (%d urgent, %d high), %d nudges\n", agent.Name, sum.Unread, sum.Urgent, sum.High, sum.Nudges)
	}
	if err == nil && sum.Unread == 0 && sum.Nudges == 0 {
		return &exitStatus{code: exitNothing}
	}
	return err
}

// inject prints the hook's reminder. Every problem goes to stderr.
func (c *checkCmd) inject(a *app) { hookcmd.Inject(a.hookEnv(), c.Agent, c.Budget) }
