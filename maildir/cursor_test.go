package maildir_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// The claim cursor (see folderindex.ClaimWindow) must keep claims oldest
// first and exactly once whatever is added, released or removed behind
// its back. These tests hold on any file system; where the clock is
// coarse the cursor is never used and they test the listing.

// queued returns a store with n items in queue:work, named in time order
// but written in a scrambled order, and their ids oldest first.
func queued(t *testing.T, n int) (*testStore, []string) {
	t.Helper()
	ts := newStore(t)
	dir := ts.path("state/queue/work")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range n {
		j := (i * 37) % n // every index once, out of order
		m := &maildir.Message{From: "mayor", To: "queue:work", Subject: "item", Type: "work_assignment",
			Priority: maildir.Normal, Timestamp: base.Add(time.Duration(j) * time.Second)}
		id := maildir.NewID(m.Timestamp, "mayor")
		if err := os.WriteFile(filepath.Join(dir, id+".json"), m.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ts, ids
}

func claimOne(t *testing.T, ts *testStore) string {
	t.Helper()
	m, err := ts.Claim(mbox("queue:work"), mbox("nux"))
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}

// dropItem puts an item named by stamp into the queue as a script does:
// written elsewhere, renamed in.
func dropItem(t *testing.T, ts *testStore, stamp time.Time) string {
	t.Helper()
	m := &maildir.Message{From: "script", To: "queue:work", Subject: "dropped", Type: "work_assignment",
		Priority: maildir.Normal, Timestamp: stamp}
	id := maildir.NewID(stamp, "script")
	tmp := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(tmp, m.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, ts.path("state/queue/work/"+id+".json")); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestClaimCursorOldestFirstExactlyOnce(t *testing.T) {
	const n = 3000 // more than one window of the cursor
	ts, ids := queued(t, n)
	got := []string{claimOne(t, ts)}
	if fine, _ := maildir.FineClock(ts.Store); fine {
		if _, err := os.Stat(ts.path(maildir.IndexDir + "/state~queue~work.cursor")); err != nil {
			t.Fatalf("no cursor after the first claim on a fine clock: %v", err)
		}
	}
	got = append(got, claimAll(t, ts)...)
	if !slices.Equal(got, ids) {
		t.Fatalf("claimed %d items; first differences: %v", len(got), firstDiff(got, ids))
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " != " + b[i]
		}
	}
	return "one is a prefix of the other"
}

func TestClaimCursorSeesWhatChangedBehindIt(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		// change acts after five claims (claimed: their ids, oldest
		// first; ids: the queue's) and returns the id the next claim
		// must take.
		change func(t *testing.T, ts *testStore, claimed, ids []string) string
	}{
		{"a script drops an older item", func(t *testing.T, ts *testStore, _, _ []string) string {
			return dropItem(t, ts, base.Add(-time.Hour))
		}},
		{"a script drops a newer one, then an older one", func(t *testing.T, ts *testStore, _, ids []string) string {
			dropItem(t, ts, base.Add(1000*time.Hour))
			claimOne(t, ts) // takes ids[5], leaves the cursor at the new stamp
			return dropItem(t, ts, base.Add(-time.Hour))
		}},
		{"mailfs release", func(t *testing.T, ts *testStore, claimed, _ []string) string {
			if _, err := ts.Release(mbox("nux"), claimed[2]); err != nil {
				t.Fatal(err)
			}
			return claimed[2]
		}},
		{"the next item removed", func(t *testing.T, ts *testStore, _, ids []string) string {
			if err := os.Remove(ts.path("state/queue/work/" + ids[5] + ".json")); err != nil {
				t.Fatal(err)
			}
			return ids[6]
		}},
		{"the next items removed by mailfs elsewhere", func(t *testing.T, ts *testStore, _, ids []string) string {
			for _, id := range ids[5:40] {
				if err := os.Rename(ts.path("state/queue/work/"+id+".json"), filepath.Join(t.TempDir(), id)); err != nil {
					t.Fatal(err)
				}
			}
			return ids[40]
		}},
		{"the cursor damaged", func(t *testing.T, ts *testStore, _, ids []string) string {
			if err := os.WriteFile(ts.path(maildir.IndexDir+"/state~queue~work.cursor"), []byte("mailfs-cursor/1 garbage\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return ids[5]
		}},
		{"the order file gone", func(t *testing.T, ts *testStore, _, ids []string) string {
			matches, _ := filepath.Glob(ts.path(maildir.IndexDir + "/state~queue~work.order-*"))
			for _, m := range matches {
				os.Remove(m)
			}
			return ids[5]
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, ids := queued(t, 200)
			var claimed []string
			for range 5 {
				claimed = append(claimed, claimOne(t, ts))
			}
			if !slices.Equal(claimed, ids[:5]) {
				t.Fatalf("claimed %v, want %v", claimed, ids[:5])
			}
			want := tc.change(t, ts, claimed, ids)
			if got := claimOne(t, ts); got != want {
				t.Fatalf("claimed %s, want %s", got, want)
			}
			// And the rest still come out oldest first, each once.
			rest := claimAll(t, ts)
			if !slices.IsSorted(rest) || len(slices.Compact(slices.Clone(rest))) != len(rest) {
				t.Fatalf("the rest is not oldest first, each once: %v", rest)
			}
		})
	}
}

// On a fine clock, a claim takes the cursor's word while the queue is
// unchanged: proven by rewriting the order file behind the cursor (which
// changes nothing in the queue) so that it names a later item first.
func TestClaimCursorIsUsed(t *testing.T) {
	ts, ids := queued(t, 100)
	if fine, _ := maildir.FineClock(ts.Store); !fine {
		t.Skip("the file system's clock is coarse: claims list the queue every time")
	}
	claimOne(t, ts)
	matches, err := filepath.Glob(ts.path(maildir.IndexDir + "/state~queue~work.order-*"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("order files: %v %v", matches, err)
	}
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	if names[1] != ids[1]+".json" {
		t.Fatalf("the order file's second name is %s, want %s", names[1], ids[1])
	}
	// Same length, so the cursor's byte offset still lands on a name.
	names[1], names[2] = names[2], names[1]
	if err := os.WriteFile(matches[0], []byte(strings.Join(names, "\x00")+"\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := claimOne(t, ts); got != ids[2] {
		t.Fatalf("claimed %s: the cursor was not used (want %s)", got, ids[2])
	}
}

// Senders and claimers race on one queue: senders take the claim lock
// shared, claimers exclusive; every item comes out exactly once.
func TestClaimCursorWithSendersRacing(t *testing.T) {
	ts, _ := queued(t, 500)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	const senders, each = 2, 150
	var wg sync.WaitGroup
	var sent atomic.Int64
	for range senders {
		wg.Go(func() {
			for range each {
				if _, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "item"}); err != nil {
					t.Error(err)
					return
				}
				sent.Add(1)
			}
		})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	for c := range 4 {
		wg.Go(func() {
			agent := mbox(fmt.Sprintf("polecat%d", c))
			for {
				m, err := ts.Claim(mbox("queue:work"), agent)
				if errors.Is(err, maildir.ErrQueueEmpty) {
					if sent.Load() == senders*each {
						return
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				seen[m.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	// A claimer may have stopped just before the last sends landed.
	for _, id := range claimAll(t, ts) {
		seen[id]++
	}
	if len(seen) != 500+senders*each {
		t.Fatalf("%d items claimed, want %d", len(seen), 500+senders*each)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s claimed %d times", id, n)
		}
	}
}

// claimAll claims from queue:work into nux's mailbox until the queue is
// empty, and returns the ids in the order they came.
func claimAll(t *testing.T, ts *testStore) []string {
	t.Helper()
	var ids []string
	for {
		m, err := ts.Claim(mbox("queue:work"), mbox("nux"))
		if errors.Is(err, maildir.ErrQueueEmpty) {
			return ids
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
}

// When items arrive between every two claims, a window would be listed
// again at every claim: claims take the cheap pass instead (no order
// file), oldest first still, and once the queue is quiet again a claim
// lists a window and the next ones use it.
func TestClaimCursorUnderChurn(t *testing.T) {
	ts, ids := queued(t, 200)
	if fine, _ := maildir.FineClock(ts.Store); !fine {
		t.Skip("the file system's clock is coarse: claims list the queue every time")
	}
	orders := func() int {
		m, err := filepath.Glob(ts.path(maildir.IndexDir + "/state~queue~work.order-*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	if got := claimOne(t, ts); got != ids[0] || orders() != 1 {
		t.Fatalf("first claim: %s, %d order files", got, orders())
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		older := dropItem(t, ts, base.Add(-time.Duration(i+1)*time.Hour))
		if got := claimOne(t, ts); got != older {
			t.Fatalf("churn claim %d took %s, want the older drop %s", i, got, older)
		}
		if orders() != 0 {
			t.Fatalf("churn claim %d listed a window", i)
		}
	}
	// Quiet again: this claim lists a window, and the next uses it.
	if got := claimOne(t, ts); got != ids[1] || orders() != 1 {
		t.Fatalf("the first quiet claim: %s, %d order files", got, orders())
	}
	matches, _ := filepath.Glob(ts.path(maildir.IndexDir + "/state~queue~work.order-*"))
	data, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	names[1], names[2] = names[2], names[1] // behind the cursor's back, as TestClaimCursorIsUsed
	if err := os.WriteFile(matches[0], []byte(strings.Join(names, "\x00")+"\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := claimOne(t, ts); got != ids[3] {
		t.Fatalf("claimed %s: the quiet queue's window was not used (want %s)", got, ids[3])
	}
	if rest := claimAll(t, ts); !slices.IsSorted(rest) {
		t.Fatalf("the rest is not oldest first: %v", rest)
	}
}
