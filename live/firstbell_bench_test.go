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
// deliverer and waits, untimed, for its first scan of the mailbox. It
// reports the medians of the part from Send's return to the ring
// (ring-p50-µs: the deliverer's, including its 20 ms coalescing window)
// and of Send's own (send-p50-µs: the sender's fsyncs, which grow with the
// directory); compare the sizes within one run.
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
			var lat, sending []time.Duration
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
				t1 := time.Now()
				<-door.rung
				b.StopTimer()
				sending = append(sending, t1.Sub(t0))
				lat = append(lat, time.Since(t1))
				cancel()
				<-done
				if err := s.Delete(box, sent[0].ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			slices.Sort(lat)
			slices.Sort(sending)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "ring-p50-µs")
			b.ReportMetric(float64(sending[len(sending)/2].Microseconds()), "send-p50-µs")
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
