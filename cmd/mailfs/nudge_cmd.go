package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// errNudgeAway is the nudge command's refusal of a nudge to an agent homed
// on another host.
var errNudgeAway = errors.New("nudge refused")

// homedElsewhere returns the host agent is homed on when that is a host
// other than this one, else "": a nudge queued here would never reach it.
// An agent with no home record is this host's as far as a nudge goes.
func homedElsewhere(s *maildir.Store, agent maildir.Address) (string, error) {
	home, err := s.HomeOf(agent)
	if err != nil || home.Host == "" {
		return "", err
	}
	host, err := s.LocalHost()
	if err != nil || host == home.Host {
		return "", err
	}
	return home.Host, nil
}

type nudgeCmd struct {
	Agent    string        `arg:"" help:"The agent to nudge."`
	Message  string        `arg:"" help:"The text; \"-\" reads it from standard input."`
	From     string        `env:"MAILFS_AGENT" placeholder:"AGENT" help:"The sender."`
	Priority priorityFlag  `default:"normal" enum:"normal,urgent" help:"normal or urgent (any case): urgent nudges are shown first, flagged, and live longer."`
	TTL      time.Duration `placeholder:"D" help:"How long the nudge lives unseen (default 30m, or 2h when urgent)."`
}

func (c *nudgeCmd) Help() string {
	return `A nudge is a short, ephemeral poke that the agent sees at its next turn,
through "mailfs check AGENT --inject" in its prompt hook, and then never
again. It is not mail: it is not committed, and it is dropped unseen once
its time-to-live runs out. A queue holds 50 nudges; when it is full the
nudge is refused with an error, and the agent is told at its next check
that nudges were refused.

Nudges live in runtime/, which sync never carries: a nudge to an agent
homed on another host (see "mailfs home") is refused with an error naming
that host, never queued here where it would not arrive. Send mail instead
(mailfs send AGENT --nudge), which sync carries, or nudge on its host.`
}

func (c *nudgeCmd) Run(a *app) error {
	if c.From == "" {
		return usage("pass --from AGENT, or set MAILFS_AGENT", "no sender given")
	}
	msg := c.Message
	if msg == "-" {
		// Read a little past the limit to tell its true size, and no more
		// than that: a nudge is short, a runaway pipe is not read whole.
		b, err := io.ReadAll(io.LimitReader(a.in, 64<<10))
		if err != nil {
			return err
		}
		if n, _ := io.Copy(io.Discard, io.LimitReader(a.in, 1)); n > 0 {
			return fmt.Errorf("%w: standard input is over 64 KiB, the limit is %d bytes: a nudge is a short poke; send longer text as mail (mailfs send --nudge)", nudgeq.ErrInvalid, nudgeq.MaxMessage)
		}
		msg = strings.TrimSuffix(string(b), "\n")
	}
	if c.TTL < 0 {
		return fmt.Errorf("--ttl must be positive, not %v", c.TTL)
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	if to, err := maildir.ParseMailbox(c.Agent); err == nil {
		home, err := homedElsewhere(a.store, to)
		if err != nil {
			return err
		}
		if home != "" {
			return withHint(fmt.Errorf("%w: %s is homed on host %s, and a nudge stays on the host that queues it (runtime/ is never synced): it would never reach %s", errNudgeAway, to.Name, home, to.Name),
				fmt.Sprintf("send mail instead, which sync carries (mailfs send %s --nudge ...), or nudge on %s", to.Name, home))
		}
		// A nudge to a name the town has no mailbox for is queued (an
		// agent may be nudged before its first mail), but a typo would
		// wait unseen: say so, as send does, naming close matches.
		if to.Kind == maildir.KindAgent && !a.store.Exists(to) {
			agents, _ := a.store.Agents()
			hint := ""
			if similar := maildir.Similar(to.Name, agents); len(similar) > 0 {
				hint = "; did you mean " + strings.Join(similar, " or ") + "?"
			}
			a.warn(fmt.Errorf("no agent has the mailbox %s: the nudge waits until an agent %s checks%s", to.Name, to.Name, hint))
		}
	}
	_, err = q.Enqueue(c.Agent, nudgeq.Nudge{Sender: c.From, Message: msg, Priority: nudgeq.Priority(c.Priority)}, c.TTL)
	return err
}

type drainCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose queue."`
	JSON  bool   `help:"Print each nudge as a JSON line."`
}

func (c *drainCmd) Help() string {
	return `Claims the agent's queued nudges, prints them oldest first, then removes
them: each nudge is printed by exactly one drainer. Expired nudges, and
nudges about mail that is already read, are dropped unprinted. A drainer
that dies before removing what it claimed causes a redelivery five minutes
later, never a loss. Exit status 1, with nothing printed, when no nudge
waits (as take and peek); 2 when the queue cannot be drained.`
}

func (c *drainCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	b, err := q.Claim(agent)
	if err != nil {
		return err
	}
	err = printNudges(a.out, b, c.JSON)
	if err == nil {
		err = a.flush()
	}
	if err != nil {
		// Unprinted: back in the queue now, not after the orphan timeout.
		if rerr := b.Release(); rerr != nil {
			a.exit(rerr)
		}
		b.Close()
		return err
	}
	if err := b.Commit(); err != nil {
		return err
	}
	if len(b.Nudges) == 0 && b.Refused == nil {
		return &exitStatus{code: exitNothing}
	}
	return nil
}

type nudgeJSON struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent"`
	Sender    string    `json:"sender"`
	Message   string    `json:"message"`
	Priority  string    `json:"priority"`
	Timestamp time.Time `json:"timestamp"`
	ExpiresAt time.Time `json:"expires_at"`
	MailID    string    `json:"mail_id,omitempty"`
}

type refusedJSON struct {
	Refused int       `json:"refused"`
	Sender  string    `json:"latest_sender"`
	At      time.Time `json:"latest_at"`
}

func printNudges(w io.Writer, b *nudgeq.Batch, asJSON bool) error {
	for _, n := range b.Nudges {
		var err error
		if asJSON {
			err = printValue(w, nudgeJSON{n.ID, b.Agent, n.Sender, n.Message, string(n.Priority), n.Timestamp.UTC(), n.ExpiresAt.UTC(), n.MailID})
		} else {
			flag := ""
			if n.Priority == nudgeq.Urgent {
				flag = "[URGENT] "
			}
			_, err = fmt.Fprintf(w, "%s[from %s] %s\n", flag, n.Sender, oneLine(n.Message))
		}
		if err != nil {
			return err
		}
	}
	if r := b.Refused; r != nil {
		if asJSON {
			return printValue(w, refusedJSON{r.Count, r.Sender, r.At.UTC()})
		}
		_, err := fmt.Fprintf(w, "%d nudges were refused while the queue was full; latest from %s at %s\n",
			r.Count, r.Sender, r.At.UTC().Format(time.RFC3339))
		return err
	}
	return nil
}
