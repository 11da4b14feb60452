package main

import "github.com/mailfs/mailfs/maildir"

// idsArgs are the arguments of the commands that act on several messages.
type idsArgs struct {
	Args []string `arg:"" name:"agent-and-ids" help:"[AGENT] ID…: the mailbox (or queue:name, channel:name) and the messages (ids, file names, or unique prefixes). The mailbox may be left out: $MAILFS_AGENT's, else the one that holds the id."`
}

// each calls f for every target, reports each failure, and fails at the
// end if any did: one bad id does not stop the others.
func (c *idsArgs) each(a *app, f func(s *maildir.Store, agent maildir.Address, id string) error) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	ts, err := a.targets(s, c.Args)
	if err != nil {
		return err
	}
	failed := 0
	for _, t := range ts {
		if err := f(s, t.box, t.id); err != nil {
			if failed++; len(ts) == 1 {
				return err
			}
			a.exit(err)
		}
	}
	if failed > 0 {
		return &exitStatus{code: exitError}
	}
	return nil
}

type markReadCmd struct {
	idsArgs
}

func (c *markReadCmd) Help() string {
	return `Rewrites only the "read" key of each message, atomically; a message that
is already read is not touched. Messages in the archive can be marked too.`
}

func (c *markReadCmd) Run(a *app) error {
	return c.each(a, func(s *maildir.Store, agent maildir.Address, id string) error {
		_, err := s.MarkRead(agent, id)
		return err
	})
}

type markUnreadCmd struct {
	idsArgs
}

func (c *markUnreadCmd) Run(a *app) error {
	return c.each(a, func(s *maildir.Store, agent maildir.Address, id string) error {
		_, err := s.MarkUnread(agent, id)
		return err
	})
}

type deleteCmd struct {
	idsArgs
}

func (c *deleteCmd) Help() string {
	return `Removes each message from the mailbox, or from its archive, for good.`
}

func (c *deleteCmd) Run(a *app) error {
	return c.each(a, func(s *maildir.Store, agent maildir.Address, id string) error { return s.Delete(agent, id) })
}
