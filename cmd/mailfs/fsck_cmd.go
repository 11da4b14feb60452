package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/mailfs/mailfs/fsck"
)

type fsckCmd struct {
	Repair bool `help:"Fix what is safe to fix (the repair column above); report the rest."`
	JSON   bool `help:"Print each finding as a JSON line."`
}

func (c *fsckCmd) Help() string {
	return `Checks the whole root (mailboxes, archives, queues, channels, groups, nudge
queues, and the side files: the format record, keyed sends' records,
caches, the audit log, tombstones) and prints one line per finding:

  temp          a dot-temp older than an hour          repair: removes it
  swap          a file set aside by a rewrite that     repair: a second name of
                did not finish (.mailfs-swap.*)          the message is removed;
                                                         an older copy is
                                                         quarantined, never put
                                                         back
  orphan-claim  a nudge claimed over 5 minutes ago     repair: returns it to
                by a drainer that did not finish         the queue
                (a Gas Town claim: by its rename time)
  invalid       not a valid message (corrupt, too      repair: moves it to the
                large, duplicate keys, invalid UTF-8,    folder's quarantine/,
                not one object, not *.json, a name       never replacing, with
                no command could give, such as one       <name>.reason beside it
                with a newline), older than a minute;
                a nudge or group file that does not
                parse; a keyed send's record             (a keyed send's record:
                (runtime/once) that does not read        reported only; its key's
                                                         retry is refused until a
                                                         person removes it)
  not-regular   a symbolic link, FIFO, socket, device  reported only
                or stray directory (a nudge queue
                that links to Gas Town's is checked
                where it leads)
  duplicate     the same id in a mailbox and its       repair: removes the
                archive                                  mailbox name if both are
                                                         one file (an interrupted
                                                         move); else reported
  misdirected   a "to" that does not match the folder  reported only
  permissions   a file wider than 0600, a directory    repair: tightens it
                wider than 0700
  unfinished    a queue item still carrying a claim    repair: drops the claim
                record or read: a claim or release       record, read false,
                was cut short                            under the claimants' lock
  dangling      a group naming a group that does not   reported only
                exist: every send to it fails
  neglected     a mailbox with unread mail older than  reported only: the agent's
                the sweep's cut-off (24h)                work, which the sweep keeps
  stranded      a queue item no claim can take: it     reported only: split it
                fits 1 MiB, but not with the claim
                record a claim writes into it
  format        the root's format record is damaged    repair: rewrites it as
                (empty, garbled, not a file): every      format 1 when every
                write is refused until it is fixed       message reads as format
                                                         1; else says what a
                                                         person must decide
                the root is in a newer format          nothing is repaired: the
                                                         whole tree is checked
                                                         and reported only

Every repair looks again, under the locks the commands take, at what the
scan saw, and acts only if it is still so: fsck --repair may run beside
live agents (from cron, say). A finding whose file moved or changed since
the scan says "changed since the scan; not repaired" and is looked at
again by the next run. A duplicate's name is removed only while it is a
second name of one file, never the last.

Lines are "KIND PATH: what", and with --repair "(what was done)"; --json
gives each finding as an object. The exit status is 0 when the tree is
clean (after repair), 1 when findings are left (a root in a newer format
always leaves its format finding: an old host's cron "fsck --repair"
changes nothing there and exits 1), 2 when the tree cannot be
checked (no root at --root), 130 when interrupted (^C, SIGTERM): the
findings of the folders checked so far are printed, and the count of
folders is on stderr.`
}

func (c *fsckCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	opt := fsck.Options{Repair: c.Repair}
	if f, ok := a.err.(*os.File); ok && isTerminal(f) {
		// A big tree takes a while: say where the check is, on one line.
		var last time.Time
		opt.Progress = func(n int, path string) {
			if now := time.Now(); now.Sub(last) >= 250*time.Millisecond {
				last = now
				fmt.Fprintf(a.err, "\rmailfs: fsck: %d folders checked, at %s\x1b[K", n, path)
			}
		}
		defer fmt.Fprint(a.err, "\r\x1b[K")
	}
	found, err := fsck.Check(a.ctx, s.Dir(), opt)
	var stopped *fsck.Stopped
	if errors.As(err, &stopped) {
		// Interrupted: what was found (and repaired) so far, then how far
		// it got. Every repair made is whole; none was begun after ^C.
		if perr := c.print(a, found); perr != nil {
			return perr
		}
		return &exitStatus{code: exitInterrupted, msg: fmt.Sprintf("error: fsck interrupted after checking %d folders: the findings above are theirs, each repair made is whole; run it again to check everything", stopped.Folders)}
	}
	if errors.Is(err, fs.ErrNotExist) {
		// A mistyped --root must not pass as a clean town.
		return withHint(fmt.Errorf("no mailfs root at %s", s.Dir()), `check --root and $MAILFS_ROOT; "mailfs init" creates a root`)
	}
	if err != nil {
		return err
	}
	if err := c.print(a, found); err != nil {
		return err
	}
	left := 0
	for _, f := range found {
		if !f.Repaired {
			left++
		}
	}
	if left > 0 {
		noun := "findings"
		if len(found) == 1 {
			noun = "finding"
		}
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("fsck: %d %s, %d repaired, %d left", len(found), noun, len(found)-left, left)}
	}
	return nil
}

// print writes the findings, one a line (or a JSON object).
func (c *fsckCmd) print(a *app, found []*fsck.Finding) error {
	for _, f := range found {
		var err error
		if c.JSON {
			err = printValue(a.out, f)
		} else {
			_, err = fmt.Fprintln(a.out, oneLine(userText(errors.New(f.String())))) // as errors read: no "maildir: "
		}
		if err != nil {
			return err
		}
	}
	return nil
}
