package watch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// BenchmarkLatency measures the time from Send returning to the event
// arriving (negative: the event came first), over b.N messages sent back to
// back (run it with -benchtime=2000x), and reports the median and p99. The
// poll backend runs at its default interval.
func BenchmarkLatency(b *testing.B) {
	for _, bc := range []struct {
		name string
		poll time.Duration
	}{{"fsnotify", 0}, {"poll", watch.DefaultPoll}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			f.send(b, "toast", "make the mailbox")
			ch := f.watch(b, &watch.Watcher{Boxes: []maildir.Address{mbox("toast")}, Poll: bc.poll})
			next(b, ch)
			var mu sync.Mutex
			sentAt := map[string]time.Time{}
			lat := make([]time.Duration, 0, b.N)
			done := make(chan struct{})
			go func() {
				defer close(done)
				for len(lat) < b.N {
					ev := <-ch
					now := time.Now()
					mu.Lock()
					at, ok := sentAt[ev.ID]
					mu.Unlock()
					for !ok { // the event can beat Send's return by a hair
						mu.Lock()
						at, ok = sentAt[ev.ID]
						mu.Unlock()
					}
					lat = append(lat, now.Sub(at))
				}
			}()
			b.ResetTimer()
			for range b.N {
				m, err := f.store.Send(&maildir.Message{From: "m", To: "toast", Subject: "s"})
				if err != nil {
					b.Fatal(err)
				}
				mu.Lock()
				sentAt[m[0].ID] = time.Now()
				mu.Unlock()
			}
			<-done
			slices.Sort(lat)
			// A latency is negative when the event arrived before Send
			// returned: the event fires at the rename, and Send goes on to
			// fsync the directory.
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkIdle1000 watches 1,000 empty mailboxes for two seconds and
// reports the CPU the whole process used meanwhile, per second of wall
// time. The ns/op figure is meaningless here.
func BenchmarkIdle1000(b *testing.B) {
	for _, bc := range []struct {
		name string
		poll time.Duration
	}{{"fsnotify", 0}, {"poll", watch.DefaultPoll}} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			var agents []string
			for i := range 1000 {
				agents = append(agents, fmt.Sprintf("polecat-%04d", i))
				os.MkdirAll(filepath.Join(f.dir, "state/mail", agents[i]), 0o700)
			}
			f.watch(b, &watch.Watcher{Boxes: boxes(agents), Poll: bc.poll})
			const window = 2 * time.Second
			before := cpu()
			for b.Loop() {
				time.Sleep(window / time.Duration(max(b.N, 1))) // idle: the measurement window, not a wait
			}
			used := cpu() - before
			b.ReportMetric(float64(used.Microseconds())/1000/window.Seconds(), "cpu-ms/s")
		})
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
