package main

import (
	"fmt"

	"github.com/mailfs/mailfs/maildir"
)

type peekCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox."`
	jsonFlag
}

func (c *peekCmd) Help() string {
	return `Prints the oldest unread message, with its body, and changes nothing.
Exit status 1, with nothing printed, when there is no unread mail.`
}

func (c *peekCmd) Run(a *app) error {
	s, box, err := a.openBox(c.Agent, true)
	if err != nil {
		return err
	}
	msgs, err := s.List(box, maildir.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return &exitStatus{code: exitNothing}
	}
	return printOne(a, msgs[0], c.JSON)
}

type clearCmd struct {
	Agent  string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox."`
	DryRun bool   `name:"dry-run" help:"Print the ids that would move, and move nothing."`
}

func (c *clearCmd) Help() string {
	return `Archives every message in the mailbox, read or unread, as "gt mail clear"
does: they stay readable (inbox --archived, show, thread) and can be
restored. Prints how many moved, or with --dry-run the ids that would.`
}

func (c *clearCmd) Run(a *app) error {
	s, box, err := a.openBox(c.Agent, false)
	if err != nil {
		return err
	}
	entries, skipped, err := s.Entries(box, false)
	if err != nil {
		return err
	}
	for _, sk := range skipped {
		a.warn(sk)
	}
	ids := make([]string, len(entries))
	for i, e := range entries {
		ids[i] = e.ID
	}
	if c.DryRun {
		for _, id := range ids {
			fmt.Fprintln(a.out, id)
		}
		return nil
	}
	errs, err := settling(a, s, s.Archive)(box, ids)
	if err != nil {
		return err
	}
	moved, failed := 0, 0
	for _, err := range errs {
		if err != nil {
			failed++
			a.exit(err)
		} else {
			moved++
		}
	}
	fmt.Fprintf(a.out, "archived %d\n", moved)
	if failed > 0 {
		return &exitStatus{code: exitError}
	}
	return nil
}
