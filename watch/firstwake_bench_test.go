package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// BenchmarkFirstWake times a fresh watcher's first new message, from Send
// to the event (ns/op), and reports the medians of the part from Send's
// return to the event (wake-p50-µs) and of Send's own (send-p50-µs), in a mailbox of 700, 10,000 and 100,000 read
// messages: what `mailfs wait` and a deliverer's first doorbell wait for
// once their watcher has started. Each iteration starts a new watcher
// (untimed: its first scan reads the folder index) and removes the
// message after. The wake must not grow with the mailbox; compare the
// sizes within one run.
func BenchmarkFirstWake(b *testing.B) {
	for _, n := range []int{700, 10_000, 100_000} {
		b.Run(fmt.Sprintf("read=%d", n), func(b *testing.B) {
			f := newFixture(b)
			box := mbox("toast")
			fillRead(b, f.store, box, n)
			var sending, waking []time.Duration
			for b.Loop() {
				b.StopTimer()
				ctx, cancel := context.WithCancel(context.Background())
				w := &watch.Watcher{Store: f.store, Boxes: []maildir.Address{box}}
				ch, err := w.Watch(ctx)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC() // the scan's garbage is not the wake's cost
				b.StartTimer()
				t0 := time.Now()
				sent, err := f.store.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "wake", Body: "b"})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if ev := <-ch; ev.ID != sent[0].ID {
					b.Fatalf("woke for %s, want %s", ev.ID, sent[0].ID)
				}
				b.StopTimer()
				sending = append(sending, t1.Sub(t0))
				waking = append(waking, time.Since(t1))
				cancel()
				for range ch { // the watcher's goroutine ends with its channel
				}
				if err := f.store.Delete(box, sent[0].ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(median(sending), "send-p50-µs")
			b.ReportMetric(median(waking), "wake-p50-µs")
		})
	}
}

// median is the middle of ds, in microseconds.
func median(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds())
}

// fillRead drops n read messages into box as a script would, then counts
// the box once, which writes its folder index as any reader would.
func fillRead(b *testing.B, s *maildir.Store, box maildir.Address, n int) {
	b.Helper()
	dir := filepath.Join(s.Dir(), filepath.FromSlash(box.Dir(false)))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		at := t0.Add(time.Duration(i) * time.Millisecond)
		m := &maildir.Message{From: "mayor", To: box.Name, Subject: "old", Body: "b", Timestamp: at, Read: true}
		if err := os.WriteFile(filepath.Join(dir, maildir.NewID(at, "mayor")+".json"), m.Encode(), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if c, err := s.Count(box); err != nil || c.Total != n {
		b.Fatal(c, err)
	}
}
