package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/mailfs/mailfs/maildir"
)

// A target is one message a command acts on: its mailbox and its id.
type target struct {
	box maildir.Address
	id  string
}

// targets turns "[AGENT] ID…" into targets. The first of several arguments
// is the mailbox when a mailbox (or queue, or channel) of that name exists;
// otherwise every argument is an id, found in $MAILFS_AGENT's mailbox if it
// is there, else anywhere, as long as it is unique (an id in several
// mailboxes is an error that lists them).
func (a *app) targets(s *maildir.Store, args []string) ([]target, error) {
	if len(args) == 0 {
		return nil, usage("give a message id, or an agent and ids", "no message id given")
	}
	if len(args) >= 2 {
		if b, err := maildir.ParseMailbox(args[0]); err == nil && s.Exists(b) {
			out := make([]target, len(args)-1)
			for i, id := range args[1:] {
				out[i] = target{b, id}
			}
			return out, nil
		}
	}
	var me *maildir.Address
	if env := os.Getenv("MAILFS_AGENT"); env != "" {
		if b, err := maildir.ParseMailbox(env); err == nil {
			me = &b
		}
	}
	out := make([]target, 0, len(args))
	for i, id := range args {
		if me != nil {
			if _, err := s.Get(*me, id); err == nil || errors.Is(err, maildir.ErrAmbiguous) {
				out = append(out, target{*me, id})
				continue
			}
		}
		m, err := s.Find(id)
		if i == 0 && errors.Is(err, maildir.ErrNotFound) {
			if b, perr := maildir.ParseMailbox(id); perr == nil {
				switch {
				case len(args) == 1 && s.Exists(b):
					// "delete toast": the mailbox alone, no id.
					return nil, usage(fmt.Sprintf(`name the message too: %s ID (%q lists the ids)`, b, "mailfs inbox "+b.String()+" --all"), "no message id given: %s is a mailbox", b)
				case len(args) >= 2:
					// "read tost ID": a name that is neither a mailbox
					// nor an id was most likely meant as the mailbox.
					return nil, withHint(fmt.Errorf("%w: no mailbox %q (nor a message with that id)", maildir.ErrNotFound, id), `"mailfs agents" lists the mailboxes`)
				}
			}
		}
		if err != nil {
			return nil, err
		}
		out = append(out, target{m.Box, m.ID})
	}
	return out, nil
}
