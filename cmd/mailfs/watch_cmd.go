package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

type watchCmd struct {
	Agents    []string      `arg:"" optional:"" name:"agent" help:"The mailboxes to watch (they need not exist yet)."`
	AllAgents bool          `name:"all-agents" help:"Watch every mailbox, those created later included."`
	JSON      bool          `help:"Print each message as a JSON line: id, agent, path, then its keys."`
	Exec      string        `placeholder:"CMD" help:"Run CMD (with sh -c) for each message instead of printing it: the file on stdin, MAILFS_ID, MAILFS_AGENT and MAILFS_PATH set."`
	Poll      time.Duration `placeholder:"D" help:"Scan every D instead of using inotify/kqueue: for NFS, FUSE and container mounts (1s is a good interval)."`
	Grace     time.Duration `default:"2s" placeholder:"D" help:"How long a file may stay unparseable (a script still writing it) before a warning."`
}

func (c *watchCmd) Help() string {
	return `Prints each unread message already in the mailboxes, then each message
that arrives, once, as soon as its file is complete. A file that does not
parse within --grace is reported on stderr and skipped until it changes.
Runs until interrupted (SIGINT or SIGTERM: exit status 0).

--exec runs the command once per message, in order, and waits for it; a
command that fails is reported and the watch goes on.`
}

func (c *watchCmd) Run(a *app) error {
	if len(c.Agents) == 0 && !c.AllAgents {
		return usage("name the agents, or pass --all-agents", "no mailbox to watch")
	}
	w, err := c.watcher(a)
	if err != nil {
		return err
	}
	ch, err := w.Watch(a.ctx)
	if err != nil {
		return err
	}
	for ev := range ch {
		var err error
		switch {
		case c.Exec != "":
			c.run(a, ev)
		case c.JSON:
			err = printJSON(a.out, []*maildir.Message{ev.Message})
		default:
			_, err = fmt.Fprintf(a.out, "%s %s from %s: %s\n", ev.Box, ev.ID, oneLine(ev.Message.From), oneLine(ev.Message.Subject))
		}
		if err != nil {
			return err
		}
	}
	return nil // interrupted: a clean stop
}

func (c *watchCmd) watcher(a *app) (*watch.Watcher, error) {
	if c.Poll < 0 || c.Grace <= 0 {
		return nil, usage("write durations such as 30s or 10m", "--poll must not be negative and --grace must be positive")
	}
	s, err := a.read()
	if err != nil {
		return nil, err
	}
	boxes := make([]maildir.Address, len(c.Agents))
	for i, arg := range c.Agents {
		if boxes[i], err = mailbox(arg); err != nil {
			return nil, err
		}
	}
	return &watch.Watcher{Store: s, Boxes: boxes, All: c.AllAgents, Poll: c.Poll, Grace: c.Grace, Warn: a.warn}, nil
}

// run runs --exec for one message.
func (c *watchCmd) run(a *app, ev watch.Event) {
	path := filepath.Join(a.store.Dir(), filepath.FromSlash(ev.Path))
	// The file's bytes, read again through the root's confined walk: a
	// message swapped for a symlink since the event is refused, not
	// followed out of the root.
	data, err := a.store.ReadFile(ev.Box, ev.ID)
	if err != nil {
		a.warn(fmt.Errorf("--exec for %s: %w", ev.ID, err))
		return
	}
	cmd := exec.Command("sh", "-c", c.Exec)
	cmd.Stdin = bytes.NewReader(data)
	cmd.Stdout, cmd.Stderr = a.out, a.err
	cmd.Env = append(os.Environ(), "MAILFS_ID="+ev.ID, "MAILFS_AGENT="+ev.Box.String(), "MAILFS_PATH="+path)
	if err := cmd.Run(); err != nil {
		a.warn(fmt.Errorf("--exec for %s: %w", ev.ID, err))
	}
}

type waitCmd struct {
	Agent   string         `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mailbox."`
	Timeout *time.Duration `placeholder:"D" help:"Give up D after the first look (exit status 124), with one last look then; 0 looks once and does not wait. Default: wait forever."`
	Poll    time.Duration  `placeholder:"D" help:"Scan every D instead of using inotify/kqueue (see watch)."`
	jsonFlag
}

func (c *waitCmd) Help() string {
	return `Returns at once, printing the agent's unread messages as inbox does, if it
has any; otherwise blocks until some arrive. Exit status 0 when mail is
there, 124 on timeout, 130 when interrupted (^C, SIGTERM), 2 on error,
so a shell loop can be written:

  while mailfs wait me --timeout 10m; do ...; done`
}

func (c *waitCmd) Run(a *app) error {
	agent, err := mailbox(c.Agent)
	if err != nil {
		return err
	}
	if c.Timeout != nil && *c.Timeout < 0 || c.Poll < 0 {
		return usage("write durations such as 30s or 10m", "--timeout and --poll must not be negative")
	}
	s, err := a.read()
	if err != nil {
		return err
	}
	// The first look, before any deadline runs: mail already there is
	// printed at once, however short the timeout (--timeout counts from
	// after this look, never from before it).
	n, err := s.Count(agent)
	if err != nil {
		return err
	}
	if n.Unread > 0 {
		return (&inboxCmd{Agent: agent.String(), By: "time", jsonFlag: c.jsonFlag}).Run(a)
	}
	var deadline <-chan time.Time
	timeout := time.Duration(0)
	if c.Timeout != nil {
		timeout = *c.Timeout
		if timeout == 0 { // look once
			return &exitStatus{code: exitTimeout, msg: fmt.Sprintf("timeout: no unread mail for %s", agent)}
		}
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	ctx, cancel := context.WithCancel(a.ctx)
	defer cancel()
	w := &watch.Watcher{Store: s, Boxes: []maildir.Address{agent}, Poll: c.Poll, Warn: a.warn}
	ch, err := w.Watch(ctx)
	if err != nil {
		return err
	}
	var first watch.Event
	ok := false
	select {
	case first, ok = <-ch:
	case <-deadline:
		// One last look, so that mail that came while the watcher set up
		// is not missed.
		cancel()
		n, err := s.Count(agent)
		if err != nil {
			return err
		}
		if n.Unread > 0 {
			return (&inboxCmd{Agent: agent.String(), By: "time", jsonFlag: c.jsonFlag}).Run(a)
		}
	}
	if !ok {
		if err := a.ctx.Err(); err != nil {
			// Interrupted (^C, SIGTERM) with no mail: exit 130, never 0,
			// which a "while mailfs wait" loop reads as mail there.
			return err
		}
		return &exitStatus{code: exitTimeout, msg: fmt.Sprintf("timeout: no unread mail for %s within %v", agent, timeout)}
	}
	// What the watcher found: every unread message at start (its first
	// scan), or what arrived. They are printed as inbox prints them,
	// without listing the mailbox again: a mailbox of 10,000 read
	// messages must not slow the wake-up.
	msgs := []*maildir.Message{first.Message}
	quiet := time.NewTimer(waitQuiet)
	defer quiet.Stop()
collect:
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				break collect
			}
			msgs = append(msgs, ev.Message)
			quiet.Reset(waitQuiet)
		case <-quiet.C:
			break collect
		}
	}
	if c.JSON {
		return printJSON(a.out, msgs)
	}
	return table(a.out, []string{"ID", "FROM", "PRIORITY", "SUBJECT"}, messageRows(msgs, func(m *maildir.Message) []string {
		return []string{m.ID, m.From, string(m.Priority), m.Subject}
	}))
}

// waitQuiet is how long wait keeps taking messages after the first: the
// rest of the watcher's first scan, or of a burst, comes within it.
const waitQuiet = 5 * time.Millisecond
