package nudgeq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// The rules by which Gas Town's drainer and mail verbs treat the reply
// reminders it queues (internal/mail/router.go DeferReplyReminders,
// ClearReplyReminders, FilterDeliverableReplyReminders;
// internal/cmd/mail_inbox.go runMailRead, runMailMarkRead,
// runMailArchive; gagecane/gastown 57bcb59d), applied by mailfs to the
// queues it shares with Gas Town, and the announcements of mailfs's own
// send --nudge.

// DefaultReplyReminderDelay is Gas Town's grace period before a reply
// reminder (DefaultMailReplyReminderDelay), by which a read defers it; a
// shared queue's town may set another ("operational": {"mail":
// {"reply_reminder_delay": "10m"}}), "0" turning the deferral off.
const DefaultReplyReminderDelay = 5 * time.Minute

// A MailEvent is what an agent did to a message, as the rules see it.
type MailEvent int

const (
	// MailRead: the agent read the message (mailfs read, take). Gas Town
	// re-arms the reply reminders of its thread, a full delay from now:
	// investigating before answering does not trip them.
	MailRead MailEvent = iota
	// MailSettled: the agent marked it read, archived or deleted it. Gas
	// Town clears the reply reminders of its thread.
	MailSettled
)

// A seenNudge is what the rules read of one queued nudge.
type seenNudge struct {
	kind, thread, mailID string
	deliverAfter         time.Time
}

// A verdict is what becomes of one queued nudge.
type verdict struct {
	remove  bool
	deferTo time.Time // zero: leave it as it is
}

// onMail decides what ev, done to m at now, does to a queued nudge n of
// the same agent: an announcement of m (its mail_id) goes with any of
// them; a reply reminder of m's thread is cleared by a settle and, by a
// read, deferred to deferTo (never pulled earlier; a zero deferTo, the
// delay turned off, defers nothing).
func onMail(n seenNudge, ev MailEvent, m *maildir.Message, deferTo time.Time) verdict {
	if n.mailID != "" && n.mailID == m.ID {
		return verdict{remove: true}
	}
	if n.kind != ReplyReminder || n.thread == "" || (n.thread != m.Thread && n.thread != m.ID) {
		return verdict{}
	}
	switch {
	case ev == MailSettled:
		return verdict{remove: true}
	case !deferTo.IsZero() && (n.deliverAfter.IsZero() || deferTo.After(n.deliverAfter)):
		return verdict{deferTo: deferTo}
	}
	return verdict{}
}

// answeredSince reports whether agent has spoken on a thread at or after
// a reminder was armed (Gas Town's replyReminderSatisfied): then the
// reminder is stale and is dropped at delivery. thread is the thread's
// messages.
func answeredSince(thread []*maildir.Message, agent string, armedAt time.Time) bool {
	for _, m := range thread {
		if m == nil {
			continue
		}
		if from, err := maildir.ParseAgent(m.From); err == nil && from == agent && !m.Timestamp.Before(armedAt) {
			return true
		}
	}
	return false
}

// MailSeen applies ev, done by agent to msgs, to agent's queue: it removes
// the announcements of those messages and, for a queue shared with Gas
// Town, clears or defers the reply reminders of their threads as Gas Town
// does. Claimed nudges are their drainer's. It returns how many nudges it
// removed or deferred.
func (q *Queue) MailSeen(agent string, ev MailEvent, msgs ...*maildir.Message) (int, error) {
	if len(msgs) == 0 {
		return 0, nil
	}
	agent, d, err := q.openQueue(agent)
	if d == nil {
		return 0, err
	}
	defer d.Close()
	l, err := list(d)
	if err != nil {
		return 0, err
	}
	var deferTo time.Time
	if delay := q.replyDelayFor(agent); delay > 0 {
		deferTo = q.now().Add(delay)
	}
	done := 0
	var errs []error
	for _, name := range l.nudges {
		n, err := q.read(d, name)
		if err != nil {
			continue
		}
		view := seenNudge{kind: n.Kind, thread: n.ThreadID, mailID: n.MailID, deliverAfter: n.DeliverAfter}
		for _, m := range msgs {
			v := onMail(view, ev, m, deferTo)
			switch {
			case v.remove:
				err = d.Remove(name)
			case !v.deferTo.IsZero():
				err = deferNudge(d, name, v.deferTo, q.now())
			default:
				continue
			}
			if err == nil {
				done++
			} else if !errors.Is(err, fs.ErrNotExist) { // a drainer won it
				errs = append(errs, err)
			}
			break
		}
	}
	return done, errors.Join(errs...)
}

// deferNudge sets a queued nudge's deliver_after to t, keeping every other
// key as it is: it claims the file first, as a drainer would, so that no
// drainer shows it half-changed and no rewrite brings back a nudge a
// drainer took, then rewrites the claim and puts it back under its name.
// A crash in between leaves a claim, returned to the queue as an orphan.
func deferNudge(d *durable.Dir, name string, t, now time.Time) error {
	claim := fmt.Sprintf("%s.claimed.%019d-%08x", name, now.UnixNano(), rand.Uint32())
	if err := d.Move(name, d, claim); err != nil {
		return err
	}
	d.SetTimes(claim, now) // a fresh claim to Gas Town's recovery too
	data, _, err := d.ReadFile(claim, maxFile)
	if err == nil {
		var obj map[string]json.RawMessage
		if err = json.Unmarshal(data, &obj); err == nil {
			obj["deliver_after"], _ = json.Marshal(t.UTC())
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err = enc.Encode(obj); err == nil { // keys sorted, values as they were
				err = d.Replace(claim, buf.Bytes())
			}
		}
	}
	if merr := d.Move(claim, d, name); merr != nil {
		return errors.Join(err, merr)
	}
	return err
}

// replyDelayFor is the reply-reminder delay of agent's queue: the town's
// setting for a queue shared with Gas Town, else the default.
func (q *Queue) replyDelayFor(agent string) time.Duration {
	if l := q.sharedLimits(agent); l.replyDelay != nil {
		return *l.replyDelay
	}
	return DefaultReplyReminderDelay
}

// answered reports whether n, a reply reminder, is about a thread agent
// has answered since it was armed; it fails open (false) when the thread
// cannot be read or is not in this tree.
func (q *Queue) answered(agent string, n *Nudge) bool {
	if n.Kind != ReplyReminder || n.ThreadID == "" || q.Mail == nil {
		return false
	}
	thread, err := q.Mail.Thread(n.ThreadID)
	return err == nil && answeredSince(thread, agent, n.Timestamp)
}

// gasTownSender is how Gas Town spells the agent of mailbox name, as it
// writes a nudge's sender: "gastown/witness" for gastown.witness, "mayor"
// for mayor. mailfs writes a nudge's sender so in a queue it shares with
// Gas Town.
func gasTownSender(name string) string {
	if name == NoSender {
		return name
	}
	return strings.ReplaceAll(name, ".", "/")
}
