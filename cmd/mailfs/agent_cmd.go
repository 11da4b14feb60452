package main

import (
	"fmt"

	"github.com/mailfs/mailfs/maildir"
)

type agentCmd struct {
	Add agentAddCmd `cmd:"" help:"Register agents: make their (empty) mailboxes."`
}

type agentAddCmd struct {
	Names []string `arg:"" name:"agent" help:"Agents to register (rig/role, toast, …)."`
}

func (c *agentAddCmd) Help() string {
	return `Makes each agent's mailbox, empty, so that the town knows the agent before
its first mail: "mailfs agents" lists it, a group's pattern (gastown.*)
reaches it, and a first send to it is no longer warned about as a possible
typo. An agent that has a mailbox already is left as it is. Prints each
agent's id as mailfs spells it; on a named host, the agent is homed here
if it has no home yet (as "mailfs setup" does).`
}

func (c *agentAddCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	// Every name is checked before any mailbox is made.
	var names []string
	for _, n := range c.Names {
		name, err := maildir.ParseAgent(n)
		if err != nil {
			return err
		}
		names = append(names, name)
	}
	host, _ := s.LocalHost()
	for _, name := range names {
		if _, err := s.AddAgent(name); err != nil {
			return err
		}
		box := maildir.Address{Kind: maildir.KindAgent, Name: name}
		if host != "" {
			if h, err := s.HomeOf(box); err == nil && h.Host == "" {
				if err := s.ClaimHome(box); err != nil {
					a.warn(err)
				}
			}
		}
		if _, err := fmt.Fprintln(a.out, name); err != nil {
			return err
		}
	}
	return nil
}
