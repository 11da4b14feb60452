package live

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

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
		fmt.Fprintf(&s, "- %s%s from %s: %s\n", tag, hook.Neutral(m.ID, false), hook.Neutral(m.From, false), hook.Short(hook.Neutral(m.Subject, false)))
	}
	for _, n := range b.Nudges {
		flag := ""
		if n.Priority == nudgeq.Urgent {
			flag = "[URGENT] "
		}
		fmt.Fprintf(&s, "- nudge %s[from %s] %s\n", flag, hook.Neutral(n.Sender, false), hook.Neutral(n.Message, false))
	}
	s.WriteString("The mail waits in your mailbox")
	if b.Nonce != "" {
		s.WriteString(" " + hook.RingMark(b.Nonce))
	}
	s.WriteString(".")
	return s.String()
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
