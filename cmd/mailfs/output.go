package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mailfs/mailfs/hook"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/mailfs/mailfs/maildir"
)

// jsonFlag is embedded by every reading command.
type jsonFlag struct {
	JSON bool `help:"Print one JSON object per line: id, agent, path, then the message's keys."`
}

// jsonRows is --json for the commands that list things other than
// messages (mailboxes, groups, queues, channels, counts).
type jsonRows struct {
	JSON bool `help:"Print one JSON object per line, one per row of the table, with the same fields."`
}

// printJSON writes msgs as JSON lines.
func printJSON(w io.Writer, msgs []*maildir.Message) error {
	var b []byte
	for _, m := range msgs {
		b = m.AppendJSONLine(b)
	}
	_, err := w.Write(b)
	return err
}

// printValue writes v as one compact JSON line.
func printValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// table writes aligned columns, with a header, and nothing at all when
// there are no rows. It writes to w once: a tabwriter writes cell by cell,
// and w may be unbuffered (wait's output, which a script may be reading).
func table(w io.Writer, header []string, rows [][]string) error {
	if len(rows) == 0 {
		return nil
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		for i := range r {
			r[i] = hook.Short(oneLine(r[i])) // a 100 KB subject is a line, not a screenful
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush() // into buf: cannot fail
	_, err := w.Write(buf.Bytes())
	return err
}

// printMessage writes one message for a human: headers, a blank line, the
// body.
func printMessage(w io.Writer, m *maildir.Message) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, oneLine(v))
		}
	}
	field("id", m.ID)
	field("path", m.Path)
	field("from", m.From)
	field("to", m.To)
	field("cc", strings.Join(m.CC, ", "))
	field("type", m.Type)
	field("priority", string(m.Priority))
	field("subject", m.Subject)
	field("timestamp", m.Timestamp.Format(time.RFC3339Nano))
	field("thread", m.Thread)
	field("reply-to", m.ReplyTo)
	field("read", fmt.Sprint(m.Read))
	for _, k := range slices.Sorted(maps.Keys(m.Extra)) {
		field(k, string(m.Extra[k]))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.TrimRight(clean(m.Body, true), "\n"))
	return err
}

// printBrief writes one message as an agent acts on it: its id, sender,
// priority when not normal, copies, subject, a blank line, the body.
// The rest (path, recipient, type, time, thread, read, other keys) is
// printMessage's, for --full and show: the time is in the id, and the
// recipient is the reader.
func printBrief(w io.Writer, m *maildir.Message) error {
	var b strings.Builder
	field := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, oneLine(v))
		}
	}
	field("id", m.ID)
	field("from", m.From)
	if m.Priority != maildir.Normal {
		field("priority", string(m.Priority))
	}
	field("cc", strings.Join(m.CC, ", "))
	field("subject", m.Subject)
	fmt.Fprintf(&b, "\n%s\n", strings.TrimRight(clean(m.Body, true), "\n"))
	_, err := io.WriteString(w, b.String())
	return err
}

// messageRows renders messages as table rows.
func messageRows(msgs []*maildir.Message, cols func(*maildir.Message) []string) [][]string {
	rows := make([][]string, len(msgs))
	for i, m := range msgs {
		rows[i] = cols(m)
	}
	return rows
}

func oneLine(s string) string { return clean(s, false) }

// clean makes text from a message safe to print on a terminal: control
// characters (escape sequences included) and bidirectional controls
// (U+202E reverses what follows) become U+FFFD; newlines and tabs are kept
// only when multiline is true.
func clean(s string, multiline bool) string {
	return strings.Map(func(r rune) rune {
		if multiline && (r == '\n' || r == '\t') {
			return r
		}
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func readState(m *maildir.Message) string {
	if m.Read {
		return "read"
	}
	return "unread"
}
