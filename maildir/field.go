package maildir

import (
	"fmt"
	"strings"
)

// Protocol messages (MERGE_READY, MERGED, POLECAT_DONE, …) carry their data
// at the top of the body: "Key: value" lines, a blank line, then free text
// (SPEC §3). Field and Fields read those lines; FormatBody writes them.

// Fields returns the "Key: value" lines at the top of m's body, in order.
// The header is the run of such lines before the first blank line (or the
// end); a body whose first line is not one has no fields.
func (m *Message) Fields() [][2]string {
	var out [][2]string
	for line := range strings.Lines(m.Body) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		k, v, ok := splitField(line)
		if !ok {
			break
		}
		out = append(out, [2]string{k, v})
	}
	return out
}

// Field returns the value of the header line whose key is key, compared
// without regard to case. ok is false when there is none.
func (m *Message) Field(key string) (value string, ok bool) {
	for _, f := range m.Fields() {
		if strings.EqualFold(f[0], key) {
			return f[1], true
		}
	}
	return "", false
}

// splitField splits "Key: value"; a key is a letter, then letters, digits,
// "-" and "_".
func splitField(line string) (key, value string, ok bool) {
	key, value, ok = strings.Cut(line, ":")
	if !ok || !validKey(key) {
		return "", "", false
	}
	return key, strings.TrimSpace(value), true
}

func validKey(k string) bool {
	if k == "" || !('A' <= k[0] && k[0] <= 'Z' || 'a' <= k[0] && k[0] <= 'z') {
		return false
	}
	for _, c := range k {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// FormatBody returns a protocol body: one "Key: value" line per field, a
// blank line, then text. Keys are a letter then letters, digits, "-" and
// "_"; values are one line.
func FormatBody(fields [][2]string, text string) (string, error) {
	var b strings.Builder
	for _, f := range fields {
		if !validKey(f[0]) {
			return "", fmt.Errorf("%w: field key %q (use a letter, then letters, digits, - and _)", ErrInvalidMessage, f[0])
		}
		if strings.ContainsAny(f[1], "\r\n") {
			return "", fmt.Errorf("%w: the value of field %s must be one line", ErrInvalidMessage, f[0])
		}
		fmt.Fprintf(&b, "%s: %s\n", f[0], f[1])
	}
	if len(fields) > 0 && text != "" {
		b.WriteByte('\n')
	}
	b.WriteString(text)
	return b.String(), nil
}
