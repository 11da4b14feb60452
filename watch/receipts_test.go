package watch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// WaitRead returns once every agent's copy is read or gone, however it got
// there: marked read, archived after being read, deleted. A queue's copy
// is not waited for.
func TestWaitReadSeesEveryEnding(t *testing.T) {
	leakcheck.Check(t)
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.CreateQueue("work")
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nux", "slit", "queue:work"}, Subject: "read me"})
	if err != nil || len(sent) != 4 {
		t.Fatalf("send: %v, %v", sent, err)
	}
	byBox := map[string]*maildir.Message{}
	for _, m := range sent {
		byBox[m.Box.String()] = m
	}
	done := make(chan []watch.Receipt)
	go func() {
		r, err := watch.WaitRead(context.Background(), s, sent)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	s.MarkRead(mbox("toast"), byBox["toast"].ID)
	s.MarkRead(mbox("nux"), byBox["nux"].ID)
	s.Archive(mbox("nux"), []string{byBox["nux"].ID})
	s.Delete(mbox("slit"), byBox["slit"].ID)
	var receipts []watch.Receipt
	select {
	case receipts = <-done:
	case <-time.After(10 * time.Second): // a failure's deadline
		t.Fatal("WaitRead did not return once every copy was read or gone")
	}
	if len(receipts) != 3 {
		t.Fatalf("receipts %+v: want one per agent copy, none for the queue", receipts)
	}
	for _, r := range receipts {
		switch r.Box.Name {
		case "toast", "nux":
			if r.ReadAt.IsZero() || r.Gone {
				t.Errorf("%s: %+v, want read", r.Box, r)
			}
		case "slit":
			if !r.Gone {
				t.Errorf("slit: %+v, want gone", r)
			}
		}
	}
	// A deadline ends the wait with what is known.
	more, _ := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "unread forever"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r, err := watch.WaitRead(ctx, s, more)
	if err != context.DeadlineExceeded || len(r) != 1 || !r[0].ReadAt.IsZero() {
		t.Fatalf("with a deadline: %+v, %v", r, err)
	}
}
