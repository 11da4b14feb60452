package main

import (
	"fmt"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

type takeCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox."`
	Limit int    `placeholder:"N" help:"Take at most N messages, oldest first (0: all)."`
	Full  bool   `help:"Print every key of each message, as show does, not only what an agent acts on."`
	filterFlags
	jsonFlag
}

func (c *takeCmd) Help() string {
	return `Prints the agent's unread messages with their bodies, oldest first, then
marks each read: what an agent wants at the top of its loop, in one call.
Printing comes first and marking after, so a take killed in between shows
the messages again next time; it never loses one. The filters (--type,
--from, --priority, --since, --subject, --body) take only the messages they
match, as inbox lists them: "take --type work_assignment" leaves the rest
unread. Each message is printed as an agent acts on it: the id, sender,
priority (when not normal), copies, subject and body; --full prints every
key, as show does; --json is unchanged. Exit status 1 when there was
nothing to take.`
}

func (c *takeCmd) Run(a *app) error {
	if c.Limit < 0 {
		return usage("give --limit a whole number, 0 for no limit", "--limit must not be negative")
	}
	s, box, err := a.openBox(c.Agent, false)
	if err != nil {
		return err
	}
	if err := s.MayChange(box); err != nil {
		return err // refused before anything is printed: take marks what it prints
	}
	m, err := c.matcher("")
	if err != nil {
		return err
	}
	msgs, err := s.List(box, maildir.ListOptions{Limit: c.Limit, Match: m})
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return &exitStatus{code: exitNothing}
	}
	for i, m := range msgs {
		if c.JSON {
			err = printJSON(a.out, []*maildir.Message{m})
		} else {
			if i > 0 {
				fmt.Fprintln(a.out)
			}
			if c.Full {
				err = printMessage(a.out, m)
			} else {
				err = printBrief(a.out, m)
			}
		}
		if err != nil {
			return err // not shown, so not marked
		}
	}
	if err := a.flush(); err != nil {
		return err // not shown, so not marked
	}
	failed := 0
	var read []*maildir.Message
	for _, m := range msgs {
		if _, err := s.MarkRead(box, m.ID); err != nil {
			failed++
			a.exit(err)
		} else {
			read = append(read, m)
		}
	}
	mailSeen(a, nudgeq.MailRead, box, read...)
	if failed > 0 {
		return &exitStatus{code: exitError, msg: fmt.Sprintf("error: %d of %d messages were shown but not marked read", failed, len(msgs))}
	}
	return nil
}

type handoffCmd struct {
	Agent   string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Who hands off, to its next session."`
	Subject string `short:"s" required:"" placeholder:"TEXT" help:"One line: where things stand."`
	bodyFlags
}

func (c *handoffCmd) Help() string {
	return `Sends mail to yourself for your next session: type "handoff", high
priority. "mailfs hook session-start" shows unread handoff notes first, in
full; the archive sweep never moves them while they are unread. Read the
note (mailfs read) once its work is picked up. Prints the note's id.`
}

func (c *handoffCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	body, err := c.body(a.ctx, a.in, false)
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	sent, err := s.Send(&maildir.Message{From: agent, To: maildir.Address{Kind: maildir.KindAgent, Name: agent}.Qualified(),
		Subject: c.Subject, Body: body, Type: hook.HandoffType, Priority: maildir.High})
	if perr := printSent(a, sent, false); err == nil {
		err = perr
	}
	return err
}
