package maildir_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkFanOut100 sends one message to a 100-member group ("group"),
// against 100 single sends ("singles") and the bare system calls of 100
// durable writes ("floor"). Every copy is durable before the op ends.
func BenchmarkFanOut100(b *testing.B) {
	members := make([]string, 100)
	for i := range members {
		members[i] = fmt.Sprintf("polecat%03d", i)
	}
	m := maildir.Message{From: "mayor", Subject: "standup in 5", Body: benchBody}
	b.Run("group", func(b *testing.B) {
		ts := newStore(b)
		if _, err := ts.CreateGroup("all-polecats", members); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			msg := m
			msg.To = "@all-polecats"
			if sent, err := ts.Send(&msg); err != nil || len(sent) != 100 {
				b.Fatal(len(sent), err)
			}
		}
	})
	b.Run("singles", func(b *testing.B) {
		ts := newStore(b)
		for b.Loop() {
			for _, to := range members {
				msg := m
				msg.To = to
				if _, err := ts.Send(&msg); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("floor", func(b *testing.B) {
		root := b.TempDir()
		data := m.Encode()
		dirs := make([]*os.File, len(members))
		for i, to := range members {
			os.MkdirAll(filepath.Join(root, to), 0o700)
			dirs[i], _ = os.Open(filepath.Join(root, to))
		}
		n := 0
		for b.Loop() {
			n++
			for i, to := range members {
				tmp := filepath.Join(root, to, fmt.Sprintf(".tmp-%d", n))
				f, _ := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
				f.Write(data)
				f.Sync()
				f.Close()
				os.Rename(tmp, filepath.Join(root, to, fmt.Sprintf("%d.json", n)))
				dirs[i].Sync()
			}
		}
	})
}

// BenchmarkClaim10k drains a queue of 10,000 items with 1 and 8 claimants.
// The floor is the bare system calls of the same stateless claim, inline:
// list the queue, rename the oldest item into the mailbox (the next one
// when another claimant won it), fsync both directories.
func BenchmarkClaim10k(b *testing.B) {
	const n = 10000
	for _, claimants := range []int{1, 8} {
		run := func(b *testing.B, claim func(ts *testStore, agent string) bool) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ts := newStore(b)
				putItems(b, ts, "work", n)
				b.StartTimer()
				var wg sync.WaitGroup
				for c := range claimants {
					agent := fmt.Sprintf("polecat%d", c)
					wg.Go(func() {
						for claim(ts, agent) {
						}
					})
				}
				wg.Wait()
			}
		}
		b.Run(fmt.Sprintf("mailfs/%d", claimants), func(b *testing.B) {
			run(b, func(ts *testStore, agent string) bool {
				_, err := ts.Claim(mbox("queue:work"), mbox(agent))
				if err != nil && !errors.Is(err, maildir.ErrQueueEmpty) {
					b.Error(err)
				}
				return err == nil
			})
		})
		// The floor does what a claim does, with plain system calls: take
		// the queues' lock, list, read the oldest item, write its rewrite
		// to a temp (fsync) and rename it over the item, fsync the queue,
		// move the item to the mailbox, fsync both, unlock.
		b.Run(fmt.Sprintf("floor/%d", claimants), func(b *testing.B) {
			run(b, func(ts *testStore, agent string) bool {
				q, box := ts.path("state/queue/work"), ts.path("state/mail/"+agent)
				os.MkdirAll(box, 0o700)
				lock, _ := os.Open(filepath.Dir(q))
				defer lock.Close()
				unix.Flock(int(lock.Fd()), unix.LOCK_EX)
				defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)
				ents, _ := os.ReadDir(q)
				names := make([]string, 0, len(ents))
				for _, e := range ents {
					names = append(names, e.Name())
				}
				slices.Sort(names)
				sync := func(dirs ...string) {
					for _, d := range dirs {
						f, _ := os.Open(d)
						f.Sync()
						f.Close()
					}
				}
				for _, name := range names {
					data, err := os.ReadFile(filepath.Join(q, name))
					if err != nil {
						continue
					}
					tmp := filepath.Join(q, ".tmp-"+name)
					f, _ := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
					f.Write(append(data, `{"claim":{}}`...))
					f.Sync()
					f.Close()
					os.Rename(tmp, filepath.Join(q, name))
					sync(q)
					if os.Rename(filepath.Join(q, name), filepath.Join(box, name)) == nil {
						sync(box, q)
						return true
					}
				}
				return false
			})
		})
	}
}

// BenchmarkClaimDepth times one claim with 10 and with 10,000 items
// waiting. The ratio of the two is what a claim's cost owes to the
// queue's length. Two ways of keeping the depth:
//
//   - drain: the queue is filled once, with b.N more items than the depth,
//     and claims follow each other as a polecat's do (10,000 waiting means
//     10,000 to 10,000+b.N); with 10, each claim is followed, off the
//     clock, by a newer item;
//   - refill: every claim is followed, off the clock, by a newer item, so
//     that the queue has changed before every claim — the claim cursor
//     can never be used, and each claim lists the queue.
func BenchmarkClaimDepth(b *testing.B) {
	for _, mode := range []string{"drain", "refill"} {
		for _, depth := range []int{10, 10000} {
			b.Run(fmt.Sprintf("%s/%d", mode, depth), func(b *testing.B) {
				ts := newStore(b)
				refill := mode == "refill" || depth < 100
				n := depth
				if !refill {
					n += b.N
				}
				putItems(b, ts, "work", n)
				dir := ts.path("state/queue/work")
				next := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ts.Claim(mbox("queue:work"), mbox("polecat")); err != nil {
						b.Fatal(err)
					}
					if refill {
						b.StopTimer()
						next = next.Add(time.Second)
						m := &maildir.Message{From: "mayor", To: "queue:work", Subject: "more", Timestamp: next}
						os.WriteFile(dir+"/"+maildir.NewID(next, "mayor")+".json", m.Encode(), 0o600)
						b.StartTimer()
					}
				}
			})
		}
	}
}
