package main

import (
	"time"

	"github.com/mailfs/mailfs/maildir"
)

type auditCmd struct {
	Last int `short:"n" default:"20" placeholder:"N" help:"Show the last N entries; 0 shows them all."`
	jsonRows
}

func (c *auditCmd) Help() string {
	return `Lists the town's audit log, newest first: each action a person took on
someone else's work from the web view ("mailfs serve --as NAME": release,
reassign, nudge) or with "mailfs reassign --by NAME", with who, when, from
which address, on what, and whether it was done ("done", or why it failed).
The log is state/audit/, one JSON file per entry, committed with the mail.`
}

func (c *auditCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	if c.Last < 0 {
		return usage("give -n a count; 0 shows every entry", "-n must not be negative")
	}
	log, err := s.AuditLog(c.Last)
	if err != nil {
		return err
	}
	if c.JSON {
		for _, e := range log {
			if err := printValue(a.out, auditRow{e.ID, e}); err != nil {
				return err
			}
		}
		return nil
	}
	rows := make([][]string, len(log))
	for i, e := range log {
		result := "done"
		if !e.Done() {
			result = "failed: " + e.Error
		}
		what := e.Item
		switch {
		case e.To != "":
			what += " → " + e.To
		case e.Note != "":
			what += ": " + e.Note
		}
		rows[i] = []string{e.At.Format(time.RFC3339), e.Actor, e.Addr, e.Action, e.Agent, what, result}
	}
	return table(a.out, []string{"AT", "BY", "FROM", "ACTION", "AGENT", "ITEM", "RESULT"}, rows)
}

// auditRow is an entry as --json prints it: its id, then its keys.
type auditRow struct {
	ID string `json:"id"`
	*maildir.AuditEntry
}
