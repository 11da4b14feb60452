package gitsync_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/maildir"
)

var liveSyncs = flag.Int("live.syncs", 3, "syncs per host in TestTownSyncsUnderLiveAgents")

// The proof that a sync never undoes a write: three hosts, each with its
// agents working without pause *while* the host syncs in a process of its
// own (sends, cc'd and to a queue, marks, archives, deletes, restores,
// claims on the queue's home, script drops), and about one sync in three
// killed with SIGKILL at a random git step. Every sync that was not
// killed must succeed. After the hosts sync in turn, every host holds
// the same tree, and every acknowledged write holds: no send lost, no id
// in two places (so no item claimed twice), no delete resurrected, no
// read regressed, no archive undone; fsck is clean everywhere.
func TestTownSyncsUnderLiveAgents(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	tw := newTown(t, "alpha", "beta", "gamma")
	wrapper := gitWrapper(t)
	agents := map[string]string{"alpha": "mayor", "beta": "witness", "gamma": "furiosa"}
	names := []string{"alpha", "beta", "gamma"}
	queue := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	for _, n := range names {
		h := tw.hosts[n]
		must(t, h.store.ClaimHome(agent(agents[n])))
		if n == "alpha" {
			must(t, h.store.CreateQueue("work"))
		}
		h.syncOK(t)
	}
	for _, n := range names {
		tw.hosts[n].syncOK(t)
	}

	ledgers := map[string]*ledger{}
	var kills, syncs atomic.Int64
	var wg sync.WaitGroup
	for i, n := range names {
		h, me := tw.hosts[n], agents[n]
		l := newLedger()
		ledgers[n] = l
		done := make(chan struct{})
		wg.Go(func() { // the host's syncs
			defer close(done)
			rng := rand.New(rand.NewPCG(seed, uint64(100+i)))
			for range *liveSyncs {
				kill := ""
				if rng.IntN(3) == 0 {
					kill = gitSteps[rng.IntN(len(gitSteps))] + ":" + []string{"before", "during", "after"}[rng.IntN(3)]
				}
				killed, err := h.syncIn(t, tw.remote, wrapper, kill, "")
				if err != nil {
					t.Error(err)
					return
				}
				if killed {
					kills.Add(1)
				}
				syncs.Add(1)
			}
		})
		wg.Go(func() { // the host's agent, working until the syncs are done
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			others := slices.DeleteFunc(slices.Collect(maps.Values(agents)), func(a string) bool { return a == me })
			for op := 0; ; op++ {
				select {
				case <-done:
					return
				default:
				}
				if err := l.liveOp(h, me, others, queue, rng, op); err != nil {
					t.Errorf("%s op %d: %v", n, op, err)
					return
				}
				// A pace, not a wait: writes still land at every step of
				// every sync, but the tree stays in the hundreds of files
				// (flat out it reached thousands, and the test minutes).
				time.Sleep(time.Duration(1+rng.IntN(4)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d syncs during work, %d of them killed", syncs.Load(), kills.Load())
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatal("the hosts did not converge in 5 rounds")
		}
		quiet := true
		for _, n := range names {
			rep := tw.hosts[n].syncOK(t)
			if len(rep.Pulled)+len(rep.Committed) > 0 {
				quiet = false
			}
		}
		if quiet && round > 0 {
			break
		}
	}

	// One ledger: what the home did to a message overrules what its
	// sender knew of it.
	all := newLedger()
	for _, n := range names {
		for id, w := range ledgers[n].want {
			if _, ok := all.want[id]; !ok {
				all.want[id] = w
			}
		}
	}
	for _, n := range names {
		for id, w := range ledgers[n].homed {
			all.want[id] = w
		}
	}
	t.Logf("%d messages in the ledger", len(all.want))
	hosts := []*host{tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]}
	all.check(t, hosts...)
	// No id in two places anywhere (a claim made twice would be).
	places := map[string][]string{}
	for p := range stateFiles(t, hosts[0].store) {
		if isMessagePath(p) {
			id := p[lastSlash(p)+1 : len(p)-len(".json")]
			places[id] = append(places[id], p)
		}
	}
	for id, ps := range places {
		if len(ps) > 1 {
			t.Errorf("%s is in %d places: %v", id, len(ps), ps)
		}
	}
	for _, h := range hosts {
		found, err := fsck.Check(context.Background(), h.store.Dir(), fsck.Options{})
		must(t, err)
		for _, f := range found {
			t.Errorf("fsck on %s: %s", h.name, f)
		}
	}
}

// liveOp is one operation of a host's agent me.
func (l *ledger) liveOp(h *host, me string, others []string, queue maildir.Address, rng *rand.Rand, op int) error {
	if l.homed == nil {
		l.homed = map[string]want{}
	}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	mine := func(archived bool) (*maildir.Message, error) {
		ms, err := h.store.List(agent(me), maildir.ListOptions{All: true, Archived: archived})
		if err != nil || len(ms) == 0 {
			return nil, err
		}
		return ms[rng.IntN(len(ms))], nil
	}
	// home returns what the ledger says of a message of me's mailbox.
	home := func(m *maildir.Message) want {
		if w, ok := l.homed[m.ID]; ok {
			return w
		}
		return want{box: agent(me), read: m.Read, archived: m.Archived}
	}
	switch r := rng.IntN(100); {
	case r < 30: // a send, maybe with a cc
		m := &maildir.Message{From: me, To: pick(others), Subject: fmt.Sprintf("op %d", op)}
		if rng.IntN(3) == 0 {
			m.CC = []string{me}
		}
		ms, err := h.store.Send(m)
		if err != nil {
			return err
		}
		for _, s := range ms {
			l.want[s.ID] = want{box: s.Box}
		}
	case r < 38: // work into the queue, from any host
		ms, err := h.store.Send(&maildir.Message{From: me, To: "queue:work", Subject: fmt.Sprintf("job %d", op)})
		if err != nil {
			return err
		}
		l.want[ms[0].ID] = want{box: queue}
	case r < 45: // a script drops a file into its own mailbox
		id := time.Now().UTC().Format("2006-01-02T15-04-05.000000000Z") + "-script"
		if err := dropFile(h, "state/mail/"+me+"/"+id+".json", `{"from":"script","subject":"dropped"}`+"\n"); err != nil {
			return err
		}
		l.homed[id] = want{box: agent(me)}
	case r < 62: // mark read or unread
		m, err := mine(false)
		if err != nil || m == nil {
			return err
		}
		w := home(m)
		if rng.IntN(4) == 0 {
			_, err = h.store.MarkUnread(agent(me), m.ID)
			w.read = false
		} else {
			_, err = h.store.MarkRead(agent(me), m.ID)
			w.read = true
		}
		if err != nil {
			return err
		}
		l.homed[m.ID] = w
	case r < 72: // archive
		m, err := mine(false)
		if err != nil || m == nil {
			return err
		}
		if _, err := h.store.Archive(agent(me), []string{m.ID}); err != nil {
			return err
		}
		w := home(m)
		w.archived = true
		l.homed[m.ID] = w
	case r < 77: // restore
		m, err := mine(true)
		if err != nil || m == nil {
			return err
		}
		errs, err := h.store.Restore(agent(me), []string{m.ID})
		if err := errors.Join(append(errs, err)...); err != nil {
			return err
		}
		w := home(m)
		w.archived = false
		l.homed[m.ID] = w
	case r < 85: // delete
		m, err := mine(rng.IntN(2) == 0)
		if err != nil || m == nil {
			return err
		}
		if err := h.store.Delete(agent(me), m.ID); err != nil {
			return err
		}
		w := home(m)
		w.deleted = true
		l.homed[m.ID] = w
	default: // a claim, on the queue's home
		if h.name != "alpha" {
			return nil
		}
		m, err := h.store.Claim(queue, agent(me))
		if errors.Is(err, maildir.ErrQueueEmpty) {
			return nil
		}
		if err != nil {
			return err
		}
		l.homed[m.ID] = want{box: agent(me)}
	}
	return nil
}

// dropFile writes a file as a careful script does: a dot-temp, then a
// rename into place.
func dropFile(h *host, rel, content string) error {
	return writeAtomic(h.store.Dir(), rel, content)
}

func lastSlash(p string) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return i
		}
	}
	return -1
}

func isMessagePath(p string) bool {
	for _, pre := range []string{"state/mail/", "state/queue/", "state/channel/"} {
		if len(p) > len(pre) && p[:len(pre)] == pre && p[len(p)-5:] == ".json" {
			return true
		}
	}
	return false
}

var _ = context.Background
