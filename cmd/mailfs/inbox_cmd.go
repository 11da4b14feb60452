package main

import "github.com/mailfs/mailfs/maildir"

type inboxCmd struct {
	Agent    string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox (or queue:name, channel:name)."`
	All      bool   `help:"Include read messages."`
	Archived bool   `help:"List the archive instead, read and unread."`
	By       string `default:"time" enum:"time,priority" help:"Order by time (oldest first) or by priority (urgent first, then by time)."`
	Limit    int    `placeholder:"N" help:"Print at most N messages (0: all)."`
	filterFlags
	jsonFlag
}

func (c *inboxCmd) Run(a *app) error {
	agent, err := mailbox(c.Agent)
	if err != nil {
		return err
	}
	if c.Limit < 0 {
		return usage("give --limit a whole number, 0 for no limit", "--limit must not be negative")
	}
	s, err := a.read()
	if err != nil {
		return err
	}
	all := c.All || c.Archived
	m, err := c.matcher("")
	if err != nil {
		return err
	}
	msgs, err := s.List(agent, maildir.ListOptions{All: all, Archived: c.Archived, ByPriority: c.By == "priority", Limit: c.Limit, Match: m})
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.out, msgs)
	}
	header := []string{"ID", "FROM", "PRIORITY", "SUBJECT"}
	if all {
		header = []string{"ID", "FROM", "PRIORITY", "STATUS", "SUBJECT"}
	}
	return table(a.out, header, messageRows(msgs, func(m *maildir.Message) []string {
		if all {
			return []string{m.ID, m.From, string(m.Priority), readState(m), m.Subject}
		}
		return []string{m.ID, m.From, string(m.Priority), m.Subject}
	}))
}
