package maildir_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// FuzzParseAgent checks ParseAgent both ways against the rule as SPEC §2
// writes it (agentRule, written here independently): it accepts exactly
// what the rule accepts, with the same result, and what it accepts is one
// safe path element inside the mail tree that round-trips.
func FuzzParseAgent(f *testing.F) {
	for _, s := range []string{"toast", "Gastown/Witness", "mayor/", "..", "../x", "/abs", "a//b", "a\x00b", "\u212Aelvin",
		strings.Repeat("x", 65), strings.Repeat("x", 64), "-x", ".x", "a/.", "a/", "a//", "a b", "É", "x\x7f",
		"../mayor", " /mAYoR", "$(id)/deacon", "x/../polecats/nux", "0/pOleCAT/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := maildir.ParseAgent(s)
		want, ok := agentRule(s)
		switch {
		case ok && err != nil:
			t.Fatalf("ParseAgent(%q) refused what the rule accepts as %q: %v", s, want, err)
		case !ok && err == nil:
			t.Fatalf("ParseAgent(%q) = %q, which the rule refuses", s, name)
		case !ok:
			if !errors.Is(err, maildir.ErrInvalidAddress) {
				t.Fatalf("ParseAgent(%q) refused with %v, not ErrInvalidAddress", s, err)
			}
			return
		case name != want:
			t.Fatalf("ParseAgent(%q) = %q, the rule gives %q", s, name, want)
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

// agentRule is SPEC §2's rule for agent ids, written as plainly as it
// reads: drop one trailing "/", refuse an absolute path, empty elements,
// "." and "..", join the elements with "."; the result is 1-64 bytes of
// a-z 0-9 . _ - (ASCII capitals folded to lower case), not starting with
// "." or "-"; control characters anywhere are refused; every element is
// checked as written, then Gas Town's spellings of one agent are folded.
func agentRule(s string) (string, bool) {
	if s == "" || strings.HasPrefix(s, "/") {
		return "", false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", false
		}
	}
	elems := strings.Split(strings.TrimSuffix(s, "/"), "/")
	// Every element as written, before the folding drops any (mailfs's
	// departure from the SPEC, which folds first: "../mayor" is no mayor).
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return "", false
		}
		for i := 0; i < len(e); i++ {
			if c := e[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
				return "", false
			}
		}
	}
	// Gas Town's folding: rig/polecats/name, rig/crew/name and (today's Gas
	// Town, gagecane/gastown 57bcb59d) the legacy singular rig/polecat/name
	// are rig/name; rig/mayor and rig/deacon the town-level roles.
	switch {
	case len(elems) == 3 && (strings.EqualFold(elems[1], "polecats") || strings.EqualFold(elems[1], "polecat") || strings.EqualFold(elems[1], "crew")):
		elems = []string{elems[0], elems[2]}
	case len(elems) == 2 && (strings.EqualFold(elems[1], "mayor") || strings.EqualFold(elems[1], "deacon")):
		elems = elems[1:]
	}
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return "", false
		}
	}
	id := []byte(strings.Join(elems, "."))
	if len(id) < 1 || len(id) > maildir.MaxAgentLen || id[0] == '.' || id[0] == '-' {
		return "", false
	}
	for i, c := range id {
		if 'A' <= c && c <= 'Z' {
			id[i] = c + 'a' - 'A'
		} else if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return "", false
		}
	}
	return string(id), true
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
