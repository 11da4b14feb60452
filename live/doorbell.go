package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// Bounds of one doorbell.
const (
	// MaxLines is how many messages one doorbell names; more wait for the
	// next one.
	MaxLines = 20
	// MaxBytes bounds a doorbell's text, as the hooks bound theirs.
	MaxBytes = 4000
)

// A Doorbell is what one ring says: the messages and nudges it names.
type Doorbell struct {
	Agent  string
	Nonce  string             // its RingMark's nonce: fresh for each ring, so the session can say which doorbell reached the model
	Mail   []*maildir.Message // oldest first within each tier
	Nudges []*nudgeq.Nudge
}

// Text is the doorbell as the agent reads it: who it is from (mailfs), the
// messages by id, sender and subject (cut and neutralised as the hooks cut
// them), the nudges' text, and how to read the mail. Only what fits
// MaxBytes is named; Fit says how many.
func (b *Doorbell) Text() string {
	var s strings.Builder
	urgent := 0
	for _, m := range b.Mail {
		if m.Priority == maildir.Urgent {
			urgent++
		}
	}
	s.WriteString(hook.DoorbellMark(b.Agent))
	switch {
	case len(b.Mail) == 0:
		s.WriteString("nudges from other agents.\n")
	case urgent > 0:
		fmt.Fprintf(&s, "%d new message(s), %d URGENT: read those now (mailfs read %s <id>), then go on:\n", len(b.Mail), urgent, b.Agent)
	default:
		fmt.Fprintf(&s, "%d new message(s); read them at a good stopping point (mailfs read %s <id>):\n", len(b.Mail), b.Agent)
	}
	for _, m := range b.Mail {
		tag := ""
		if m.Priority == maildir.Urgent || m.Priority == maildir.High {
			tag = "[" + string(m.Priority) + "] "
		}
		fmt.Fprintf(&s, "- %s%s from %s: %s\n", tag, idField(m.ID), field(m.From, false), field(m.Subject, false))
	}
	for _, n := range b.Nudges {
		flag := ""
		if n.Priority == nudgeq.Urgent {
			flag = "[URGENT] "
		}
		fmt.Fprintf(&s, "- nudge %s[from %s] %s\n", flag, field(n.Sender, false), field(n.Message, true))
	}
	s.WriteString("The mail waits in your mailbox")
	if b.Nonce != "" {
		s.WriteString(" " + hook.RingMark(b.Nonce))
	}
	s.WriteString(".")
	return s.String()
}

// markFree breaks, in text someone else wrote, the two marks a doorbell's
// evidence is read by (hook.DoorbellMark's opening, hook.RingMark), so a
// subject or sender can neither pass for another agent's doorbell nor
// confirm a ring that is not its own. The doorbell's own marks are
// written around the fields, never through field.
func markFree(s string) string {
	s = strings.ReplaceAll(s, "(ring ", "[ring ")
	return strings.ReplaceAll(s, "mailfs doorbell for ", "mailfs doorbell, for ")
}

// field is what a doorbell shows of one field someone else wrote (a
// message's id, sender or subject; a nudge's sender or text), and the one
// place a doorbell neutralises them: on one line (newlines and tabs become
// spaces; U+2028, U+2029 and every other control character, bidi
// controls included, U+FFFD; "<" and ">" "‹" and "›": hook.Neutral, as
// the hooks show them), free of the doorbell's marks, and cut: a nudge's
// text to nudgeq.MaxMessage bytes, anything else to a reminder's subject
// (hook.Short). So no field can add a line, a message or a nudge to a
// doorbell, nor make one longer than MaxBytes.
func field(s string, nudge bool) string {
	s = markFree(hook.Neutral(s, false))
	if !nudge {
		return hook.Short(s)
	}
	if len(s) > nudgeq.MaxMessage {
		s = strings.ToValidUTF8(s[:nudgeq.MaxMessage], "") + "…"
	}
	return s
}

// idField is a message's id as its line shows it, first after the
// priority tag: as it is when it is plain (letters, digits and . _ - : +,
// as mailfs names files), else neutralised (field) and quoted, so a file
// a script named "[urgent] x.json" is not shown as urgent mail and the
// quoted id can still be given to mailfs read.
func idField(id string) string {
	s := field(id, false)
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("._-:+", r) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// Fit drops the last messages and nudges until the text is within
// MaxBytes and names at most MaxLines messages, and returns what it
// dropped, for the next doorbell.
func (b *Doorbell) Fit() (mail []*maildir.Message, nudges []*nudgeq.Nudge) {
	if len(b.Mail) > MaxLines {
		mail = append(mail, b.Mail[MaxLines:]...)
		b.Mail = b.Mail[:MaxLines]
	}
	for len(b.Text()) > MaxBytes && len(b.Mail)+len(b.Nudges) > 1 {
		if len(b.Nudges) > 0 {
			nudges = append([]*nudgeq.Nudge{b.Nudges[len(b.Nudges)-1]}, nudges...)
			b.Nudges = b.Nudges[:len(b.Nudges)-1]
			continue
		}
		mail = append([]*maildir.Message{b.Mail[len(b.Mail)-1]}, mail...)
		b.Mail = b.Mail[:len(b.Mail)-1]
	}
	return mail, nudges
}

// marshal writes v as one line of JSON, without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return b.Bytes(), err
}
