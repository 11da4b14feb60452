package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
)

// A fresh watcher's first new message costs what any later one does: the
// first scan counts what it saw as kept, so neither that scan nor the
// first message after it lists the folder again. The folder holds more
// read messages than forgetSlack, which is what made the first message
// list it, whatever its size.
func TestFirstNewMessageListsNothing(t *testing.T) {
	leakcheck.Check(t)
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddAgent("toast"); err != nil {
		t.Fatal(err)
	}
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	dir := filepath.Join(s.Dir(), filepath.FromSlash(toast.Dir(false)))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	drop := func(i int, read bool) {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		m := &maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint(i), Body: "b", Timestamp: at, Read: read}
		name := filepath.Join(dir, maildir.NewID(at, "mayor")+".json")
		if err := os.WriteFile(name+".tmp", m.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(name+".tmp", name); err != nil {
			t.Fatal(err)
		}
	}
	const old, unread = forgetSlack + 500, 3
	for i := range old {
		drop(i, true)
	}
	for i := range unread {
		drop(old+i, false)
	}
	var listings atomic.Int64
	w := &Watcher{Store: s, Boxes: []maildir.Address{toast}, listed: func(maildir.Address) { listings.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := w.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // cancels the watch and waits for it to end
	next := func() Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second): // a failure's deadline, not a sleep
			t.Fatal("a message was not reported")
		}
		return Event{}
	}
	for range unread {
		if ev := next(); !ev.Initial {
			t.Fatalf("%s reported as new, want the first scan's", ev.ID)
		}
	}
	if n := listings.Load(); n != 1 {
		t.Fatalf("the first scan listed the folder %d times, want 1", n)
	}
	drop(old+unread, false)
	if ev := next(); ev.Initial {
		t.Fatalf("%s reported as found at start, want new", ev.ID)
	}
	if n := listings.Load(); n != 1 {
		t.Fatalf("the first new message listed the folder again (%d listings in all, want 1)", n)
	}
}
