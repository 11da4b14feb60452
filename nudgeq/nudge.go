package nudgeq

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailfs/mailfs/maildir"
)

// MaxMessage is the longest nudge message mailfs queues, in bytes: a nudge
// is a short poke, and every nudge must fit a hook's answer (9,000 bytes as
// the runtime receives them, escaping included) beside the mail it lists.
// Longer text is mail. A longer nudge another tool queued is shown cut to
// this length.
const MaxMessage = 2 << 10

// maxRead is the longest nudge message read from a file another tool
// wrote (or an older mailfs, which queued up to 64 KiB).
const maxRead = 64 << 10

// maxFile bounds a nudge file, with room for its keys around the message.
const maxFile = maxRead*6 + 4096

// A Priority is normal or urgent. Urgent nudges are shown first and
// flagged, and live longer.
type Priority string

// The priorities of a nudge.
const (
	Normal Priority = "normal"
	Urgent Priority = "urgent"
)

// The default time-to-live of a nudge, by priority.
const (
	DefaultTTL       = 30 * time.Minute
	DefaultUrgentTTL = 2 * time.Hour
)

// ErrInvalid is returned for a nudge that cannot be queued, and reported
// for a queue file that is not a nudge.
var ErrInvalid = errors.New("nudgeq: invalid nudge")

// A Nudge is one queued poke.
type Nudge struct {
	ID        string    // the file name without ".json"; it sorts in queue order
	Sender    string    // the agent that sent it
	Message   string    // the text
	Priority  Priority  // normal or urgent
	Timestamp time.Time // when it was queued
	ExpiresAt time.Time // it is dropped unseen from this instant on
	// MailID, if set, is the id of the message in the recipient's mailbox
	// that this nudge announces; the nudge is removed when the message is
	// read, archived or deleted through mailfs ([Queue.MailSeen]), and
	// dropped at drain time once it is read, archived or gone.
	MailID string
	// DeliverAfter, if set, holds the nudge back until that instant (Gas
	// Town's deferred reminders); a drain before it leaves the nudge queued.
	DeliverAfter time.Time
	// Kind and ThreadID are what Gas Town's nudges say of themselves
	// ("reply-reminder" and the thread it is about); read from its files,
	// never written by mailfs.
	Kind, ThreadID string
}

// Deferred reports whether n is held back at now by its DeliverAfter.
func (n *Nudge) Deferred(now time.Time) bool {
	return !n.DeliverAfter.IsZero() && now.Before(n.DeliverAfter)
}

// wire is the file format: fields in key order, so the JSON keys are sorted.
type wire struct {
	DeliverAfter time.Time `json:"deliver_after,omitzero"`
	ExpiresAt    time.Time `json:"expires_at"`
	Kind         string    `json:"kind,omitempty"`
	MailID       string    `json:"mail_id,omitempty"`
	Message      *string   `json:"message"`
	Priority     Priority  `json:"priority"`
	Sender       string    `json:"sender"`
	ThreadID     string    `json:"thread_id,omitempty"`
	Timestamp    time.Time `json:"timestamp"`
}

// Expired reports whether n is dropped at now: at its expiry instant or
// after it.
func (n *Nudge) Expired(now time.Time) bool { return !now.Before(n.ExpiresAt) }

// encode returns n as a nudge file: sorted keys, two-space indent, a final
// newline, no HTML escaping.
func (n *Nudge) encode() []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	msg := n.Message
	w := wire{DeliverAfter: n.DeliverAfter.UTC(), ExpiresAt: n.ExpiresAt.UTC(), MailID: n.MailID, Message: &msg, Priority: n.Priority, Sender: n.Sender, Timestamp: n.Timestamp.UTC()}
	if err := enc.Encode(w); err != nil {
		panic(err) // strings and times only
	}
	return buf.Bytes()
}

// Parse decodes a nudge file. It returns an error wrapping [ErrInvalid] for
// anything but one JSON object with a message and a timestamp. It reads
// Gas Town's nudge files too: an empty or missing sender (which Gas Town
// writes for a nudge from no agent) is [NoSender]; a priority word other than urgent
// counts as normal, a missing expires_at is the timestamp plus the default
// time to live, and deliver_after is honoured; keys it does not know are
// ignored.
func Parse(data []byte) (*Nudge, error) {
	bad := func(why string) (*Nudge, error) { return nil, fmt.Errorf("%w: %s", ErrInvalid, why) }
	if !utf8.Valid(data) {
		return bad("invalid UTF-8")
	}
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return bad(err.Error())
	}
	switch {
	case w.Message == nil:
		return bad("no message")
	case w.Timestamp.IsZero():
		return bad("no timestamp")
	}
	if strings.TrimSpace(w.Sender) == "" {
		w.Sender = NoSender
	}
	if w.Priority != Urgent {
		w.Priority = Normal
	}
	if w.ExpiresAt.IsZero() {
		w.ExpiresAt = w.Timestamp.Add(DefaultTTL)
		if w.Priority == Urgent {
			w.ExpiresAt = w.Timestamp.Add(DefaultUrgentTTL)
		}
	}
	return &Nudge{Sender: w.Sender, Message: *w.Message, Priority: w.Priority,
		Timestamp: w.Timestamp, ExpiresAt: w.ExpiresAt, MailID: w.MailID, DeliverAfter: w.DeliverAfter,
		Kind: w.Kind, ThreadID: w.ThreadID}, nil
}

// NoSender is the sender of a nudge whose file names none (Gas Town writes
// such nudges): shown as it is, never an agent's name (it has a space).
const NoSender = "(no sender)"

// check validates a nudge about to be queued and fills in its defaults.
func (n *Nudge) check(now time.Time, ttl time.Duration) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
	}
	if n.Sender == "" {
		return bad("no sender")
	}
	sender, err := maildir.ParseAgent(n.Sender)
	if err != nil {
		return err
	}
	n.Sender = sender
	switch {
	case n.Message == "":
		return bad("empty message")
	case len(n.Message) > MaxMessage:
		return bad("the message is %d bytes, the limit is %d: a nudge is a short poke; send longer text as mail (mailfs send --nudge)", len(n.Message), MaxMessage)
	case !utf8.ValidString(n.Message):
		return bad("the message is not valid UTF-8")
	case ttl < 0:
		return bad("negative time-to-live %v", ttl)
	}
	switch n.Priority {
	case "":
		n.Priority = Normal
	case Normal, Urgent:
	default:
		return bad("unknown priority %q (use normal or urgent)", n.Priority)
	}
	if n.MailID != "" {
		if _, err := maildir.ParseID(n.MailID); err != nil {
			return err
		}
	}
	if ttl == 0 {
		ttl = DefaultTTL
		if n.Priority == Urgent {
			ttl = DefaultUrgentTTL
		}
	}
	n.Timestamp = now.UTC()
	n.ExpiresAt = n.Timestamp.Add(ttl)
	return nil
}
