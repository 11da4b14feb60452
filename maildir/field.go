package maildir

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Protocol messages (MERGE_READY, MERGED, POLECAT_DONE, …) carry their data
// as "Key: value" lines: at the top of the body, then a blank line and free
// text (SPEC §3), or after the free text (RECOVERED_BEAD). Field and Fields
// read those lines; FormatBody writes them.

// Fields returns the body's "Key: value" lines, in order, wherever they
// stand: Gas Town's protocol puts them at the top (MERGE_READY) or after
// free text (RECOVERED_BEAD). A key is a letter, then letters, digits, "-",
// "_" and single spaces ("Cleanup Status"), at most 64 bytes; the value is
// the rest of the line, trimmed, and must not be empty, so that prose
// ending in a colon is not taken for a field.
func (m *Message) Fields() [][2]string {
	var out [][2]string
	for line := range strings.Lines(m.Body) {
		if k, v, ok := splitField(strings.TrimRight(line, "\r\n")); ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// ProtocolFields returns the fields of a protocol message where its type
// puts them, and nothing for any other message: the type is the subject's
// first word in capitals (MERGE_READY, POLECAT_DONE, RECOVERED_BEAD), and
// the fields are a block of "Key: value" lines at the top of the body, up
// to the first blank line, or else at its end, after the last. A note whose
// prose happens to hold "Key: value" lines, or a protocol message whose
// such lines stand among prose, has none: a person reading it as a table
// of fields would be misled. (Fields and Field still read every such line,
// for a script that knows what it asks for.)
func (m *Message) ProtocolFields() [][2]string {
	kind, _, _ := strings.Cut(m.Subject, " ")
	if !protocolType(kind) {
		return nil
	}
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n"), "\n")
	block := func(ls []string) [][2]string {
		var out [][2]string
		for _, l := range ls {
			k, v, ok := splitField(l)
			if !ok {
				return nil
			}
			out = append(out, [2]string{k, v})
		}
		return out
	}
	blank := func(l string) bool { return strings.TrimSpace(l) == "" }
	top := len(lines)
	if i := slices.IndexFunc(lines, blank); i >= 0 {
		top = i
	}
	if f := block(lines[:top]); len(f) > 0 {
		return f
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if blank(lines[i]) {
			return block(lines[i+1:])
		}
	}
	return nil
}

// protocolType reports whether w is a protocol message's type: capitals,
// digits and "_", starting with a capital, at least three long.
func protocolType(w string) bool {
	if len(w) < 3 || w[0] < 'A' || w[0] > 'Z' {
		return false
	}
	for _, r := range w {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// Field returns the value of the first field line (see [Message.Fields])
// whose key is key, compared without regard to case. ok is false when
// there is none.
func (m *Message) Field(key string) (value string, ok bool) {
	for line := range strings.Lines(m.Body) {
		if k, v, ok := splitField(strings.TrimRight(line, "\r\n")); ok && strings.EqualFold(k, key) {
			return v, true
		}
	}
	return "", false
}

// splitField splits "Key: value" at the first colon.
func splitField(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, ":")
	if !ok || !validKey(key) {
		return "", "", false
	}
	value = strings.TrimSpace(value)
	return key, value, value != ""
}

// maxKey bounds a field key, in bytes.
const maxKey = 64

// validKey reports whether k can be a field key: a letter, then letters,
// digits, "-", "_" and single spaces, not ending in a space.
func validKey(k string) bool {
	if k == "" || len(k) > maxKey || !isLetter(k[0]) || k[len(k)-1] == ' ' {
		return false
	}
	for i := 1; i < len(k); i++ {
		c := k[i]
		switch {
		case isLetter(c), '0' <= c && c <= '9', c == '-', c == '_':
		case c == ' ' && k[i-1] != ' ':
		default:
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' }

// FormatBody returns a protocol body: one "Key: value" line per field, a
// blank line, then text. Keys follow [Message.Fields]; a value is any text
// on one line, commas included, in valid UTF-8. An empty value is written
// "Key: " as Gas Town writes it ("Error: " when there was none), and reads
// back as no field (see [Message.Fields]).
func FormatBody(fields [][2]string, text string) (string, error) {
	var b strings.Builder
	for _, f := range fields {
		k, v := f[0], strings.TrimSpace(f[1])
		switch {
		case !validKey(k):
			return "", fmt.Errorf("%w: field key %q (use a letter, then letters, digits, -, _ and single spaces, at most %d bytes)", ErrInvalidMessage, k, maxKey)
		case strings.ContainsAny(v, "\r\n"):
			return "", fmt.Errorf("%w: the value of field %s must be one line", ErrInvalidMessage, k)
		case !utf8.ValidString(v):
			return "", fmt.Errorf("%w: the value of field %s is not valid UTF-8", ErrInvalidMessage, k)
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	if len(fields) > 0 && text != "" {
		b.WriteByte('\n')
	}
	b.WriteString(text)
	return b.String(), nil
}
