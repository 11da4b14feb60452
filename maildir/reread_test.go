package maildir_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// Reread lists as List with All does, and reads again only the files that
// changed since the read it is given: the messages of the others are the
// ones it read before.
func TestRereadReadsOnlyChangedFiles(t *testing.T) {
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	maildir.SetRacyWindow(s, -1) // files just written are vouched for: this test changes none within a tick
	toast := mbox("toast")
	var ids []string
	for _, subject := range []string{"one", "two", "three"} {
		sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: subject, Body: "x"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sent[0].ID)
	}
	same := func(r *maildir.FolderRead, archived bool) {
		t.Helper()
		want, err := s.List(toast, maildir.ListOptions{All: true, Archived: archived})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(r.Messages, want, func(a, b *maildir.Message) bool {
			return a.ID == b.ID && a.Read == b.Read && a.Subject == b.Subject && a.Archived == b.Archived
		}) {
			t.Fatalf("reread %v, list %v", r.Messages, want)
		}
	}
	first, err := s.Reread(toast, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	same(first, false)

	if _, err := s.MarkRead(toast, ids[1]); err != nil {
		t.Fatal(err)
	}
	drop := filepath.Join(s.Dir(), "state/mail/toast/2026-01-01T00-00-00Z-script.json")
	if err := os.WriteFile(drop, []byte(`{"from":"script","subject":"dropped"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := s.Reread(toast, false, first)
	if err != nil {
		t.Fatal(err)
	}
	same(second, false)
	kept := func(r *maildir.FolderRead, id string) bool {
		for _, m := range r.Messages {
			if m.ID == id {
				return slices.Contains(first.Messages, m)
			}
		}
		t.Fatalf("%s is not in the reread", id)
		return false
	}
	if !kept(second, ids[0]) || !kept(second, ids[2]) || kept(second, ids[1]) {
		t.Fatal("the reread read an unchanged file again, or kept a changed one")
	}

	// Gone files leave; the archive is read as List reads it.
	if err := os.Remove(drop); err != nil {
		t.Fatal(err)
	}
	if errs, err := s.Archive(toast, []string{ids[0]}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	third, err := s.Reread(toast, false, second)
	if err != nil {
		t.Fatal(err)
	}
	same(third, false)
	archived, err := s.Reread(toast, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	same(archived, true)
	if none, err := s.Reread(mbox("nobody"), false, nil); err != nil || len(none.Messages) != 0 {
		t.Fatalf("a mailbox with no folder: %v %v", none, err)
	}
}
