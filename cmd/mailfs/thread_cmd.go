package main

import "github.com/mailfs/mailfs/maildir"

type threadCmd struct {
	ID string `arg:"" help:"Any message of the thread, or the thread's id."`
	jsonFlag
}

func (c *threadCmd) Help() string {
	return `Searches every mailbox and archive, so its cost grows with the whole tree.
Each copy of a message sent to several agents is listed with its mailbox.`
}

func (c *threadCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	msgs, err := s.Thread(c.ID)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.out, msgs)
	}
	return table(a.out, []string{"ID", "MAILBOX", "FROM", "STATUS", "SUBJECT"}, messageRows(msgs, func(m *maildir.Message) []string {
		status := readState(m)
		if m.Archived {
			status += ",archived"
		}
		return []string{m.ID, m.Box.String(), m.From, status, m.Subject}
	}))
}
