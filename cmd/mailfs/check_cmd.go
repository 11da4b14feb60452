package main

import (
	"context"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
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
blocks; prints nothing at all when there is nothing to say. It never fails
the hook: problems go to stderr and the exit status is 0. If the work takes
longer than --budget it prints what it has, says it stopped early, and
leaves unprinted nudges to come back later.`
}

func (c *checkCmd) Run(a *app) error {
	if c.Inject {
		c.inject(a)
		return nil
	}
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	s, err := a.open()
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
	nudges, err := q.Len(agent)
	if err != nil {
		return err
	}
	sum := struct {
		Agent  string `json:"agent"`
		Unread int    `json:"unread"`
		Urgent int    `json:"urgent"`
		High   int    `json:"high"`
		Nudges int    `json:"nudges"`
	}{Agent: agent, Unread: len(mail), Nudges: nudges}
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
		_, err = fmt.Fprintf(a.out, "%s: %d unread (%d urgent, %d high), %d nudges\n", agent, sum.Unread, sum.Urgent, sum.High, sum.Nudges)
	}
	if err == nil && sum.Unread == 0 && sum.Nudges == 0 {
		return &exitStatus{code: 1}
	}
	return err
}

// inject prints the hook's reminder. Every problem goes to stderr.
func (c *checkCmd) inject(a *app) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.err, "mailfs: error: check --inject: %v\n", r)
		}
	}()
	agent, err := needAgent(c.Agent)
	if err == nil {
		agent, err = maildir.ParseAgent(agent) // the reminder names the mailbox one way
	}
	if err != nil {
		a.exit(err)
		return
	}
	s, err := a.open()
	if err != nil {
		a.exit(err)
		return
	}
	q, err := a.nudges()
	if err != nil {
		a.exit(err)
		return
	}
	ctx, cancel := context.WithTimeout(a.ctx, c.Budget)
	defer cancel()
	said := map[string]bool{}
	report := func(err error) { // once each: mail and nudges often fail alike
		if !said[err.Error()] {
			said[err.Error()] = true
			a.exit(err)
		}
	}
	type mailResult struct {
		msgs []*maildir.Message
		err  error
	}
	type claimResult struct {
		b   *nudgeq.Batch
		err error
	}
	mailc, claimc := make(chan mailResult, 1), make(chan claimResult, 1)
	go func() {
		msgs, err := s.List(agent, maildir.ListOptions{})
		mailc <- mailResult{msgs, err}
	}()
	go func() {
		b, err := q.Claim(agent)
		claimc <- claimResult{b, err}
	}()
	r := &nudgeq.Reminder{Agent: agent}
	var batch *nudgeq.Batch
	for pending := 2; pending > 0; {
		// The budget comes first: once it is spent, results that are
		// ready too are not waited for.
		if ctx.Err() != nil {
			r.Partial = fmt.Sprintf("it took longer than its %v budget", c.Budget)
			if batch == nil {
				// Nudges claimed from now on are never shown, so never
				// removed: they return to the queue after the orphan
				// timeout.
				go func() {
					if cl := <-claimc; cl.b != nil {
						cl.b.Close()
					}
				}()
			}
			break
		}
		select {
		case m := <-mailc:
			pending--
			if m.err != nil {
				report(m.err)
			}
			r.Mail = m.msgs
		case cl := <-claimc:
			pending--
			if cl.err != nil {
				report(cl.err)
				continue
			}
			batch, r.Nudges, r.Refused = cl.b, cl.b.Nudges, cl.b.Refused
		case <-ctx.Done():
		}
	}
	fmt.Fprint(a.out, r.String())
	if batch != nil {
		if err := batch.Commit(); err != nil {
			a.exit(err)
		}
	}
}
