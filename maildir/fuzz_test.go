package maildir_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// FuzzParseAgent: whatever ParseAgent accepts is one safe path element that
// stays in the mail tree, within the documented alphabet, and round-trips.
func FuzzParseAgent(f *testing.F) {
	for _, s := range []string{"toast", "Gastown/Witness", "mayor/", "..", "../x", "/abs", "a//b", "a\x00b", "\u212Aelvin", strings.Repeat("x", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := maildir.ParseAgent(s)
		if err != nil {
			return
		}
		if len(name) < 1 || len(name) > maildir.MaxAgentLen || name[0] == '.' || name[0] == '-' {
			t.Fatalf("ParseAgent(%q) = %q", s, name)
		}
		for _, c := range []byte(name) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				t.Fatalf("ParseAgent(%q) = %q: byte %q", s, name, c)
			}
		}
		root := "/r/.chipset"
		p := filepath.Join(root, maildir.MailDir, name)
		if rel, err := filepath.Rel(filepath.Join(root, maildir.MailDir), p); err != nil || rel != name {
			t.Fatalf("%q leads to %q", name, p)
		}
		if again, err := maildir.ParseAgent(name); err != nil || again != name || !maildir.ValidAgent(name) {
			t.Fatalf("ParseAgent(%q) = %q, %v: no round trip", name, again, err)
		}
		a, err := maildir.ParseAddress(s)
		if err == nil && a.Kind == maildir.KindAgent && a.Name != name {
			t.Fatalf("ParseAddress(%q).Name = %q, ParseAgent gives %q", s, a.Name, name)
		}
	})
}

// FuzzParseStamp: a stamp is read only from the exact layouts, and reads
// back as it was written.
func FuzzParseStamp(f *testing.F) {
	for _, s := range []string{"2026-03-05T10-30-00.123456789Z-mayor.json", "2026-03-05T10-30-00Z-cron.json", "note.json",
		"2026-13-05T10-30-00Z-x.json", "2026-03-05T10-30-00.12Z-x", "9999-12-31T23-59-59.999999999Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		ts, ok := maildir.ParseStamp(name)
		if !ok {
			return
		}
		if ts.Location() != time.UTC {
			t.Fatalf("ParseStamp(%q) is not UTC", name)
		}
		full, short := ts.Format(maildir.StampLayout), ts.Format(maildir.ShortStampLayout)
		if !strings.HasPrefix(name, full) && !strings.HasPrefix(name, short) {
			t.Fatalf("ParseStamp(%q) = %v, which formats as %q / %q", name, ts, full, short)
		}
		if got, ok := maildir.ParseStamp(maildir.NewID(ts, "x")); !ok || !got.Equal(ts) {
			t.Fatalf("NewID(%v) does not parse back: %v %v", ts, got, ok)
		}
	})
}
