package main

import (
	"fmt"
	"strconv"

	"github.com/mailfs/mailfs/maildir"
)

type countCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox (or queue:name, channel:name)."`
	jsonRows
}

func (c *countCmd) Run(a *app) error {
	agent, err := mailbox(c.Agent)
	if err != nil {
		return err
	}
	s, err := a.read()
	if err != nil {
		return err
	}
	n, err := s.Count(agent)
	if err != nil {
		return err
	}
	if c.JSON {
		return printValue(a.out, n)
	}
	_, err = fmt.Fprintf(a.out, "%d total, %d unread, %d archived\n", n.Total, n.Unread, n.Archived)
	return err
}

type agentsCmd struct {
	jsonRows
}

func (c *agentsCmd) Help() string {
	return `Lists every mailbox: unread, total and archived messages, and NEGLECTED,
the unread messages older than 24 hours. The archive sweep never moves
unread mail (it is the agent's work), so a parked or stuck agent shows here
instead of losing its assignments. --json adds the oldest unread time.`
}

func (c *agentsCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	agents, err := s.Agents()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, agent := range agents {
		n, err := s.Count(maildir.Address{Kind: maildir.KindAgent, Name: agent})
		if err != nil {
			return err
		}
		if c.JSON {
			if err := printValue(a.out, n); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{agent, strconv.Itoa(n.Unread), strconv.Itoa(n.Total), strconv.Itoa(n.Archived), strconv.Itoa(n.Neglected)})
	}
	return table(a.out, []string{"AGENT", "UNREAD", "TOTAL", "ARCHIVED", "NEGLECTED"}, rows)
}
