package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/escalation"
	"github.com/mailfs/mailfs/maildir"
)

type archiveCmd struct {
	Args          []string      `arg:"" optional:"" name:"agent-or-ids" help:"A mailbox: sweep only it (default: every mailbox). [AGENT] ID…: archive these messages now, whatever their age, instead of sweeping."`
	OlderThan     time.Duration `name:"older-than" default:"24h" placeholder:"AGE" help:"Archive messages older than this (a Go duration: 36h, 90m)."`
	Every         time.Duration `placeholder:"INTERVAL" help:"Keep sweeping once per INTERVAL until interrupted, printing a line per sweep."`
	DryRun        bool          `name:"dry-run" help:"Report what would move, and move nothing."`
	IncludeUnread bool          `name:"include-unread" help:"The strict sweep: move unread messages past the cut-off too (by default they stay, as the agent's work)."`
	ReadOnly      bool          `name:"read-only" hidden:"" help:"The default now: unread messages stay."`
	JSON          bool          `help:"Print each sweep as one JSON object per line."`
}

func (c *archiveCmd) Help() string {
	return `Without ids, sweeps: every read message older than --older-than moves from
state/mail/<agent>/ into state/mail/<agent>/archive/ under the same name,
by a rename that never replaces a file. Age comes from the stamp in the file
name, else the "timestamp" key, else the file's mtime. Safe to run from cron
and from several processes at once. A message whose id is already in the
archive stays in the mailbox and is reported.

Unread messages stay however old, unless --include-unread: they are the
agent's work, and an agent parked for a day must still find its assignments
in inbox, check and wait. Each sweep reports how many it kept that way, and
"mailfs agents" and "mailfs fsck" show unread mail older than the cut-off.

With ids, archives those messages now; one already archived is not an error.
Archived messages stay readable: inbox --archived, show, thread, restore.`
}

func (c *archiveCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	sweepOne := ""
	if len(c.Args) == 1 {
		if b, err := maildir.ParseMailbox(c.Args[0]); err == nil && b.Kind == maildir.KindAgent {
			// Another host's mailbox is refused, whatever it holds here.
			var nh *maildir.NotHomeError
			if err := s.MayChange(b); errors.As(err, &nh) && nh.Home != "" {
				return err
			}
			if s.Exists(b) {
				sweepOne = c.Args[0] // an existing mailbox: sweep it
			} else if _, err := s.Find(c.Args[0]); errors.Is(err, maildir.ErrNotFound) {
				// Neither a mailbox nor an id: most likely a mailbox
				// misspelt, or not made yet, meant to be swept.
				return withHint(fmt.Errorf("%w: no mailbox %q to sweep (nor a message with that id)", maildir.ErrNotFound, c.Args[0]), `"mailfs agents" lists the mailboxes`)
			}
		}
	}
	if len(c.Args) > 0 && sweepOne == "" {
		if c.Every != 0 || c.DryRun || c.IncludeUnread || c.JSON {
			return usage("name no ids to sweep", "--every, --dry-run, --include-unread and --json apply to a sweep, not to named messages")
		}
		ts, err := a.targets(s, c.Args)
		if err != nil {
			return err
		}
		return eachMoved(a, settling(a, s, s.Archive), ts)
	}
	if c.OlderThan <= 0 {
		return usage("give a duration such as 24h, 36h or 90m", "--older-than must be positive, not %v", c.OlderThan)
	}
	if c.Every < 0 {
		return usage("give a duration such as 1h", "--every must be positive, not %v", c.Every)
	}
	sw := &archive.Sweeper{Store: s, OlderThan: c.OlderThan, IncludeUnread: c.IncludeUnread, DryRun: c.DryRun}
	var agents []string
	if sweepOne != "" {
		agent, err := maildir.ParseAgent(sweepOne)
		if err != nil {
			return err
		}
		agents = []string{agent}
	}
	desk := &escalation.Desk{Store: s}
	if c.Every == 0 {
		rep, err := sw.Sweep(a.ctx, agents...)
		if rep != nil {
			c.print(a, rep)
		}
		if !c.DryRun {
			err = errors.Join(err, bumpEscalations(a, s.Dir(), desk))
		}
		return err
	}
	// Failures are printed as they happen; an interrupt is a clean stop. A
	// root this mailfs may not write (a newer format, a damaged record)
	// stops the loop with exit 2: no later round could do better.
	ctx, stop := context.WithCancel(a.ctx)
	defer stop()
	var refused error
	loopErr := sw.Loop(ctx, c.Every, agents, func(rep *archive.Report, err error) {
		c.print(a, rep)
		if !c.DryRun {
			err = errors.Join(err, bumpEscalations(a, s.Dir(), desk))
		}
		if errors.Is(err, maildir.ErrNewerFormat) || errors.Is(err, maildir.ErrDamagedFormat) {
			refused = err
			stop()
			return
		}
		if err != nil {
			a.exit(err)
		}
	})
	if refused != nil {
		return refused
	}
	return loopErr
}

// sweepJSON is the --json form of a sweep's report.
type sweepJSON struct {
	Time       time.Time       `json:"time"`
	DryRun     bool            `json:"dry_run"`
	Mailboxes  int             `json:"mailboxes"`
	Archived   []archive.Moved `json:"archived"`
	KeptUnread int             `json:"kept_unread"`
	Skipped    []skipJSON      `json:"skipped"`
	Failed     []failedJSON    `json:"failed"`
	Elsewhere  []string        `json:"elsewhere,omitempty"` // homed on other hosts: not swept here
}

type skipJSON struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

type failedJSON struct {
	Agent string `json:"agent"`
	Error string `json:"error"`
}

func (c *archiveCmd) print(a *app, rep *archive.Report) {
	for _, sk := range rep.Skipped {
		a.warn(sk)
	}
	if c.JSON {
		out := sweepJSON{Time: rep.Time.UTC(), DryRun: rep.DryRun, Mailboxes: rep.Mailboxes,
			Archived: append([]archive.Moved{}, rep.Moved...), KeptUnread: rep.Kept,
			Skipped: []skipJSON{}, Failed: []failedJSON{}}
		for _, s := range rep.Skipped {
			out.Skipped = append(out.Skipped, skipJSON{s.Path, s.Err.Error()})
		}
		for _, f := range rep.Failed {
			out.Failed = append(out.Failed, failedJSON{f.Box.String(), f.Err.Error()})
		}
		for _, e := range rep.Elsewhere {
			out.Elsewhere = append(out.Elsewhere, e.Qualified())
		}
		printValue(a.out, out)
		return
	}
	verb := "archived"
	if rep.DryRun {
		verb = "would archive"
	}
	elsewhere := ""
	if n := len(rep.Elsewhere); n > 0 {
		elsewhere = fmt.Sprintf(", %d homed on other hosts left to them", n)
	}
	fmt.Fprintf(a.out, "%s swept %d mailboxes: %s %d, kept %d unread, skipped %d, failed %d%s\n",
		rep.Time.UTC().Format(time.RFC3339), rep.Mailboxes, verb, len(rep.Moved), rep.Kept, len(rep.Skipped), len(rep.Failed), elsewhere)
}

type restoreCmd struct {
	Args []string `arg:"" name:"agent-and-ids" help:"[AGENT] ID…: the mailbox (default $MAILFS_AGENT's, else the one that holds the id) and the archived messages."`
}

func (c *restoreCmd) Help() string {
	return `Moves archived messages back into the mailbox, by a rename that never
replaces a file. A message already in the mailbox is not an error.`
}

func (c *restoreCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	ts, err := a.targets(s, c.Args)
	if err != nil {
		return err
	}
	// An id restore cannot find is looked for in the archive: say how to
	// list those, not the mailbox's ids.
	restore := func(box maildir.Address, ids []string) ([]error, error) {
		errs, err := s.Restore(box, ids)
		for i, e := range errs {
			if errors.Is(e, maildir.ErrNotFound) {
				errs[i] = withHint(e, fmt.Sprintf("%q lists the archived ids", "mailfs inbox "+box.String()+" --archived"))
			}
		}
		return errs, err
	}
	return eachMoved(a, restore, ts)
}

// eachMoved runs an Archive or Restore for the targets, one call per
// mailbox, and reports each failed id.
func eachMoved(a *app, move func(maildir.Address, []string) ([]error, error), ts []target) error {
	var done []string
	failed := 0
	for len(ts) > 0 {
		box := ts[0].box
		var ids []string
		rest := ts[:0:0]
		for _, t := range ts {
			if t.box == box {
				ids = append(ids, t.id)
			} else {
				rest = append(rest, t)
			}
		}
		e, err := move(box, ids)
		if err != nil {
			if len(done) == 0 {
				return err
			}
			a.exit(err)
			failed += len(ids) + len(rest)
			break
		}
		for i, err := range e {
			if err == nil {
				done = append(done, ids[i])
				continue
			}
			if failed++; len(e) == 1 && len(rest) == 0 && len(done) == 0 {
				return err
			}
			a.exit(err)
		}
		ts = rest
	}
	return partialFailure(done, failed)
}
