package gitsync_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

var offHomePeriod = flag.Duration("offhome.period", 4*time.Second,
	"the sync period of TestOffHomeClaimWaitInPeriods, which reports each off-home claim's wait in periods")

// syncLoops runs Every on each host with period d until the test ends,
// counting each host's finished syncs.
type syncLoops struct {
	mu    sync.Mutex
	syncs map[string]int
	errs  []error
	stop  func()
}

func startLoops(t *testing.T, d time.Duration, hosts ...*host) *syncLoops {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &syncLoops{syncs: map[string]int{}}
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() {
			h.sync.Every(ctx, d, func(_ *gitsync.Report, err error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				l.syncs[h.name]++
				if err != nil {
					l.errs = append(l.errs, err)
				}
			})
		})
	}
	l.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(l.stop)
	for _, h := range hosts {
		l.await(t, func() bool { return l.count(h.name) > 0 }, h.name+"'s first sync")
	}
	return l
}

func (l *syncLoops) count(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncs[name]
}

// await waits for cond; the bound only ends a test that would hang.
func (l *syncLoops) await(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			l.mu.Lock()
			t.Fatalf("waited 3 minutes for %s; syncs %v, errors %v", what, l.syncs, l.errs)
		}
	}
}

// An off-home claim is served within one sync period (issue 58, item 5):
// with both hosts syncing by Every and their ticks an hour away, an item
// beta's agent asks alpha (the queue's home) for reaches beta's mailbox
// with no tick at all — beta's sync takes the request up at once, alpha
// sees it on the remote and syncs (serving it and pushing the item in
// that one sync), and beta, waiting on its own request, sees alpha's
// push and syncs. It counts syncs, never time: alpha syncs once or twice
// and beta two or three times between the request and the item. (Every
// looks at the remote every second here, as for any period up to 8 s.)
// Before, alpha served at its next tick: an hour away.
func TestOffHomeClaimIsServedWithinOnePeriod(t *testing.T) {
	t.Parallel()
	_, a, b, work, ids := queueOnAlpha(t, "job")
	a.sync.Peek, b.sync.Peek = time.Second, time.Second // not an hour / 8
	loops := startLoops(t, time.Hour, a, b)
	a0, b0 := loops.count("alpha"), loops.count("beta")
	r, _, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	loops.await(t, func() bool { m, _ := b.store.Held(work, agent("witness")); return m != nil }, "the item on beta")
	loops.stop()
	m, err := b.store.Held(work, agent("witness"))
	must(t, err)
	if m.ID != ids[0] || m.Claim.Request != r.ID {
		t.Fatalf("beta's witness holds %s (request %q), want %s by request %s", m.ID, m.Claim.Request, ids[0], r.ID)
	}
	da, db := loops.count("alpha")-a0, loops.count("beta")-b0
	t.Logf("between the request and the item: alpha synced %d times, beta %d; no tick (the period is an hour)", da, db)
	// (The sync that brings the item may not have reported when the item
	// is seen: beta's count may be one short.)
	if da < 1 || da > 2 || db < 1 || db > 3 {
		t.Errorf("alpha synced %d times and beta %d; want 1-2 and 2-3", da, db)
	}
	if len(loops.errs) > 0 {
		t.Errorf("sync errors: %v", loops.errs)
	}
}

// TestOffHomeClaimWaitInPeriods measures off-home claims with both hosts
// syncing by Every at -offhome.period: the wait from each request to its
// item on beta, in periods (p50 and max, logged), and how many syncs each
// host ran per item. It asserts only that every item comes (the ratio is
// the machine's).
func TestOffHomeClaimWaitInPeriods(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement: several sync periods")
	}
	t.Parallel()
	_, a, b := twoHosts(t)
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	const n = 5
	for range n {
		_, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
		must(t, err)
	}
	a.syncOK(t)
	b.syncOK(t)
	d := *offHomePeriod
	loops := startLoops(t, d, a, b)
	var ratios []float64
	var syncsA, syncsB int
	for range n {
		a0, b0 := loops.count("alpha"), loops.count("beta")
		began := time.Now()
		_, _, err := b.store.RequestClaim(work, agent("witness"))
		must(t, err)
		var got *maildir.Message
		loops.await(t, func() bool { got, _ = b.store.Held(work, agent("witness")); return got != nil }, "the item on beta")
		ratios = append(ratios, float64(time.Since(began))/float64(d))
		syncsA, syncsB = syncsA+loops.count("alpha")-a0, syncsB+loops.count("beta")-b0
		_, err = b.store.MarkRead(agent("witness"), got.ID)
		must(t, err)
	}
	slices.Sort(ratios)
	t.Logf("off-home claim wait, in periods of %v: p50 %.2f, max %.2f (%v); syncs per item: alpha %.1f, beta %.1f",
		d, ratios[len(ratios)/2], ratios[len(ratios)-1], ratios, float64(syncsA)/n, float64(syncsB)/n)
}

// A request that waited at the home for an item (the queue was empty when
// it arrived) is served by the home's next claim, outside a sync; the
// home's Every then syncs within a second to push the item down, rather
// than at its tick — an hour away here, and the home's look at the
// remote (every period/8) as far. Before, the item sat in the home's tree
// until the tick: up to a whole period, on top of the request's trip.
func TestAnItemServedByAClaimAtTheHomeGoesDownAtOnce(t *testing.T) {
	t.Parallel()
	tw, a, b, work, _ := queueOnAlpha(t)
	r, _, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	b.syncOK(t)
	if rep := a.syncOK(t); len(rep.Served) != 0 {
		t.Fatalf("the queue is empty, yet alpha served %v", rep.Served)
	}
	loops := startLoops(t, time.Hour, a)
	a0 := loops.count("alpha")
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
	must(t, err)
	served, err := a.store.ServeQueue(work) // what a claim on the home does first
	must(t, err)
	if len(served) != 1 || served[0].Request.ID != r.ID {
		t.Fatalf("alpha's claim served %v, want request %s", served, r.ID)
	}
	item := "state/mail/witness/" + ms[0].ID + ".json"
	// A second and a sync; a minute only for a machine at load 40.
	if !itemReachesRemote(t, tw, item) {
		t.Fatalf("a minute after alpha served the request (tick an hour away), the item is not on the remote; alpha synced %d times since", loops.count("alpha")-a0)
	}
	if n := loops.count("alpha") - a0; n > 2 {
		t.Errorf("alpha synced %d times for one served request, want 1 (2 if a look at the remote raced it)", n)
	}
}

// A request that a home's sync brings while the queue is empty, and that
// a claim at the home serves before the loop looks again (here in the
// sync's report, the moment the sync ends), sends its item down at once
// too: the loop counts the requests the sync brought and did not serve
// among those it saw, so their going is a change. Before, it compared
// only with the requests from before the sync, which lacked this one,
// and the item sat on the home until the tick (an hour here; seed 301 of
// the town soak waited 1.2 s of a 4 s period for alpha's next look).
func TestAnItemServedAsTheSyncThatBroughtItsRequestEndsGoesDownAtOnce(t *testing.T) {
	t.Parallel()
	tw, a, b, work, _ := queueOnAlpha(t)
	r, _, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	b.syncOK(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	claimed := make(chan string, 1) // the item's path, once the claim served the request
	var served []maildir.Served
	var claimErr error
	first := true
	go func() {
		defer close(done)
		a.sync.Every(ctx, time.Hour, func(_ *gitsync.Report, err error) {
			if !first || err != nil {
				return
			}
			// The sync brought the request and found the queue empty; an
			// item comes, and a claim at the home serves the request first.
			first = false
			ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
			if claimErr = err; err == nil {
				served, claimErr = a.store.ServeQueue(work)
				claimed <- "state/mail/witness/" + ms[0].ID + ".json"
			} else {
				claimed <- ""
			}
		})
	}()
	defer func() { cancel(); <-done }()
	var item string
	select {
	case item = <-claimed:
	case <-time.After(2 * time.Minute):
		t.Fatal("alpha's loop made no first sync")
	}
	must(t, claimErr)
	// A quarter second and a sync; a minute only for a machine at load 40.
	if !itemReachesRemote(t, tw, item) {
		t.Fatalf("a minute after alpha's claim served the request its sync brought (tick an hour away), the item is not on the remote (served %v)", served)
	}
	if len(served) != 1 || served[0].Request.ID != r.ID {
		t.Fatalf("alpha's claim served %v, want request %s", served, r.ID)
	}
}

// itemReachesRemote reports whether the item (a path under
// state/mail/witness) is on the remote's main within a minute, looking
// every 50 ms.
func itemReachesRemote(t *testing.T, tw *town, item string) bool {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(gitRun(t, tw.remote, "ls-tree", "-r", "--name-only", "main", "--", "state/mail/witness"), item) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
