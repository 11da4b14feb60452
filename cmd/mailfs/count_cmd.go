package main

import (
	"fmt"
	"strconv"
)

type countCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox (or queue:name, channel:name)."`
	jsonFlag
}

func (c *countCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	s, err := a.open()
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
	jsonFlag
}

func (c *agentsCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	agents, err := s.Agents()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, agent := range agents {
		n, err := s.Count(agent)
		if err != nil {
			return err
		}
		if c.JSON {
			if err := printValue(a.out, n); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{agent, strconv.Itoa(n.Unread), strconv.Itoa(n.Total), strconv.Itoa(n.Archived)})
	}
	return table(a.out, []string{"AGENT", "UNREAD", "TOTAL", "ARCHIVED"}, rows)
}
