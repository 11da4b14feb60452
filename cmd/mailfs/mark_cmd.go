package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// idsArgs are the arguments of the commands that act on several messages.
type idsArgs struct {
	Args []string `arg:"" name:"agent-and-ids" help:"[AGENT] ID…: the mailbox (or queue:name, channel:name) and the messages (ids, file names, or unique prefixes). The mailbox may be left out: $MAILFS_AGENT's, else the one that holds the id."`
}

// each calls f for every target, reports each failure, and fails at the
// end if any did: one bad id does not stop the others.
func (c *idsArgs) each(a *app, f func(s *maildir.Store, agent maildir.Address, id string) error) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	ts, err := a.targets(s, c.Args)
	if err != nil {
		return err
	}
	return c.runTargets(a, s, ts, f)
}

// run applies f to ids in one mailbox.
func (c *idsArgs) run(a *app, s *maildir.Store, box maildir.Address, ids []string, f func(s *maildir.Store, agent maildir.Address, id string) error) error {
	ts := make([]target, len(ids))
	for i, id := range ids {
		ts[i] = target{box, id}
	}
	return c.runTargets(a, s, ts, f)
}

// runTargets applies f to each target, reporting each failure, and fails at
// the end if any did, saying which were done: a partial failure never
// hides the part that succeeded.
func (c *idsArgs) runTargets(a *app, s *maildir.Store, ts []target, f func(s *maildir.Store, agent maildir.Address, id string) error) error {
	var done []string
	for _, t := range ts {
		if err := f(s, t.box, t.id); err != nil {
			if len(ts) == 1 {
				return err
			}
			a.exit(err)
			continue
		}
		done = append(done, t.id)
	}
	return partialFailure(done, len(ts)-len(done))
}

// partialFailure is the end of a command that acted on several ids of
// which failed failed (each already said): nil when none did, else status
// 2 with a line naming what was done, so a partial failure never hides the
// part that succeeded.
func partialFailure(done []string, failed int) error {
	if failed == 0 {
		return nil
	}
	total := failed + len(done)
	if len(done) == 0 {
		return &exitStatus{code: exitError, msg: fmt.Sprintf("error: %d of %d failed (each said above); none was done", failed, total)}
	}
	return &exitStatus{code: exitError, msg: fmt.Sprintf("error: %d of %d failed (each said above); done: %s", failed, total, strings.Join(done, " "))}
}

type markReadCmd struct {
	Args []string `arg:"" optional:"" name:"agent-and-ids" help:"[AGENT] ID…: the mailbox (default $MAILFS_AGENT's, else the one that holds the id) and the messages; with --all, just the agent."`
	All  bool     `help:"Mark every unread message of the agent read (the agent is the argument, or $MAILFS_AGENT)."`
}

func (c *markReadCmd) Help() string {
	return `Rewrites only the "read" key of each message, atomically; a message that
is already read is not touched. Messages in the archive can be marked too.`
}

func (c *markReadCmd) Run(a *app) error {
	if c.All {
		if len(c.Args) > 1 {
			return usage("mark-read --all [AGENT]", "--all takes the agent only, not ids")
		}
		agent := ""
		if len(c.Args) == 1 {
			agent = c.Args[0]
		}
		s, box, err := a.openBox(agentOrEnv(agent), false)
		if err != nil {
			return err
		}
		msgs, err := s.List(box, maildir.ListOptions{})
		if err != nil {
			return err
		}
		var ids []string
		for _, m := range msgs {
			ids = append(ids, m.ID)
		}
		return (&idsArgs{}).run(a, s, box, ids, markRead(a))
	}
	if len(c.Args) == 0 {
		return usage("mark-read [AGENT] ID…, or mark-read --all [AGENT]", "no message id given")
	}
	return (&idsArgs{Args: c.Args}).each(a, markRead(a))
}

// markRead marks one message read, settling it in its agent's nudge queue.
func markRead(a *app) func(s *maildir.Store, agent maildir.Address, id string) error {
	return func(s *maildir.Store, agent maildir.Address, id string) error {
		m, err := s.MarkRead(agent, id)
		if err == nil {
			mailSeen(a, nudgeq.MailSettled, agent, m)
		}
		return err
	}
}

// agentOrEnv is arg, or $MAILFS_AGENT when arg is empty.
func agentOrEnv(arg string) string {
	if arg == "" {
		return os.Getenv("MAILFS_AGENT")
	}
	return arg
}

type markUnreadCmd struct {
	idsArgs
}

func (c *markUnreadCmd) Run(a *app) error {
	return c.each(a, func(s *maildir.Store, agent maildir.Address, id string) error {
		_, err := s.MarkUnread(agent, id)
		return err
	})
}

type deleteCmd struct {
	idsArgs
}

func (c *deleteCmd) Help() string {
	return `Removes each message from the mailbox, or from its archive, for good.`
}

func (c *deleteCmd) Run(a *app) error {
	return c.each(a, func(s *maildir.Store, agent maildir.Address, id string) error {
		err := s.Delete(agent, id)
		if err == nil {
			mailSeen(a, nudgeq.MailSettled, agent, &maildir.Message{ID: id})
		}
		return err
	})
}
