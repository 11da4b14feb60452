package main

import (
	"fmt"

	"github.com/mailfs/mailfs/maildir"
)

type replyCmd struct {
	Args    []string `arg:"" name:"agent-and-id" help:"[AGENT] ID: the mailbox holding the message, the one who replies (default $MAILFS_AGENT's, else the one that holds the id), and the message to answer."`
	Subject string   `short:"s" placeholder:"TEXT" help:"The subject (default \"Re: \" and the original's)."`
	bodyFlags
	From     string       `placeholder:"AGENT" help:"Reply as this agent (default: the mailbox's)."`
	Type     string       `placeholder:"TYPE" help:"A one-word type (default reply): merge_notification, completion_report, …"`
	Priority priorityFlag `default:"normal" enum:"urgent,high,normal,low" help:"urgent, high, normal or low (any case)."`
	CC       []string     `sep:"," placeholder:"A,B" help:"Also deliver a copy to each of these."`
	Field    []string     `sep:"none" placeholder:"KEY=VALUE" help:"Put a \"Key: value\" line at the top of the body (repeatable), as protocol replies (MERGED, REWORK_REQUEST) do."`
	Nudge    bool         `help:"Also nudge each recipient about the reply."`
	JSON     bool         `help:"Print the reply as a JSON line instead of its id."`
	Key      *string      `name:"idempotency-key" placeholder:"KEY" help:"Reply once: another reply of the same message with this key within 30 days delivers nothing, exits 0 and prints the first reply's ids (also after a crash or a power cut between the two); the key used for a different message (a send's included) exits 3 and sends nothing. Keys are per root, shared with send, at most 128 bytes."`
}

func (c *replyCmd) Help() string {
	return `Sends a message to the sender of ID, in the same thread, with reply_to
set to ID: a full send (--field, --type, --priority, --cc, --from, --nudge),
so MERGED and REWORK_REQUEST replies carry their protocol fields and type.
Prints the new id. --idempotency-key makes a retried reply (after a crash,
a timeout) deliver once, as it does for send; keys are shared with send.`
}

func (c *replyCmd) Run(a *app) error {
	if c.Subject != "" {
		if err := checkSubject(c.Subject); err != nil {
			return err
		}
	}
	if c.Key != nil {
		if err := maildir.CheckKey(*c.Key); err != nil {
			return usage("a key is what makes a retried reply the same reply: an id of the task, say", "--idempotency-key: %v", err)
		}
	}
	body, err := c.body(a.ctx, a.in, len(c.Field) > 0)
	if err != nil {
		return err
	}
	if body, err = protocolBody(c.Field, body); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	ts, err := a.targets(s, c.Args)
	if err == nil && len(ts) != 1 {
		err = usage("give [AGENT] ID", "reply to one message at a time")
	}
	if err != nil {
		return err
	}
	orig, err := s.Get(ts[0].box, ts[0].id)
	if err != nil {
		return err
	}
	if c.From == "" && orig.Box.Kind != maildir.KindAgent {
		return usage("pass --from AGENT", "%s is in %s: say who replies with --from", orig.ID, orig.Box)
	}
	r := &maildir.Message{From: c.From, Subject: c.Subject, Body: body, Type: c.Type,
		Priority: maildir.Priority(c.Priority), CC: c.CC}
	var sent []*maildir.Message
	again := false
	if c.Key != nil {
		sent, again, err = s.ReplyOnce(orig, r, *c.Key)
		if again {
			a.warn(fmt.Errorf("sent before with --idempotency-key %q: nothing new delivered; the first reply's ids follow", *c.Key))
		}
	} else {
		sent, err = s.ReplyTo(orig, r)
	}
	if perr := printSent(a, sent, c.JSON); err == nil {
		err = perr
	}
	if again {
		return err
	}
	answered(a, sent)
	if c.Nudge && err == nil {
		nudgeAbout(a, sent)
	}
	return err
}
