package webview_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A long-running server's memory stays flat however much mail passes
// through the town: rounds of messages dropped into a mailbox, each
// pushed to an open live feed, the overview rendered, the messages
// removed. After the first tenth of the rounds, the heap (after a
// collection) may not grow past twice what it was plus 4 MB. CI feeds
// 2,000 messages; MAILFS_SOAK_EVENTS=1000000 feeds a million
// (docs/performance.md has that run).
func TestServerMemoryIsFlat(t *testing.T) {
	events := 2000
	if n, err := strconv.Atoi(os.Getenv("MAILFS_SOAK_EVENTS")); err == nil && n > 0 {
		events = n
	}
	const batch = 10
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "first"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := tw.feed(ctx)
	seen := make(chan string, 4*batch)
	go func() {
		lines := bufio.NewScanner(resp.Body)
		for lines.Scan() {
			if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
				var ev struct{ ID string }
				if json.Unmarshal([]byte(data), &ev) == nil && ev.ID != "" {
					seen <- ev.ID
				}
			}
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	box := filepath.Join(tw.dir, "state/mail/toast")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var early uint64
	began := time.Now()
	for r := range events / batch {
		if r == events/batch/10 {
			early = heap()
		}
		want := map[string]bool{}
		var paths []string
		for i := range batch {
			at := t0.Add(time.Duration(r*batch+i) * time.Microsecond)
			id := maildir.NewID(at, "mayor")
			m := &maildir.Message{From: "mayor", To: "toast", Subject: "s", Body: "b", Timestamp: at}
			p := filepath.Join(box, id+".json")
			if err := os.WriteFile(filepath.Join(box, ".t"), m.Encode(), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(box, ".t"), p); err != nil {
				t.Fatal(err)
			}
			want[id], paths = true, append(paths, p)
		}
		for len(want) > 0 {
			select {
			case id := <-seen:
				delete(want, id)
			case <-time.After(30 * time.Second): // a failure's deadline, not a sleep
				t.Fatalf("round %d: the live feed did not report %d messages", r, len(want))
			}
		}
		if status, _ := tw.get("/"); status != 200 {
			t.Fatalf("round %d: the overview: %d", r, status)
		}
		for _, p := range paths {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	late := heap()
	t.Logf("%d messages in %v: heap %d KB after a tenth, %d KB at the end", events, time.Since(began).Round(time.Millisecond), early>>10, late>>10)
	if late > 2*early+4<<20 {
		t.Errorf("the heap grew from %d KB to %d KB over %d messages", early>>10, late>>10, events)
	}
}
