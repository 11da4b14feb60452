package nudgeq_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/nudgeq"
)

// BenchmarkEnqueue queues nudges; the floor is the same durability written
// inline: a temp in the queue directory, write, rename (no fsync, as for
// nudges). Both queues are emptied, untimed, every 40 nudges so that they
// stay below the cap of 50.
func BenchmarkEnqueue(b *testing.B) {
	empty := func(b *testing.B, dir string, i int) {
		if i%40 == 0 {
			b.StopTimer()
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				os.Remove(filepath.Join(dir, e.Name()))
			}
			b.StartTimer()
		}
	}
	b.Run("mailfs", func(b *testing.B) {
		f := newFixture(b)
		f.q.Now = nil
		i := 0
		for b.Loop() {
			if _, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: "mayor", Message: "check your mail"}, 0); err != nil {
				b.Fatal(err)
			}
			i++
			empty(b, f.box("a"), i)
		}
	})
	b.Run("floor", func(b *testing.B) {
		dir := b.TempDir()
		data := []byte(`{"expires_at":"2026-06-01T12:30:00Z","message":"check your mail","priority":"normal","sender":"mayor","timestamp":"2026-06-01T12:00:00Z"}` + "\n")
		i := 0
		for b.Loop() {
			i++
			tmp := filepath.Join(dir, fmt.Sprintf(".tmp-%d", i))
			f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			f.Write(data)
			f.Close()
			if err := os.Rename(tmp, filepath.Join(dir, fmt.Sprintf("%019d-%08x.json", time.Now().UnixNano(), i))); err != nil {
				b.Fatal(err)
			}
			empty(b, dir, i)
		}
	})
}

// BenchmarkDrain10k drains 10,000 queued nudges with 1 and 4 concurrent
// drainers; the floor is a bare loop doing the same claim: list, rename
// each file to a claimed name (losers skip), read it, remove it.
func BenchmarkDrain10k(b *testing.B) {
	const n = 10000
	for _, drainers := range []int{1, 4} {
		run := func(b *testing.B, drain func(f *fixture) int) {
			f := newFixture(b)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				putNudges(b, f, "a", n, t0)
				b.StartTimer()
				var wg sync.WaitGroup
				var mu sync.Mutex
				total := 0
				for range drainers {
					wg.Go(func() {
						got := drain(f)
						mu.Lock()
						total += got
						mu.Unlock()
					})
				}
				wg.Wait()
				if total != n {
					b.Fatalf("drained %d of %d", total, n)
				}
			}
		}
		b.Run(fmt.Sprintf("mailfs/%d", drainers), func(b *testing.B) {
			run(b, func(f *fixture) int {
				batch, err := f.q.Drain("a")
				if err != nil {
					b.Error(err)
				}
				return len(batch.Nudges)
			})
		})
		b.Run(fmt.Sprintf("floor/%d", drainers), func(b *testing.B) {
			run(b, func(f *fixture) int {
				dir := f.box("a")
				ents, err := os.ReadDir(dir)
				if err != nil {
					b.Error(err)
					return 0
				}
				got := 0
				for _, e := range ents {
					name := e.Name()
					if strings.Contains(name, ".claimed.") {
						continue
					}
					claim := filepath.Join(dir, name+".claimed.x"+fmt.Sprint(time.Now().UnixNano()))
					if os.Rename(filepath.Join(dir, name), claim) != nil {
						continue
					}
					if _, err := os.ReadFile(claim); err != nil {
						b.Error(err)
					}
					os.Remove(claim)
					got++
				}
				return got
			})
		})
	}
}
