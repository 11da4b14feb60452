package maildir_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

func TestParseAgent(t *testing.T) {
	for in, want := range map[string]string{
		"mayor":                 "mayor",
		"Toast":                 "toast",
		"gastown/witness":       "gastown.witness",
		"gastown.witness":       "gastown.witness",
		"mayor/":                "mayor",
		"Rig/Binding.Name":      "rig.binding.name",
		"a_b-c.9":               "a_b-c.9",
		strings.Repeat("x", 64): strings.Repeat("x", 64),
	} {
		got, err := maildir.ParseAgent(in)
		if err != nil || got != want {
			t.Errorf("ParseAgent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestParseAgentRefuses(t *testing.T) {
	for _, in := range []string{
		"", "..", ".", "../x", "x/..", "x/../y", "/abs", "/", "a//b",
		"nul\x00byte", "new\nline", "tab\there", ".hidden", "-dash",
		strings.Repeat("x", 65), "space here", "ünïcode", "\u212Aelvin", "a:b", `back\slash`,
		// Elements that Gas Town's folding drops are checked before it.
		"../mayor", "$(id)/mayor", "évil/mayor", "a b/deacon", "x/../polecats/nux", "rig/polecats/..",
	} {
		got, err := maildir.ParseAgent(in)
		if !errors.Is(err, maildir.ErrInvalidAddress) {
			t.Errorf("ParseAgent(%q) = %q, %v; want ErrInvalidAddress", in, got, err)
		}
	}
}

func TestParseID(t *testing.T) {
	for in, want := range map[string]string{
		"2026-03-05T10-30-00.123456789Z-mayor":      "2026-03-05T10-30-00.123456789Z-mayor",
		"2026-03-05T10-30-00.123456789Z-mayor.json": "2026-03-05T10-30-00.123456789Z-mayor",
		"note from script":                          "note from script",
	} {
		if got, err := maildir.ParseID(in); err != nil || got != want {
			t.Errorf("ParseID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".json", ".hidden", "../x", "a/b", "nul\x00", strings.Repeat("x", 251)} {
		if _, err := maildir.ParseID(in); !errors.Is(err, maildir.ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v; want ErrInvalidID", in, err)
		}
	}
}

func TestStamps(t *testing.T) {
	at := time.Date(2026, 3, 5, 10, 30, 0, 123456789, time.UTC)
	id := maildir.NewID(at, "mayor")
	if id != "2026-03-05T10-30-00.123456789Z-mayor" {
		t.Fatalf("NewID = %q", id)
	}
	if got, ok := maildir.ParseStamp(id + ".json"); !ok || !got.Equal(at) {
		t.Fatalf("ParseStamp(%q) = %v, %v", id, got, ok)
	}
	// Whole seconds still get nine digits, so names sort in time order.
	if id := maildir.NewID(at.Truncate(time.Second), "x"); id != "2026-03-05T10-30-00.000000000Z-x" {
		t.Fatalf("NewID = %q", id)
	}
	short := "2026-03-05T10-30-00Z-mayor.json"
	if got, ok := maildir.ParseStamp(short); !ok || !got.Equal(at.Truncate(time.Second)) {
		t.Fatalf("ParseStamp(%q) = %v, %v", short, got, ok)
	}
	for _, name := range []string{"note.json", "2026-13-05T10-30-00Z-x.json", "2026-03-05T10-30-00Zx.json", "2026-03-05T10:30:00Z-x.json", ""} {
		if got, ok := maildir.ParseStamp(name); ok {
			t.Errorf("ParseStamp(%q) = %v, want no stamp", name, got)
		}
	}
}

func TestGasTownFolding(t *testing.T) {
	for in, want := range map[string]string{
		"gastown/polecats/Toast": "gastown.toast", "gastown/crew/max": "gastown.max", "gastown/Toast": "gastown.toast",
		"gastown/polecat/Toast": "gastown.toast", // the legacy singular (Gas Town's types.go, 57bcb59d)
		"gastown/mayor":         "mayor", "gastown/deacon/": "deacon", "mayor/": "mayor", "gastown/refinery": "gastown.refinery",
		"gastown/polecats": "gastown.polecats", "a/crew/b/c": "a.crew.b.c",
	} {
		if got, err := maildir.ParseAgent(in); err != nil || got != want {
			t.Errorf("ParseAgent(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"gastown/polecats/Toast": "gastown/Toast", "agent:gastown/crew/max": "gastown/max", "mayor/": "mayor",
		"@reviewers": "@reviewers", "queue:work": "queue:work", "Gastown/Witness": "Gastown/Witness",
	} {
		if got := maildir.Written(in); got != want {
			t.Errorf("Written(%q) = %q, want %q", in, got, want)
		}
	}
	if got := maildir.Similar("gastown.nuxx", []string{"gastown.nux", "mayor", "nux", "gastown.toast"}); len(got) < 1 || got[0] != "gastown.nux" {
		t.Errorf("Similar = %v", got)
	}
}

// Gas City's addresses map to mailboxes one to one: no two addresses share
// a mailbox, and every mailbox is a valid agent id.
func TestVerbatimMailboxIsOneToOne(t *testing.T) {
	for in, want := range map[string]string{
		"myrig/witness": "myrig.witness", "myrig.witness": "myrig_.witness", "MyRig/Witness": "_my_rig._witness",
		"frontend/mayor": "frontend.mayor", "mayor": "mayor", "a_b": "a__b", "human": "human",
	} {
		if got, err := maildir.VerbatimMailbox(in); err != nil || got != want {
			t.Errorf("VerbatimMailbox(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	seen := map[string]string{}
	alphabet := "aZ._/-9"
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		if prefix != "" {
			if name, err := maildir.VerbatimMailbox(prefix); err == nil {
				if other, ok := seen[name]; ok {
					t.Fatalf("%q and %q share the mailbox %q", other, prefix, name)
				}
				seen[name] = prefix
				if !maildir.ValidAgent(name) {
					t.Fatalf("%q maps to %q, no agent id", prefix, name)
				}
			}
		}
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+string(c), n-1)
		}
	}
	walk("", 5) // every address of up to five of these characters
	if len(seen) < 1000 {
		t.Fatalf("only %d addresses mapped", len(seen))
	}
	for _, bad := range []string{"", "../x", "a//b", "./a", "évil", "a b", "$(id)"} {
		if _, err := maildir.VerbatimMailbox(bad); !errors.Is(err, maildir.ErrInvalidAddress) {
			t.Errorf("VerbatimMailbox(%q) = %v", bad, err)
		}
	}
}
