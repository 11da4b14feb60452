package live_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkRealClaudeDoorbell measures, against a running Claude Code
// session in a long tool call, the time from a send returning to the
// session queuing the doorbell (its debug log's "Routed user message to
// queue"), and, as the floor, the same for a bare push straight into the
// session's socket: what a program that knew of the mail the instant it
// landed would pay. It reports p50 and p99 of each.
func BenchmarkRealClaudeDoorbell(b *testing.B) {
	tw := newTown(b, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Default permissions (not bypassed): Claude Code then takes a push
	// from any local process, so the floor's bare push is delivered too.
	_, done := tw.start(ctx, "--allowedTools", "Bash")
	defer func() { os.WriteFile(tw.release, nil, 0o644); <-done }()
	rec := tw.deliverer()
	until(b, "the long tool call", 60*time.Second, func() bool { return len(tw.model.Requests()) >= 1 })
	log := filepath.Join(tw.home, "debug.log")
	routed := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), "Routed user message to queue")
	}
	waitRouted := func(n int) {
		for routed() <= n {
			time.Sleep(time.Millisecond)
		}
	}
	sock := rec.Session.Where
	b.Run("mailfs", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			n := routed()
			start := time.Now()
			if _, err := tw.store.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "urgent", Body: "b", Priority: maildir.Urgent}); err != nil {
				b.Fatal(err)
			}
			waitRouted(n)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	b.Run("floor", func(b *testing.B) {
		var lat []time.Duration
		for i := 0; b.Loop(); i++ {
			n := routed()
			start := time.Now()
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			c.Write([]byte(`{"type":"user","message":{"role":"user","content":"floor"}}` + "\n"))
			c.(*net.UnixConn).CloseWrite()
			c.Close()
			waitRouted(n)
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
