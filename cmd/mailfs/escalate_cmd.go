package main

import (
	"cmp"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/mailfs/mailfs/escalation"
)

type escalateCmd struct {
	Raise escalateRaiseCmd `cmd:"" default:"withargs" help:"Raise an escalation (the default: mailfs escalate -s … --severity …)."`
	List  escalateListCmd  `cmd:"" help:"List open and acknowledged escalations."`
	Ack   escalateAckCmd   `cmd:"" help:"Acknowledge an escalation: it is re-sent no more."`
	Close escalateCloseCmd `cmd:"" help:"Close an escalation."`
	Bump  escalateBumpCmd  `cmd:"" help:"Re-send open escalations nobody acknowledged in time (the archive sweep does this too)."`
}

func (c *escalateCmd) Help() string {
	return `Escalations route a problem by severity to whoever must act, and keep after
them: state/escalation.json maps each severity to addresses (default: the
mayor), e.g. {"routes": {"critical": ["mayor", "@oncall"]}, "resend_after":
"30m", "max_resends": 3}. An escalation is mail of type "escalation" with a
"Severity:" field, priority by severity (critical urgent, high high, medium
normal, low low), tracked in state/escalations/<id>.json. One that nobody
acknowledges is re-sent in its thread after resend_after, at most
max_resends times, by "mailfs escalate bump" and by every archive sweep.`
}

type escalateRaiseCmd struct {
	Subject  string `short:"s" required:"" placeholder:"TEXT" help:"One line: what is wrong."`
	Severity string `required:"" enum:"critical,high,medium,low" help:"critical, high, medium or low."`
	bodyFlags
	From string `env:"MAILFS_AGENT" placeholder:"AGENT" help:"Who escalates."`
}

func (c *escalateRaiseCmd) Run(a *app) error {
	if c.From == "" {
		return usage("pass --from AGENT, or set MAILFS_AGENT", "no sender given")
	}
	if err := checkSubject(c.Subject); err != nil {
		return err
	}
	body, err := c.body(a.ctx, a.in, true)
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	r, sent, err := (&escalation.Desk{Store: s}).Raise(c.From, c.Severity, c.Subject, body)
	if perr := printSent(a, sent, false); err == nil {
		err = perr
	}
	if err == nil {
		fmt.Fprintf(a.err, "mailfs: escalation %s raised (%s) to %v; \"mailfs escalate ack %s\" acknowledges it\n", r.ID, r.Severity, r.To, r.ID)
	}
	return err
}

type escalateListCmd struct {
	All  bool `help:"Include closed escalations."`
	JSON bool `help:"Print each escalation's record as a JSON line."`
}

func (c *escalateListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	recs, err := (&escalation.Desk{Store: s}).List(c.All)
	if err != nil {
		return err
	}
	var rows [][]string
	for _, r := range recs {
		if c.JSON {
			if err := printValue(a.out, r); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{r.ID, r.Severity, r.Status, strconv.Itoa(r.Resends), time.Since(r.SentAt).Round(time.Second).String(), r.Subject})
	}
	return table(a.out, []string{"ID", "SEVERITY", "STATUS", "RESENT", "AGE", "SUBJECT"}, rows)
}

type escalateAckCmd struct {
	ID string `arg:"" help:"The escalation's id."`
	As string `env:"MAILFS_AGENT" placeholder:"AGENT" help:"Who acknowledges."`
}

func (c *escalateAckCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	_, err = (&escalation.Desk{Store: s}).Ack(c.ID, cmp.Or(c.As, "someone"))
	return err
}

type escalateCloseCmd struct {
	ID     string `arg:"" help:"The escalation's id."`
	As     string `env:"MAILFS_AGENT" placeholder:"AGENT" help:"Who closes it."`
	Reason string `placeholder:"TEXT" help:"Why (recorded)."`
}

func (c *escalateCloseCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	_, err = (&escalation.Desk{Store: s}).Close(c.ID, cmp.Or(c.As, "someone"), c.Reason)
	return err
}

type escalateBumpCmd struct{}

func (c *escalateBumpCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	return bumpEscalations(a, s.Dir(), &escalation.Desk{Store: s})
}

// bumpEscalations re-sends what is due and says so on stderr. Its error
// is the command's: a bump refused (a root in a newer format, say) is a
// failure, not a quiet success.
func bumpEscalations(a *app, root string, d *escalation.Desk) error {
	if _, err := os.Stat(root); err != nil {
		return nil // no town, nothing to bump
	}
	bumped, err := d.Bump()
	for _, r := range bumped {
		fmt.Fprintf(a.err, "mailfs: re-sent escalation %s (%s, resend %d): nobody acknowledged it\n", r.ID, r.Severity, r.Resends)
	}
	return err
}
