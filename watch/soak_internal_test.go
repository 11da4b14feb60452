package watch

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
)

// A long-running watcher's memory stays flat however many messages pass
// through its mailbox: after the first tenth of the events the heap (after
// a collection) may not grow past twice what it was, plus 4 MB. CI feeds
// 10,000 events; MAILFS_SOAK_EVENTS=1000000 feeds a million (docs/
// performance.md has that run).
func TestWatcherMemoryIsFlat(t *testing.T) {
	leakcheck.Check(t)
	events := 10000
	if n, err := strconv.Atoi(os.Getenv("MAILFS_SOAK_EVENTS")); err == nil && n > 0 {
		events = n
	}
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
	w := &Watcher{Store: s, Boxes: []maildir.Address{toastBox}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := w.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // cancels the watch and waits for it to end
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const batch = 10
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var early uint64
	start := time.Now()
	for r := range events / batch {
		if r == events/batch/10 {
			early = heap()
		}
		var names []string
		for i := range batch {
			at := t0.Add(time.Duration(r*batch+i) * time.Microsecond)
			m := &maildir.Message{From: "mayor", To: "toast", Subject: "s", Body: "b", Timestamp: at}
			name := filepath.Join(box, maildir.NewID(at, "mayor")+".json")
			if err := os.WriteFile(name+".tmp", m.Encode(), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(name+".tmp", name); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		}
		for range batch {
			select {
			case <-out:
			case <-time.After(30 * time.Second): // a failure's deadline, not a sleep
				t.Fatalf("round %d: a message was not reported", r)
			}
		}
		for _, name := range names {
			if err := os.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
	}
	late := heap()
	t.Logf("%d events in %v: heap %d KB after the first tenth, %d KB at the end", events, time.Since(start).Round(time.Millisecond), early/1024, late/1024)
	if late > 2*early+4<<20 {
		t.Fatalf("the heap grew from %d KB to %d KB over %d events", early/1024, late/1024, events)
	}
}
