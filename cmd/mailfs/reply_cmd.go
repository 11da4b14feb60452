package main

import "github.com/mailfs/mailfs/maildir"

type replyCmd struct {
	Args    []string `arg:"" name:"agent-and-id" help:"[AGENT] ID: the mailbox holding the message, the one who replies (default $MAILFS_AGENT's, else the one that holds the id), and the message to answer."`
	Subject string   `short:"s" placeholder:"TEXT" help:"The subject (default \"Re: \" and the original's)."`
	bodyFlags
	From     string   `placeholder:"AGENT" help:"Reply as this agent (default: the mailbox's)."`
	Type     string   `placeholder:"TYPE" help:"A one-word type (default reply): merge_notification, completion_report, …"`
	Priority string   `default:"normal" enum:"urgent,high,normal,low" help:"urgent, high, normal or low."`
	CC       []string `sep:"," placeholder:"A,B" help:"Also deliver a copy to each of these."`
	Field    []string `sep:"none" placeholder:"KEY=VALUE" help:"Put a \"Key: value\" line at the top of the body (repeatable), as protocol replies (MERGED, REWORK_REQUEST) do."`
	Nudge    bool     `help:"Also nudge each recipient about the reply."`
	JSON     bool     `help:"Print the reply as a JSON line instead of its id."`
}

func (c *replyCmd) Help() string {
	return `Sends a message to the sender of ID, in the same thread, with reply_to
set to ID: a full send (--field, --type, --priority, --cc, --from, --nudge),
so MERGED and REWORK_REQUEST replies carry their protocol fields and type.
Prints the new id.`
}

func (c *replyCmd) Run(a *app) error {
	body, err := c.body(a.in, len(c.Field) > 0)
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
	sent, err := s.ReplyTo(orig, &maildir.Message{From: c.From, Subject: c.Subject, Body: body, Type: c.Type,
		Priority: maildir.Priority(c.Priority), CC: c.CC})
	if perr := printSent(a, sent, c.JSON); err == nil {
		err = perr
	}
	answered(a, sent)
	if c.Nudge && err == nil {
		nudgeAbout(a, sent)
	}
	return err
}
