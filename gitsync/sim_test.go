package gitsync_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/maildir"
)

var simOps = flag.Int("sim.ops", 400, "operations in TestTownOnThreeHosts")

// The proof of SPEC §10: three hosts of one town, a bare remote, agents
// homed on each host doing random work — sends, cc, queue items, channel
// posts, marks, deletes, sweeps, claims, releases, group edits, restores,
// refused changes to other hosts' objects — and syncs at random moments.
// Every sync must succeed (0 conflicts); at the end, after the hosts sync
// in turn, every host must hold the same state tree, every message sent
// and not deleted must be in exactly one place (0 lost, 0 in two places),
// no deleted message may be back (0 resurrected), and fsck must be clean
// with private modes everywhere.
func TestTownOnThreeHosts(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (ops %d)", seed, *simOps)
	tw := newTown(t, "alpha", "beta", "gamma")
	agents := map[string][]string{
		"alpha": {"mayor", "refinery"},
		"beta":  {"witness", "nux"},
		"gamma": {"furiosa", "slit"},
	}
	homeOf := map[string]string{}
	for h, as := range agents {
		for _, a := range as {
			homeOf[a] = h
		}
	}
	all := slices.Sorted(maps.Keys(homeOf))

	// Set-up: each host claims its agents; alpha makes the queue, beta
	// the group, gamma the channel; they sync in turn.
	alpha, beta, gamma := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	for _, name := range []string{"alpha", "beta", "gamma"} {
		h := tw.hosts[name]
		for _, a := range agents[name] {
			if err := h.store.ClaimHome(maildir.Address{Kind: maildir.KindAgent, Name: a}); err != nil {
				t.Fatal(err)
			}
		}
		switch name {
		case "alpha":
			must(t, h.store.CreateQueue("work"))
		case "beta":
			_, err := h.store.CreateGroup("crew", []string{"witness", "furiosa"})
			must(t, err)
		case "gamma":
			must(t, h.store.CreateChannel("news", maildir.ChannelChange{RetainCount: ptr(4)}))
		}
		h.syncOK(t)
	}
	for _, h := range []*host{alpha, beta} {
		h.syncOK(t)
	}

	live := map[string]bool{}    // ids sent and not deleted
	deleted := map[string]bool{} // ids deleted by their home
	queued := 0
	syncs, refusals := 0, 0
	var mu sync.Mutex // guards the above
	hostNames := []string{"alpha", "beta", "gamma"}
	box := func(a string) maildir.Address { return maildir.Address{Kind: maildir.KindAgent, Name: a} }
	sent := func(ms []*maildir.Message) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			live[m.ID] = true
			if m.Box.Kind == maildir.KindQueue {
				queued++
			}
		}
	}
	count := func(n *int) { mu.Lock(); *n++; mu.Unlock() }

	// work is one host's agents at work: ops random operations, syncs
	// among them. It returns the first thing that went wrong.
	work := func(h *host, rng *rand.Rand, ops int) error {
		pick := func(list []string) string { return list[rng.IntN(len(list))] }
		// some returns a message of a local agent's mailbox (or archive).
		some := func(archived bool) (maildir.Address, *maildir.Message, error) {
			a := box(pick(agents[h.name]))
			ms, err := h.store.List(a, maildir.ListOptions{All: true, Archived: archived})
			if err != nil || len(ms) == 0 {
				return a, nil, err
			}
			return a, ms[rng.IntN(len(ms))], nil
		}
		for op := range ops {
			switch r := rng.IntN(100); {
			case r < 25: // a send, maybe with a cc or to the group
				m := &maildir.Message{From: pick(all), To: pick(all), Subject: fmt.Sprintf("%s op %d", h.name, op), Body: "x"}
				switch rng.IntN(4) {
				case 0:
					m.CC = []string{pick(all)}
				case 1:
					m.To = "@crew"
				}
				ms, err := h.store.Send(m)
				if err != nil && !errors.Is(err, maildir.ErrNoRecipients) {
					return fmt.Errorf("op %d send: %w", op, err)
				}
				sent(ms)
			case r < 32: // work into the queue, from any host
				ms, err := h.store.Send(&maildir.Message{From: pick(all), To: "queue:work", Subject: fmt.Sprintf("job %d", op)})
				if err != nil {
					return fmt.Errorf("op %d queue send: %w", op, err)
				}
				sent(ms)
			case r < 36: // a channel post, from any host
				ms, err := h.store.Send(&maildir.Message{From: pick(all), To: "channel:news", Subject: fmt.Sprintf("news %d", op)})
				if err != nil {
					return fmt.Errorf("op %d post: %w", op, err)
				}
				sent(ms)
			case r < 48: // mark read (or unread) in a local mailbox
				a, m, err := some(false)
				if err == nil && m != nil {
					if rng.IntN(4) == 0 {
						_, err = h.store.MarkUnread(a, m.ID)
					} else {
						_, err = h.store.MarkRead(a, m.ID)
					}
				}
				if err != nil {
					return fmt.Errorf("op %d mark: %w", op, err)
				}
			case r < 54: // delete
				a, m, err := some(rng.IntN(2) == 0)
				if err == nil && m != nil {
					if err = h.store.Delete(a, m.ID); err == nil {
						mu.Lock()
						delete(live, m.ID)
						deleted[m.ID] = true
						mu.Unlock()
					}
				}
				if err != nil {
					return fmt.Errorf("op %d delete: %w", op, err)
				}
			case r < 58: // a sweep: local homes only
				sw := &archive.Sweeper{Store: h.store, OlderThan: time.Nanosecond}
				if _, err := sw.Sweep(context.Background()); err != nil {
					return fmt.Errorf("op %d sweep: %w", op, err)
				}
			case r < 61: // restore
				a, m, err := some(true)
				if err == nil && m != nil {
					errs, rerr := h.store.Restore(a, []string{m.ID})
					err = errors.Join(append(errs, rerr)...)
				}
				if err != nil {
					return fmt.Errorf("op %d restore: %w", op, err)
				}
			case r < 68: // claim: only the queue's home may
				_, err := h.store.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, box(pick(all)))
				switch {
				case h != alpha && errors.Is(err, maildir.ErrNotHome):
					count(&refusals)
				case h == alpha && (err == nil || errors.Is(err, maildir.ErrQueueEmpty)):
				default:
					return fmt.Errorf("op %d claim: %v", op, err)
				}
			case r < 71: // release what a local agent claimed
				if h != alpha {
					continue
				}
				a, m, err := some(false)
				if err == nil && m != nil && m.Claim != nil {
					_, err = h.store.Release(a, m.ID)
				}
				if err != nil {
					return fmt.Errorf("op %d release: %w", op, err)
				}
			case r < 74: // a group edit: only beta, its home, may
				g, err := h.store.Group("crew")
				if err != nil {
					return err
				}
				if rng.IntN(2) == 0 {
					_, err = h.store.AddMembers("crew", []string{pick(all)})
				} else if len(g.Members) > 1 {
					_, err = h.store.RemoveMembers("crew", g.Members[len(g.Members)-1:])
				} else {
					continue
				}
				switch {
				case h != beta && errors.Is(err, maildir.ErrNotHome):
					count(&refusals)
				case h == beta && err == nil:
				default:
					return fmt.Errorf("op %d group edit: %v", op, err)
				}
			case r < 94: // a change to another host's mailbox is refused
				var others []string
				for _, a := range all {
					if homeOf[a] != h.name {
						others = append(others, a)
					}
				}
				a := box(pick(others))
				ms, err := h.store.List(a, maildir.ListOptions{All: true})
				if err != nil {
					return err
				}
				if len(ms) == 0 {
					continue
				}
				if _, err := h.store.MarkRead(a, ms[0].ID); !errors.Is(err, maildir.ErrNotHome) {
					return fmt.Errorf("op %d: mark-read of %s's mail: %v, want refused", op, a, err)
				}
				if err := h.store.Delete(a, ms[0].ID); !errors.Is(err, maildir.ErrNotHome) {
					return fmt.Errorf("op %d: delete of %s's mail: %v, want refused", op, a, err)
				}
				count(&refusals)
			default: // a sync, racing the other hosts' for the remote
				if _, err := h.sync.Sync(context.Background()); err != nil {
					return fmt.Errorf("op %d sync: %w", op, err)
				}
				count(&syncs)
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for i, name := range hostNames {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		wg.Go(func() {
			if err := work(tw.hosts[name], rng, *simOps/len(hostNames)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Every host syncs in turn until a whole round brings nothing new.
	for round := 0; ; round++ {
		if round == 5 {
			t.Fatal("the hosts did not converge in 5 rounds")
		}
		quiet := true
		for _, n := range hostNames {
			rep := tw.hosts[n].syncOK(t)
			syncs++
			if len(rep.Pulled)+len(rep.Committed) > 0 {
				quiet = false
			}
			if len(rep.Duplicates)+len(rep.Renamed)+len(rep.Yielded) > 0 {
				t.Errorf("sync on %s: duplicates %v, renamed %v, yielded %v", n, rep.Duplicates, rep.Renamed, rep.Yielded)
			}
		}
		if quiet && round > 0 {
			break
		}
	}
	t.Logf("%d ops, %d syncs, %d refusals, %d live messages, %d deleted, %d queued", *simOps, syncs, refusals, len(live), len(deleted), queued)

	// The same tree everywhere.
	want := stateFiles(t, alpha.store)
	for _, h := range []*host{beta, gamma} {
		got := stateFiles(t, h.store)
		for p := range want {
			if _, ok := got[p]; !ok {
				t.Errorf("%s lacks %s", h.name, p)
			} else if got[p] != want[p] {
				t.Errorf("%s has another %s", h.name, p)
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s has %s, alpha does not", h.name, p)
			}
		}
	}
	// And so the same inbox views.
	for _, a := range all {
		var views []string
		for _, n := range hostNames {
			ms, err := tw.hosts[n].store.List(box(a), maildir.ListOptions{All: true})
			must(t, err)
			var v []string
			for _, m := range ms {
				v = append(v, fmt.Sprintf("%s:%v", m.ID, m.Read))
			}
			views = append(views, strings.Join(v, ","))
		}
		if views[0] != views[1] || views[1] != views[2] {
			t.Errorf("inbox %s differs between hosts:\n%v", a, views)
		}
	}

	// 0 lost, 0 in two places, 0 resurrected.
	places := map[string][]string{}
	for p := range want {
		if strings.HasPrefix(p, "state/mail/") || strings.HasPrefix(p, "state/queue/") || strings.HasPrefix(p, "state/channel/") && strings.Count(p, "/") >= 3 {
			id, ok := strings.CutSuffix(path.Base(p), ".json")
			if ok {
				places[id] = append(places[id], p)
			}
		}
	}
	for id := range live {
		switch n := len(places[id]); {
		case n == 0:
			t.Errorf("lost: %s", id)
		case n > 1:
			t.Errorf("in %d places: %s %v", n, id, places[id])
		}
	}
	for id := range deleted {
		if len(places[id]) > 0 {
			t.Errorf("resurrected: %s at %v", id, places[id])
		}
	}
	for id, ps := range places {
		if !live[id] {
			t.Errorf("a message nobody sent: %s %v", id, ps)
		}
	}
	for _, n := range hostNames {
		found, err := fsck.Check(tw.hosts[n].store.Dir(), fsck.Options{})
		must(t, err)
		for _, f := range found {
			t.Errorf("fsck on %s: %s", n, f)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
