package main

import (
	"fmt"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

type dndCmd struct {
	Action string `arg:"" enum:"on,off,status" help:"on, off or status."`
	Agent  string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose."`
}

func (c *dndCmd) Help() string {
	return `Do not disturb. While it is on, the agent's hooks and "check --inject" hold
back normal nudges and the reminders of normal and low mail; the mail is
still delivered and listed by inbox, and the nudges stay queued. Urgent
nudges and urgent and high-priority mail always get through the hooks;
live delivery (mailfs live) rings only for urgent mail and urgent nudges
while it is on, and holds the rest (a receipt says "held": dnd) until it
is off. "status" says
whether it is on and what live delivery holds back, counted by the rule
the deliverer decides by (exit 1 when it is off). The switch
is runtime/dnd/<agent>.json, never committed.`
}

func (c *dndCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err == nil {
		agent, err = maildir.ParseAgent(agent)
	}
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	switch c.Action {
	case "on", "off":
		return hook.SetDND(s, agent, c.Action == "on", time.Now())
	}
	on, since, err := hook.DND(s, agent)
	if err != nil {
		return err
	}
	if !on {
		fmt.Fprintf(a.out, "%s: do not disturb is off\n", agent)
		return &exitStatus{code: exitNothing}
	}
	msgs, err := s.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{})
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	queued, err := q.Peek(agent)
	if err != nil {
		return err
	}
	// What live delivery holds, counted by the rule the deliverer decides
	// by; of it, high mail the hooks still show.
	mail, nudges := live.DNDHeld(msgs, queued)
	high := 0
	for _, m := range msgs {
		if m.Priority == maildir.High {
			high++
		}
	}
	_, err = fmt.Fprintf(a.out, "%s: do not disturb is on since %s: live delivery holds %d unread messages (all but urgent; %d high, which the hooks still show) and %d normal nudges\n",
		agent, since.UTC().Format(time.RFC3339), mail, high, nudges)
	return err
}
