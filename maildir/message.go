package maildir

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxSize is the largest message file, in bytes. Larger files are
// skipped by readers unread, and mailfs never writes one: [Store.Send]
// refuses a message whose file would leave less than [EditRoom] of it free,
// and an edit (read, a claim) whose indented file would pass it writes the
// file compact instead.
const MaxSize = 1 << 20

// EditRoom is what a sent message keeps free under [MaxSize] for mailfs's
// own later edits: a claim record (agent, queue, request id, time) and
// the read flag, with room to spare. Whatever Send accepts can be marked,
// claimed, released and read for ever after.
const EditRoom = 4096

// A Priority orders mail: [Urgent] first, then [High], [Normal], [Low].
type Priority string

// The priorities a sender may give.
const (
	Urgent Priority = "urgent"
	High   Priority = "high"
	Normal Priority = "normal"
	Low    Priority = "low"
)

// ParsePriority returns the priority named s, or an error wrapping
// [ErrInvalidMessage]. The empty string is [Normal].
func ParsePriority(s string) (Priority, error) {
	switch p := Priority(s); p {
	case Urgent, High, Normal, Low:
		return p, nil
	case "":
		return Normal, nil
	}
	return "", fmt.Errorf("%w: unknown priority %q (use urgent, high, normal or low)", ErrInvalidMessage, s)
}

// Rank is the sort position of p: 0 for urgent up to 3 for low. A value
// that a script wrote and mailfs does not know ranks as normal.
func (p Priority) Rank() int {
	switch p {
	case Urgent:
		return 0
	case High:
		return 1
	case Low:
		return 3
	}
	return 2
}

// A Message is one message file: the keys of SPEC §3 and, in Extra, any
// keys mailfs does not know. Readers fill in the documented defaults for
// keys a script left out: Read false, Priority normal, Timestamp from the
// file name's stamp, else the file's mtime.
//
// ID is stable: it is the file name without ".json", in every mailbox the
// message is copied to and in the archive. Box, Path and Archived say where
// the copy was when it was read; another process may move it later.
type Message struct {
	ID       string  `json:"-"`
	Box      Address `json:"-"` // the folder this copy sits in: a mailbox, a queue, a channel
	Path     string  `json:"-"` // relative to the root, "/"-separated
	Archived bool    `json:"-"`

	From      string
	To        string
	Type      string
	Subject   string
	Body      string
	Timestamp time.Time
	Read      bool
	Priority  Priority
	Thread    string   // id of the first message of the conversation
	ReplyTo   string   // id of the message this answers
	CC        []string // the other recipients that got a copy

	// Claim is set on a work-queue item that [Store.Claim] moved into a
	// mailbox: which queue it came from, who claimed it and when. Only such
	// an item can be released ([Store.Release]). Send never sets it.
	Claim *Claim

	// Extra holds the keys mailfs does not know, each value exactly as the
	// file spelt it. mailfs keeps them byte for byte when it rewrites a file.
	Extra map[string]json.RawMessage
}

// A Claim records that a work-queue item was claimed: the "claim" key of
// its file, {"agent": …, "at": …, "queue": …}, which a script can read.
type Claim struct {
	Queue string    // the queue it came from, "queue:name"
	Agent string    // the agent that claimed it
	At    time.Time // when
	// Request is the claim request this claim served, when the agent's
	// host asked the queue's home for it (see [Store.RequestClaim]).
	Request string
}

type claimJSON struct {
	Agent   string `json:"agent"`
	At      string `json:"at"`
	Queue   string `json:"queue"`
	Request string `json:"request,omitempty"`
}

func (c *Claim) raw() []byte {
	return marshalValue(claimJSON{Agent: c.Agent, At: c.At.UTC().Format(time.RFC3339Nano), Queue: c.Queue, Request: c.Request})
}

// knownKey reports whether k is one of the keys of SPEC §3, or the claim
// record of §8. (A switch, not a map: a table built at start-up is paid
// by every command.)
func knownKey(k string) bool {
	switch k {
	case "from", "to", "type", "subject", "body", "timestamp", "read", "priority", "thread", "reply_to", "cc", "claim":
		return true
	}
	return false
}

// Parse decodes a message file. Keys may come in any order and any of them
// may be missing (see [Message] for the defaults; a missing timestamp stays
// zero here, as only a reader knows the file's name and mtime). It returns
// an error wrapping [ErrInvalidMessage] for anything but one JSON object in
// valid UTF-8 with distinct keys and the right type for every known key.
func Parse(data []byte) (*Message, error) {
	m, _, err := decode(data)
	return m, err
}

func decode(data []byte) (*Message, []field, error) {
	fields, err := parseObject(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	m := &Message{Priority: Normal}
	for _, f := range fields {
		if err := m.set(f); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
		}
	}
	return m, fields, nil
}

func (m *Message) set(f field) error {
	if knownKey(f.Key) && string(f.Raw) == "null" {
		return nil // null is the same as absent
	}
	str := func(dst *string) error {
		if f.Raw[0] != '"' {
			return fmt.Errorf("key %q is not a string", f.Key)
		}
		s, err := decodeString(f.Raw)
		*dst = s
		return err
	}
	switch f.Key {
	case "from":
		return str(&m.From)
	case "to":
		return str(&m.To)
	case "type":
		return str(&m.Type)
	case "subject":
		return str(&m.Subject)
	case "body":
		return str(&m.Body)
	case "thread":
		return str(&m.Thread)
	case "reply_to":
		return str(&m.ReplyTo)
	case "priority":
		var p string
		err := str(&p)
		m.Priority = Priority(p)
		return err
	case "timestamp":
		var s string
		if err := str(&s); err != nil {
			return err
		}
		// An unparseable time is treated as a missing one, not as a broken
		// file: the name's stamp or the mtime still give the age.
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			m.Timestamp = t.UTC()
		}
	case "read":
		switch string(f.Raw) {
		case "true":
			m.Read = true
		case "false":
			m.Read = false
		default:
			return fmt.Errorf("key %q is not a boolean", f.Key)
		}
	case "claim":
		var c claimJSON
		if f.Raw[0] != '{' || json.Unmarshal(f.Raw, &c) != nil {
			return fmt.Errorf("key %q is not a claim record", f.Key)
		}
		at, _ := time.Parse(time.RFC3339Nano, c.At)
		m.Claim = &Claim{Queue: c.Queue, Agent: c.Agent, At: at.UTC(), Request: c.Request}
	case "cc":
		cc, ok := decodeStrings(f.Raw)
		if !ok {
			return fmt.Errorf("key %q is not an array of strings", f.Key)
		}
		m.CC = cc
	default:
		if m.Extra == nil {
			m.Extra = make(map[string]json.RawMessage)
		}
		m.Extra[f.Key] = json.RawMessage(f.Raw)
	}
	return nil
}

// fields returns the file's members for m, every required key included.
func (m *Message) fields() []field {
	fs := []field{
		{Key: "body", Raw: marshalValue(m.Body)},
		{Key: "from", Raw: marshalValue(m.From)},
		{Key: "priority", Raw: marshalValue(string(m.Priority))},
		{Key: "read", Raw: marshalValue(m.Read)},
		{Key: "subject", Raw: marshalValue(m.Subject)},
		{Key: "timestamp", Raw: marshalValue(m.Timestamp.UTC().Format(time.RFC3339Nano))},
		{Key: "to", Raw: marshalValue(m.To)},
		{Key: "type", Raw: marshalValue(m.Type)},
	}
	if m.Thread != "" {
		fs = append(fs, field{Key: "thread", Raw: marshalValue(m.Thread)})
	}
	if m.ReplyTo != "" {
		fs = append(fs, field{Key: "reply_to", Raw: marshalValue(m.ReplyTo)})
	}
	if len(m.CC) > 0 {
		fs = append(fs, field{Key: "cc", Raw: marshalValue(m.CC)})
	}
	if m.Claim != nil {
		fs = append(fs, field{Key: "claim", Raw: m.Claim.raw()})
	}
	for k, v := range m.Extra {
		if !knownKey(k) {
			fs = append(fs, field{Key: k, Raw: v})
		}
	}
	return fs
}

// Encode returns m as mailfs writes it to disk: one JSON object, keys
// sorted, two-space indent, no HTML escaping, a final newline. The same
// message always gives the same bytes.
func (m *Message) Encode() []byte { return encodeObject(m.fields()) }

// MarshalJSON returns the message's keys (not its location) as one compact
// JSON object with sorted keys.
func (m Message) MarshalJSON() ([]byte, error) { return compactObject(nil, m.fields()), nil }

// AppendJSONLine appends m as one line of --json output: "id", "agent" and
// "path" first, then the message's keys, then a newline.
func (m *Message) AppendJSONLine(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"agent":`...)
	b = appendString(b, m.Box.String())
	b = append(b, `,"path":`...)
	b = appendString(b, m.Path)
	obj := compactObject(nil, m.fields())
	if len(obj) > 2 {
		b = append(b, ',')
		b = append(b, obj[1:]...)
	} else {
		b = append(b, '}')
	}
	return append(b, '\n')
}

// check validates a message about to be written.
func (m *Message) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidMessage}, args...)...)
	}
	if strings.ContainsAny(m.Subject, "\r\n") {
		return bad("the subject must be one line")
	}
	for name, s := range map[string]string{"subject": m.Subject, "body": m.Body, "type": m.Type} {
		if !utf8.ValidString(s) {
			return bad("the %s is not valid UTF-8", name)
		}
	}
	if m.Type == "" || strings.ContainsAny(m.Type, " \t\r\n") {
		return bad("the type must be one word, such as work_assignment")
	}
	if _, err := ParsePriority(string(m.Priority)); err != nil {
		return err
	}
	for _, id := range []string{m.Thread, m.ReplyTo} {
		if id != "" {
			if _, err := ParseID(id); err != nil {
				return err
			}
		}
	}
	for k, v := range m.Extra {
		if !json.Valid(v) || !utf8.Valid(v) {
			return bad("extra key %q is not valid JSON", k)
		}
	}
	return nil
}
