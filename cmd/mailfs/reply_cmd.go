package main

import "github.com/mailfs/mailfs/maildir"

type replyCmd struct {
	Agent   string `arg:"" help:"The mailbox holding the message: the one who replies."`
	ID      string `arg:"" help:"The message to answer."`
	Subject string `short:"s" placeholder:"TEXT" help:"The subject (default \"Re: \" and the original's)."`
	bodyFlags
	Priority string `default:"normal" enum:"urgent,high,normal,low" help:"urgent, high, normal or low."`
	JSON     bool   `help:"Print the reply as a JSON line instead of its id."`
}

func (c *replyCmd) Help() string {
	return `Sends a message from AGENT to the sender of ID, in the same thread, with
reply_to set to ID and type "reply". Prints the new id.`
}

func (c *replyCmd) Run(a *app) error {
	body, err := c.body(a.in, false)
	if err != nil {
		return err
	}
	s, box, err := a.openBox(c.Agent, false)
	if err != nil {
		return err
	}
	sent, err := s.Reply(box, c.ID, &maildir.Message{Subject: c.Subject, Body: body, Priority: maildir.Priority(c.Priority)})
	if perr := printSent(a, sent, c.JSON); err == nil {
		err = perr
	}
	return err
}
