package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/mailfs/mailfs/fsck"
)

type fsckCmd struct {
	Repair bool `help:"Fix what is safe to fix (see below); report the rest."`
	JSON   bool `help:"Print each finding as a JSON line."`
}

func (c *fsckCmd) Help() string {
	return `Checks the whole root (mailboxes, archives, queues, channels, groups, nudge
queues) and prints one line per finding:

  temp          a dot-temp older than an hour          repair: removes it
  swap          a file set aside by a rewrite that     repair: puts it back, or
                did not finish (.mailfs-swap.*)          quarantines it if its
                                                         name is taken again
  orphan-claim  a nudge claimed over 5 minutes ago     repair: returns it to
                by a drainer that did not finish         the queue
  invalid       not a valid message (corrupt, too      repair: moves it to the
                large, duplicate keys, invalid UTF-8,    folder's quarantine/,
                not one object, not *.json), older       never replacing, with
                than a minute                            <name>.reason beside it
  not-regular   a symbolic link, FIFO, socket, device  reported only
                or stray directory
  duplicate     the same id in a mailbox and its       repair: removes the
                archive                                  mailbox name if both are
                                                         one file (an interrupted
                                                         move); else reported
  misdirected   a "to" that does not match the folder  reported only
  permissions   a file wider than 0600, a directory    repair: tightens it
                wider than 0700

The exit status is 0 when the tree is clean (after repair), 1 otherwise.`
}

func (c *fsckCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	found, err := fsck.Check(s.Dir(), fsck.Options{Repair: c.Repair})
	if errors.Is(err, fs.ErrNotExist) {
		// A mistyped --root must not pass as a clean town.
		return withHint(fmt.Errorf("no mailfs root at %s", s.Dir()), `check --root and $MAILFS_ROOT; "mailfs init" creates a root`)
	}
	if err != nil {
		return err
	}
	left := 0
	for _, f := range found {
		if !f.Repaired {
			left++
		}
		if c.JSON {
			err = printValue(a.out, f)
		} else {
			_, err = fmt.Fprintln(a.out, oneLine(f.String()))
		}
		if err != nil {
			return err
		}
	}
	if left > 0 {
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("fsck: %d findings, %d repaired, %d left", len(found), len(found)-left, left)}
	}
	return nil
}
