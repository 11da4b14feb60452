package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/watch"
)

// priorityFlag is --priority: one of maildir's priorities, in any case, as
// agent names are ("URGENT" is "urgent"); kong's enum check sees the folded
// value.
type priorityFlag string

func (p *priorityFlag) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("priority", &s); err != nil {
		return err
	}
	*p = priorityFlag(strings.ToLower(s))
	return nil
}

// maxSubject bounds a subject given to send: a subject is one line that a
// list shows whole.
const maxSubject = 1000

// checkSubject refuses, as a usage error (exit 80), a subject given on the
// command line that is empty, of several lines, or over maxSubject: send,
// reply -s and escalate share it.
func checkSubject(subject string) error {
	switch {
	case strings.TrimSpace(subject) == "":
		return usage("a subject is one line that says what the message is: -s 'MERGE_READY nux'", "the subject is empty")
	case strings.ContainsAny(subject, "\r\n"):
		return usage("a subject is one line: put the rest in the body (-m)", "the subject must be one line")
	case len(subject) > maxSubject:
		return usage("a subject is one line: put the rest in the body (-m)", "the subject is %d bytes; at most %d", len(subject), maxSubject)
	}
	return nil
}

type sendCmd struct {
	To      []string `arg:"" name:"to" help:"Recipients: agents (toast, gastown/witness, agent:toast), groups (@name), work queues (queue:name), channels (channel:name)."`
	Subject string   `short:"s" required:"" placeholder:"TEXT" help:"One-line subject, not empty, at most 1000 bytes. Protocol messages put their type first (MERGE_READY nux)."`
	bodyFlags
	From     string         `env:"MAILFS_AGENT" placeholder:"AGENT" help:"The sender."`
	Type     string         `default:"message" help:"A one-word type: work_assignment, completion_report, merge_notification, health_escalation, coordination, reply, handoff, …"`
	Priority priorityFlag   `default:"normal" enum:"urgent,high,normal,low" help:"urgent, high, normal or low (any case)."`
	CC       []string       `sep:"," placeholder:"A,B" help:"Also deliver a copy to each of these agents."`
	Thread   string         `placeholder:"ID" help:"Continue this thread (default: start a new one)."`
	ReplyTo  string         `name:"reply-to" placeholder:"ID" help:"The id of the message this answers."`
	Field    []string       `sep:"none" placeholder:"KEY=VALUE" help:"Put a \"Key: value\" line at the top of the body (repeatable), as protocol messages do. The value is the rest of the argument, commas and all."`
	Nudge    bool           `help:"Also nudge each recipient about the message; the nudge is dropped unseen once the message is read, archived or deleted."`
	JSON     bool           `help:"Print each delivered copy as a JSON line instead of its id."`
	WaitFor  string         `name:"wait-for" enum:",read,delivered,submitted" default:"" placeholder:"read|delivered|submitted" help:"After sending, block until every copy has been read, or until a live session's model answered its doorbell (delivered), or took it in (submitted); receipts as JSON lines with --json."`
	Timeout  *time.Duration `placeholder:"D" help:"With --wait-for, give up after D: exit status 124; 0 looks once and does not wait. Default: wait until done."`
	Key      *string        `name:"idempotency-key" placeholder:"KEY" help:"Deliver once: another send of the same message with this key within 30 days delivers nothing, exits 0 and prints the first send's ids (also after a crash or a power cut between the two); the key used for a different message exits 3 and sends nothing. Keys are per root, at most 128 bytes."`
	sendKeys
}

func (c *sendCmd) Help() string {
	return `Writes one file per recipient into <root>/state/mail/<agent>/ and prints
the id of each copy, one per line, once every copy is on stable storage.
Recipients after the first are delivered like --cc: every copy names the
first recipient in "to" and the others in "cc", and all share one thread.
Every address is checked, and groups expanded, before anything is written.

A group (@name) gets one copy per member, the sender left out; @all is every
mailbox. A work queue (queue:name) gets one item that "mailfs claim" hands
to one agent. A channel (channel:name) gets one post, after which its
retention applies. A bare name that is both an agent and a group, queue or
channel is refused: write agent:name, @name, queue:name or channel:name.

--field Key=Value builds a protocol body: "Key: value" lines, a blank line,
then the text of -m (which becomes optional). Keys may contain spaces
("Cleanup Status=has_stash"), values anything on one line, commas included.

With --wait-for read, send then blocks until every copy in an agent's
mailbox has been read (or deleted), watching the mailboxes rather than
polling; --timeout bounds the wait (exit status 124), and --json adds one
receipt line per copy: agent, id, read_at.

With --wait-for delivered, send blocks until the doorbell of each copy
(see "mailfs live") has a final answer, and prints one receipt line per
copy: agent, id, and one of
  delivered  the runtime's own record shows the model answered a turn whose
             input held the doorbell (with when, which session)
  submitted  the session took the doorbell in (its prompt hook saw it, the
             runtime queued it or wrote it as the turn's input) and the
             model has not answered it: final once given up on or once the
             session ended; the strongest answer where the runtime keeps
             no record of the model's output (docs/agents.md, per runtime)
  read       the copy was read before its doorbell was delivered
  rung       written into the session, not yet taken in; final once the
             deliverer gave up after its re-rings, or the session ended
  held       the deliverer holds it: dnd, batched, spacing, retrying, the
             session holds messages from other processes for review, or
             its deliverer died; final when no doorbell will name it (it
             was in the mailbox when the session's deliverer began)
  refused    the session refuses messages from other processes: final once
             the session ended (the setting is looked at again until then)
  none       no session of the agent runs: the hooks or its next poll show it
A final answer never turns non-final; later looks only advance it.
--wait-for submitted waits the same way until every copy is submitted,
delivered or read (or final).
Exit status 0 when every copy is delivered or read (with --wait-for
submitted: or submitted); 1 when a copy's answer is final and not that
(submitted or rung given up, refused, held for good, none); 124 when
--timeout ends the wait first (0 looks once). The mail is in the mailboxes
in every case: a receipt is about the doorbell, not the mail.

With --nudge, each recipient also gets a nudge announcing the message. A
nudge that cannot be queued (the recipient's queue is full) is reported as a
warning; the exit status stays 0, because the mail was delivered.`
}

func (c *sendCmd) Run(a *app) error {
	if c.Timeout != nil && c.WaitFor == "" {
		return usage("--timeout bounds --wait-for: give both, or neither", "--timeout without --wait-for")
	}
	if c.Timeout != nil && *c.Timeout < 0 {
		return usage("write a duration such as 30s or 10m; 0 looks once", "--timeout must not be negative")
	}
	if c.From == "" {
		return usage("pass --from AGENT, or set MAILFS_AGENT", "no sender given")
	}
	if err := checkSubject(c.Subject); err != nil {
		return err
	}
	if c.Key != nil {
		if err := maildir.CheckKey(*c.Key); err != nil {
			return usage("a key is what makes a retried send the same send: an id of the task, say", "--idempotency-key: %v", err)
		}
	}
	if err := c.sendKeys.check(c.Key != nil); err != nil {
		return err
	}
	body, err := c.body(a.ctx, a.in, len(c.Field) > 0)
	if err != nil {
		return err
	}
	if body, err = protocolBody(c.Field, body); err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	before, _ := s.Agents()
	msg := &maildir.Message{
		From: c.From, To: c.To[0], CC: append(c.To[1:], c.CC...),
		Subject: c.Subject, Body: body, Type: c.Type, Priority: maildir.Priority(c.Priority),
		Thread: c.Thread, ReplyTo: c.ReplyTo,
	}
	c.sendKeys.apply(msg)
	var sent []*maildir.Message
	again := false
	if c.keyed() {
		sent, again, err = c.sendKeys.send(a, s, msg)
	} else if c.Key != nil {
		sent, again, err = s.SendOnce(msg, *c.Key)
		if again {
			a.warn(fmt.Errorf("sent before with --idempotency-key %q: nothing new delivered; the first send's ids follow", *c.Key))
		}
	} else {
		sent, err = s.Send(msg)
	}
	// Copies delivered before a failure are reported: they were delivered.
	if perr := printSent(a, sent, c.JSON); err == nil {
		err = perr
	}
	if !again {
		newMailboxes(a, before, sent)
		answered(a, sent)
	}
	if c.Nudge && err == nil && !again {
		nudgeAbout(a, sent)
	}
	if c.WaitFor == "read" && err == nil {
		return c.waitRead(a, s, sent)
	}
	if (c.WaitFor == "delivered" || c.WaitFor == "submitted") && err == nil {
		return c.waitDelivered(a, s, sent)
	}
	return err
}

// waitContext is the context of a --wait-for: the command's, ended by
// --timeout when given (0: already ended, so the wait looks once).
func (c *sendCmd) waitContext(a *app) (context.Context, context.CancelFunc) {
	if c.Timeout == nil {
		return context.WithCancel(a.ctx)
	}
	return context.WithTimeout(a.ctx, *c.Timeout)
}

// waitRead blocks until every copy is read, or the timeout.
func (c *sendCmd) waitRead(a *app, s *maildir.Store, sent []*maildir.Message) error {
	ctx, cancel := c.waitContext(a)
	defer cancel()
	receipts, err := watch.WaitRead(ctx, s, sent)
	if c.JSON {
		for _, r := range receipts {
			if perr := printValue(a.out, r); perr != nil {
				return perr
			}
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		unread := 0
		for _, r := range receipts {
			if r.ReadAt.IsZero() && !r.Gone {
				unread++
			}
		}
		return &exitStatus{code: exitTimeout, msg: fmt.Sprintf("timeout: %d of %d copies still unread after %v", unread, len(receipts), *c.Timeout)}
	case a.ctx.Err() != nil:
		return &exitStatus{code: exitError, msg: "error: interrupted before every copy was read"}
	}
	return err
}

// waitDelivered blocks until every copy's doorbell has a final answer
// (see live.WaitDelivered), or with --wait-for submitted is at least
// submitted (live.WaitSubmitted), or the timeout, and prints the receipts.
func (c *sendCmd) waitDelivered(a *app, s *maildir.Store, sent []*maildir.Message) error {
	ctx, cancel := c.waitContext(a)
	defer cancel()
	wait, enough := live.WaitDelivered, func(r live.Receipt) bool { return r.Live == live.Delivered || r.Live == live.Read }
	if c.WaitFor == "submitted" {
		wait, enough = live.WaitSubmitted, func(r live.Receipt) bool {
			return r.Live == live.Delivered || r.Live == live.Read || r.Live == live.Submitted && !r.Final
		}
	}
	receipts, err := wait(ctx, s, sent)
	notDelivered := 0
	for _, r := range receipts {
		if !enough(r) {
			notDelivered++
		}
		var perr error
		if c.JSON {
			perr = printValue(a.out, r)
		} else {
			detail := r.Why
			switch r.Live {
			case live.Delivered:
				detail = r.Session + " at " + r.At.Format(time.RFC3339Nano)
			case live.Rung, live.Submitted:
				detail = r.Session + ": " + r.Why
			}
			_, perr = fmt.Fprintln(a.out, strings.TrimSpace(r.Agent+" "+r.ID+" "+r.Live+" "+detail))
		}
		if perr != nil {
			return perr
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &exitStatus{code: exitTimeout, msg: fmt.Sprintf("timeout: %d of %d copies not %s after %v (%s)", notDelivered, len(receipts), c.WaitFor, *c.Timeout, live.Summary(receipts))}
	case a.ctx.Err() != nil:
		return &exitStatus{code: exitError, msg: "error: interrupted before every copy was delivered"}
	case err != nil:
		return err
	case notDelivered > 0:
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("not %s: %d of %d copies (%s): the mail waits in the mailboxes", c.WaitFor, notDelivered, len(receipts), live.Summary(receipts))}
	}
	return nil
}

// protocolBody puts --field KEY=VALUE lines above text, as protocol
// messages are written; with no fields it is text.
func protocolBody(flags []string, text string) (string, error) {
	if len(flags) == 0 {
		return text, nil
	}
	var fields [][2]string
	for _, f := range flags {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return "", usage(`--field "Conflict-Files=a.go, b.go" (the key may contain spaces)`, "--field %q: write it as KEY=VALUE", f)
		}
		fields = append(fields, [2]string{k, v})
	}
	return maildir.FormatBody(fields, text)
}

// newMailboxes says on stderr which copies went to a mailbox no agent had
// before (see maildir.NewMailboxes).
func newMailboxes(a *app, before []string, sent []*maildir.Message) {
	for _, w := range maildir.NewMailboxes(before, sent) {
		a.warn(errors.New(w))
	}
}

// nudgeAbout announces each delivered copy to its recipient with a nudge;
// a nudge that cannot be queued is a warning, since the mail went out.
func nudgeAbout(a *app, sent []*maildir.Message) {
	q, err := a.nudges()
	if err != nil {
		a.warn(err)
		return
	}
	here := sent[:0:0]
	for _, m := range sent {
		home, err := "", error(nil)
		if m.Box.Kind == maildir.KindAgent {
			home, err = homedElsewhere(a.store, m.Box)
		}
		switch {
		case err != nil:
			a.warn(err)
		case home != "":
			a.warn(fmt.Errorf("no nudge for %s: it is homed on host %s, and nudges are never synced; the mail goes with the next sync", m.Box.Name, home))
		default:
			here = append(here, m)
		}
	}
	for _, err := range q.Announce(here) {
		a.warn(err)
	}
}

// answered clears the reply reminders a reply just sent satisfies from
// its sender's nudge queue (Gas Town queues them there, in a queue the
// two share). Only a reply looks: one with reply_to, a thread of another
// message, or a "Re:" subject. Problems are warnings: the mail is sent.
func answered(a *app, sent []*maildir.Message) {
	if len(sent) == 0 {
		return
	}
	m := sent[0]
	if m.ReplyTo == "" && m.Thread == m.ID && nudgeq.NormalizeReplySubject(m.Subject) == strings.TrimSpace(m.Subject) {
		return
	}
	q, err := a.nudges()
	if err == nil {
		_, err = q.ClearReplyReminders(m.From, m)
	}
	if err != nil {
		a.warn(err)
	}
}

func printSent(a *app, sent []*maildir.Message, asJSON bool) error {
	if asJSON {
		return printJSON(a.out, sent)
	}
	for _, m := range sent {
		if _, err := fmt.Fprintln(a.out, m.ID); err != nil {
			return err
		}
	}
	return nil
}
