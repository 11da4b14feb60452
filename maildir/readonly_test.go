package maildir_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Reading a root creates nothing in it outside runtime/: not the format
// record, not the .gitignore (a root another mailfs made, one a person
// copied), whatever the readers' caches keep (What to build 7: a read-only
// count created the format record).
func TestReadersWriteNoRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	box := filepath.Join(dir, "state", "mail", "toast")
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	msg := `{"id":"1780000000000000000-mayor","from":"mayor","to":"toast","subject":"hi","timestamp":"2026-06-01T12:00:00Z"}`
	if err := os.WriteFile(filepath.Join(box, "1780000000000000000-mayor.json"), []byte(msg), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	for range 2 { // the second from the index the first may have kept
		if n, err := s.Count(toast); err != nil || n.Total != 1 {
			t.Fatalf("count: %+v, %v", n, err)
		}
		if _, err := s.List(toast, maildir.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"format", ".gitignore"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a reader created %s", name)
		}
	}
	// And a root that does not exist stays so.
	gone := filepath.Join(t.TempDir(), ".chipset")
	s2, _ := maildir.Open(gone)
	defer s2.Close()
	s2.Count(toast)
	if _, err := os.Lstat(gone); err == nil {
		t.Error("a reader created the root")
	}
}

// A FIFO at a mailbox's adds note (the sender's note for readers) never
// hangs a send into that mailbox: the note is opened without blocking and
// only as a regular file, so the send goes on without it (Why 7: the send
// hung after the message was written, before its id was printed, and a
// caller that timed out and retried sent it twice).
func TestAFIFOAtTheAddsNoteNeverHangsASend(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "mayor", "toast", "first")
	note := ts.path("runtime/index/state~mail~toast.adds")
	os.Remove(note)
	if err := syscall.Mkfifo(note, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 3 {
			if _, err := ts.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("after the fifo ", i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		if f, err := os.OpenFile(note, os.O_RDWR, 0); err == nil { // let the send go, so the test ends
			defer f.Close()
		}
		<-done
		t.Fatal("a send into the mailbox hung on the FIFO at its adds note")
	}
	if n, err := ts.Count(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}); err != nil || n.Total != 4 {
		t.Fatalf("count: %+v, %v", n, err)
	}
}
