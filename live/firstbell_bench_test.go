package live_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// BenchmarkFirstDoorbell times a fresh deliverer's first doorbell, from
// an urgent send to the ring (a fake door, in process), in a mailbox of
// 700, 10,000 and 100,000 read messages. Each iteration starts a new
// deliverer and waits, untimed, for its first scan of the mailbox; the
// ring includes the deliverer's coalescing window (20 ms), which does not
// depend on the mailbox. It reports the median; compare the sizes within
// one run.
func BenchmarkFirstDoorbell(b *testing.B) {
	for _, n := range []int{700, 10_000, 100_000} {
		b.Run(fmt.Sprintf("read=%d", n), func(b *testing.B) {
			root := filepath.Join(b.TempDir(), ".chipset")
			s, err := maildir.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			q, err := nudgeq.Open(root)
			if err != nil {
				b.Fatal(err)
			}
			box := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
			fillRead(b, s, box, n)
			var lat []time.Duration
			for b.Loop() {
				b.StopTimer()
				door := newFakeDoor()
				d := &live.Deliverer{Store: s, Nudges: q, Agent: "toast", Door: door,
					Hooks: &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q}, StateDir: b.TempDir()}}
				ready := make(chan struct{})
				live.OnWatching(d, func() { close(ready) })
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- d.Run(ctx) }()
				<-ready
				runtime.GC() // the scan's garbage is not the doorbell's cost
				b.StartTimer()
				t0 := time.Now()
				sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "wake", Body: "b", Priority: maildir.Urgent})
				if err != nil {
					b.Fatal(err)
				}
				<-door.rung
				b.StopTimer()
				lat = append(lat, time.Since(t0))
				cancel()
				<-done
				if err := s.Delete(box, sent[0].ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
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
