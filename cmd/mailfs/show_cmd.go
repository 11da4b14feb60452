package main

import (
	"fmt"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

type showCmd struct {
	Args  []string `arg:"" name:"agent-and-id" help:"[AGENT] ID: the mailbox (or queue:name, channel:name; default $MAILFS_AGENT's, else the one that holds the id) and the message (its id, file name, or a unique prefix)."`
	Field string   `placeholder:"KEY" help:"Print only the value of the body's first \"KEY: value\" line (any case, anywhere in the body), for scripts routing protocol mail; exit 1 if there is none."`
	jsonFlag
}

func (c *showCmd) Help() string {
	return `Finds the message in the mailbox or its archive. Control characters in it
are shown as U+FFFD so a message cannot drive the terminal; --json prints it
exactly.`
}

func (c *showCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	t, err := c.target(a, s)
	if err != nil {
		return err
	}
	m, err := s.Get(t.box, t.id)
	if err != nil {
		return err
	}
	if c.Field != "" {
		return printField(a, m, c.Field)
	}
	return printOne(a, m, c.JSON)
}

// printField prints one protocol field of m's body.
func printField(a *app, m *maildir.Message, key string) error {
	v, ok := m.Field(key)
	if !ok {
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("%s has no %q field (a \"Key: value\" line of its body)", m.ID, key)}
	}
	_, err := fmt.Fprintln(a.out, v)
	return err
}

type readCmd struct {
	showCmd
	Full bool `help:"Print every key of the message, as show does, not only what an agent acts on."`
}

func (c *readCmd) Help() string {
	return `Like show, then marks the message read (rewriting only its "read" key).
It prints what an agent acts on: the id, sender, priority (when not
normal), copies, subject and body; --full prints every key, as show does;
--json is unchanged.`
}

func (c *readCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	t, err := c.target(a, s)
	if err != nil {
		return err
	}
	m, err := s.MarkRead(t.box, t.id)
	if err != nil {
		return err
	}
	mailSeen(a, nudgeq.MailRead, t.box, m)
	if c.Field != "" {
		return printField(a, m, c.Field)
	}
	if !c.JSON && !c.Full {
		return printBrief(a.out, m)
	}
	return printOne(a, m, c.JSON)
}

func printOne(a *app, m *maildir.Message, asJSON bool) error {
	if asJSON {
		return printJSON(a.out, []*maildir.Message{m})
	}
	return printMessage(a.out, m)
}

// target resolves the one message show and read take.
func (c *showCmd) target(a *app, s *maildir.Store) (target, error) {
	if len(c.Args) > 2 {
		return target{}, usage("give [AGENT] ID", "one message at a time: %d arguments", len(c.Args))
	}
	ts, err := a.targets(s, c.Args)
	if err != nil {
		return target{}, err
	}
	if len(ts) != 1 {
		return target{}, usage("give [AGENT] ID", "one message at a time")
	}
	return ts[0], nil
}
