package maildir_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// TestFilesOfThePreviousReleaseRead: message and group files written by
// the release that read them with a JSON scanner of its own
// (testdata/prevrelease, made by that release's code) read the same with
// encoding/json: every field, the --json line, the canonical encoding and
// the bytes a mark-read rewrite leaves (each value kept as the file spelt
// it) are the previous release's, byte for byte.
func TestFilesOfThePreviousReleaseRead(t *testing.T) {
	dir := filepath.Join("testdata", "prevrelease")
	golden := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456789, time.UTC)
	want := map[string]maildir.Message{
		"canonical": {From: "mayor", To: "gastown.toast", Subject: "WORK <gt-1> & \"more\" é", Body: "line one\n\ttabbed \u2028 sep\nemoji 🙂 and \x01",
			Type: "work_assignment", Priority: maildir.High, Timestamp: at, Thread: "thr-1", ReplyTo: "2026-11-19T00-00-00Z-mayor", CC: []string{"gastown.nux", "@crew"}},
		"odd": {From: "bob", To: "gastown.toast", Subject: "café / slash", Body: "a\nb <tag>", Priority: maildir.Urgent,
			Timestamp: time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC)},
	}
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toast, _ := maildir.ParseAddress("gastown.toast")
	box := filepath.Join(root, "state", "mail", "gastown.toast")
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		m, err := maildir.Parse(golden(name + ".json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		extra := m.Extra
		m.Extra = nil
		if !sameMessage(m, &w) {
			t.Errorf("%s reads as %+v, want %+v", name, m, w)
		}
		if name == "odd" && (string(extra["x-meta"]) != `{"k":[1, 2.50,  {"z":null}],"s":"\u00e9"}` || string(extra["labels"]) != `["a","b"]`) {
			t.Errorf("odd's unknown keys read as %q", extra)
		}
		m.Extra = extra
		m.ID, m.Path = name, "state/mail/gastown.toast/"+name+".json"
		if got := m.AppendJSONLine(nil); !bytes.Equal(got, golden(name+".json.line")) {
			t.Errorf("%s --json line:\n%s\nthe previous release's:\n%s", name, got, golden(name+".json.line"))
		}
		if got := m.Encode(); !bytes.Equal(got, golden(name+".json.reencoded")) {
			t.Errorf("%s encodes as\n%s\nthe previous release as\n%s", name, got, golden(name+".json.reencoded"))
		}
		// Marked read in a store, the file is rewritten as the previous
		// release rewrote it.
		id := maildir.NewID(at, name)
		if err := os.WriteFile(filepath.Join(box, id+".json"), golden(name+".json"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MarkRead(toast, id); err != nil {
			t.Fatalf("%s: mark read: %v", name, err)
		}
		if got, _ := os.ReadFile(filepath.Join(box, id+".json")); !bytes.Equal(got, golden(name+".read.json")) {
			t.Errorf("%s marked read:\n%s\nthe previous release wrote:\n%s", name, got, golden(name+".read.json"))
		}
	}
	// Group files: read, and expanded through one another.
	groups := filepath.Join(root, "state", "groups")
	if err := os.MkdirAll(groups, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"crew", "ops"} {
		if err := os.WriteFile(filepath.Join(groups, g+".json"), golden("group-"+g+".json"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.Group("crew")
	if err != nil || !slices.Equal(g.Members, []string{"gastown.nux", "gastown.toast", "@ops"}) {
		t.Fatalf("group crew: %+v, %v", g, err)
	}
	if names, err := s.Expand("crew"); err != nil || !slices.Equal(names, []string{"gastown.nux", "gastown.toast", "mayor"}) {
		t.Fatalf("crew expands to %v, %v", names, err)
	}
}

func sameMessage(a, b *maildir.Message) bool {
	return a.From == b.From && a.To == b.To && a.Subject == b.Subject && a.Body == b.Body && a.Type == b.Type &&
		a.Priority == b.Priority && a.Timestamp.Equal(b.Timestamp) && a.Thread == b.Thread && a.ReplyTo == b.ReplyTo &&
		slices.Equal(a.CC, b.CC) && a.Read == b.Read && a.Claim == nil && b.Claim == nil
}
