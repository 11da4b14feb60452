package watch

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
)

// A watcher that runs for long remembers what its folder holds, not every
// message it ever reported: 4,000 messages land and leave, ten at a time,
// each reported exactly once, and the ids it remembers stay under the
// bound (twice the folder plus forgetSlack) instead of reaching 4,000.
func TestWatcherForgetsWhatLeft(t *testing.T) {
	leakcheck.Check(t)
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AddAgent("toast"); err != nil {
		t.Fatal(err)
	}
	toastBox := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	box := filepath.Join(s.Dir(), filepath.FromSlash(toastBox.Dir(false)))
	var most atomic.Int64
	w := &Watcher{Store: s, Boxes: []maildir.Address{toastBox},
		remembered: func(n int) {
			if int64(n) > most.Load() {
				most.Store(int64(n))
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := w.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // cancels the watch and waits for it to end
	const rounds, batch = 400, 10
	reported := map[string]int{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for r := range rounds {
		var names []string
		for i := range batch {
			at := t0.Add(time.Duration(r*batch+i) * time.Millisecond)
			m := &maildir.Message{From: "mayor", To: "toast", Subject: "s", Body: "b", Timestamp: at}
			name := filepath.Join(box, maildir.NewID(at, "mayor")+".json")
			if err := os.WriteFile(name+".tmp", m.Encode(), 0o600); err != nil { // as a script drops one: write, rename
				t.Fatal(err)
			}
			if err := os.Rename(name+".tmp", name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		for range batch {
			select {
			case ev := <-events:
				reported[ev.ID]++
			case <-time.After(10 * time.Second): // a failure's deadline, not a sleep
				t.Fatalf("round %d: a message was not reported", r)
			}
		}
		for _, name := range names {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(reported) != rounds*batch {
		t.Fatalf("%d messages reported, want %d", len(reported), rounds*batch)
	}
	for id, n := range reported {
		if n != 1 {
			t.Fatalf("%s reported %d times", id, n)
		}
	}
	if bound := int64(2*batch + forgetSlack + 1); most.Load() > bound {
		t.Fatalf("the watcher remembered %d ids at most, over the bound %d", most.Load(), bound)
	}
}
