package gitsync_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

var (
	simOps  = flag.Int("sim.ops", 300, "operations in TestTownOnThreeHosts")
	simSeed = flag.Uint64("sim.seed", 0, "the seed of TestTownOnThreeHosts (0: the clock's), to replay a run it logged")
	simKeep = flag.String("sim.keep", "", "a folder to copy TestTownOnThreeHosts's hosts and remote into when it fails")
)

// The proof of SPEC §10: three hosts of one town, a bare remote, agents
// homed on each host doing random work — sends, cc, queue items, channel
// posts, marks, deletes, sweeps, claims, releases, group edits, restores,
// refused changes to other hosts' objects — and syncs at random moments.
// Meanwhile a person force-pushes the remote now and then (see person):
// winds it back, squashes it (as it is, or wound back first, or right
// after a host's sync was killed), or rewrites it with files dropped;
// deletes the branch or the whole repository, makes it refuse pushes,
// removes the tombstones in a commit of their own, has a host compact the
// remote while the others push, or gives a second machine a host's name.
//
// Every sync must succeed (0 conflicts), but for a host that cannot know a
// rewrite was meant: it must refuse at every sync, changing nothing, until
// the person runs the command its refusal names. At the end, after the
// hosts sync in turn, every host must hold the same state tree, every
// message sent and not deleted must be in exactly one place (0 lost, 0 in
// two places), no deleted message may be back (0 resurrected), every read
// mark its home made must stand (0 regressed), and fsck must be clean with
// private modes everywhere.
func TestTownOnThreeHosts(t *testing.T) {
	t.Parallel()
	seed := *simSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (ops %d; -sim.seed replays the choices, not the timing)", seed, *simOps)
	tw := newTown(t, "alpha", "beta", "gamma")
	if *simKeep != "" {
		// Before the temp dir goes, whichever check failed (a Fatal too).
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			if out, err := exec.Command("cp", "-a", filepath.Dir(tw.remote), *simKeep).CombinedOutput(); err != nil {
				t.Errorf("keeping the town: %v\n%s", err, out)
			}
			t.Logf("the town is kept in %s", *simKeep)
		})
	}
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
	// gamma's clock is a day behind: its tombstones are dated by the
	// town's, and no tombstone is forgotten early.
	gamma.sync.Now = func() time.Time { return time.Now().Add(-24 * time.Hour) }
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
	read := map[string]bool{}    // the last read mark each id's home made
	queued := 0
	syncs, refusals := 0, 0
	nKinds := 11 // wound back, squashed, rewritten, wound back and squashed there, branch deleted, re-created empty, refusing pushes, tombstones removed, compacted, a twin host name, a killed sync then a squash
	p := &person{t: t, bare: tw.remote, nKinds: nKinds, kinds: rand.New(rand.NewPCG(seed, 98)).Perm(nKinds), refused: map[string]string{}, refusals: map[string]int{}, lastErr: map[string]error{}}
	var mu sync.Mutex // guards the above, and p's maps
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
					unread := rng.IntN(4) == 0
					if unread {
						_, err = h.store.MarkUnread(a, m.ID)
					} else {
						_, err = h.store.MarkRead(a, m.ID)
					}
					if err == nil {
						mu.Lock()
						read[m.ID] = !unread
						mu.Unlock()
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
					if _, err = h.store.Release(a, m.ID); err == nil {
						mu.Lock()
						delete(read, m.ID) // a release leaves it unread
						mu.Unlock()
					}
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
				p.remote.RLock()
				mu.Lock()
				compact := p.compactOn == h.name // mailfs sync --compact, as the person asked
				if compact {
					p.compactOn = ""
				}
				mu.Unlock()
				h.sync.Compact = compact
				rep, err := h.sync.Sync(context.Background())
				h.sync.Compact = false
				mu.Lock()
				if compact {
					switch {
					case err == nil:
						p.did(fmt.Sprintf("compacted %d commits from %s, op %d", rep.Compacted, h.name, op))
					case errors.Is(err, gitsync.ErrCompactRaced):
						p.did(fmt.Sprintf("the compaction from %s lost a race to another host's push: %v", h.name, err))
						err = nil // the sync itself is done; nothing was replaced
					case errors.Is(err, gitsync.ErrCompactWaits):
						p.did(fmt.Sprintf("the compaction from %s waits for a home to put its tombstones back: %v", h.name, err))
						err = nil // as above
					}
				}
				if rep != nil {
					for _, r := range rep.Recovered {
						p.recovered = append(p.recovered, h.name+": "+r)
						t.Logf("%s op %d: %s", h.name, op, r)
					}
				}
				why, refused := p.refused[h.name]
				switch {
				case refused && errors.Is(err, gitsync.ErrRewritten):
					p.refusals[h.name]++
					p.lastErr[h.name] = err
					err = nil
				case p.refusing && errors.Is(err, gitsync.ErrPushRefused):
					p.pushRefusals++ // the remote's hook: nothing lost, the next sync pushes
					err = nil
				case refused:
					err = fmt.Errorf("sync after the remote was %s: %v; want it refused until a person acts", why, err)
				case err == nil:
					syncs++
					p.syncs++
				}
				mu.Unlock()
				p.remote.RUnlock()
				if err != nil {
					return fmt.Errorf("op %d sync: %w", op, err)
				}
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
	working := make(chan struct{})
	acted := make(chan struct{})
	go func() { // the person, until the hosts' work is done
		defer close(acted)
		rng := rand.New(rand.NewPCG(seed, 99))
		for {
			select {
			case <-working:
				p.act(tw, &mu, rng, true) // what is still refused is put right
				return
			case <-time.After(time.Duration(50+rng.IntN(250)) * time.Millisecond):
				p.act(tw, &mu, rng, false)
			}
		}
	}()
	wg.Wait()
	close(working)
	<-acted
	if t.Failed() {
		t.FailNow()
	}

	// Every host syncs in turn until a whole round brings nothing new.
	var seenTwice []string // ids a sync found in two places
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
				for _, d := range rep.Duplicates {
					id, _, _ := strings.Cut(d, ":")
					seenTwice = append(seenTwice, id)
				}
			}
		}
		if quiet && round > 0 {
			break
		}
	}
	t.Logf("%d ops, %d syncs, %d refusals, %d live messages, %d deleted, %d queued; force-pushes: %v", *simOps, syncs, refusals, len(live), len(deleted), queued, p.done)

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
	// 0 regressed: every read mark stands as its home last made it.
	for id, r := range read {
		if len(places[id]) != 1 {
			continue // deleted, or reported above
		}
		if got := strings.Contains(want[places[id][0]], `"read": true`); got != r {
			t.Errorf("regressed: %s is read=%v, its home last marked it read=%v", places[id][0], got, r)
		}
	}
	if t.Failed() {
		bad := map[string]bool{}
		for id := range live {
			if len(places[id]) != 1 {
				bad[id] = true
			}
		}
		for id := range deleted {
			if len(places[id]) > 0 {
				bad[id] = true
			}
		}
		for id, r := range read {
			if len(places[id]) == 1 && strings.Contains(want[places[id][0]], `"read": true`) != r {
				bad[id] = true
			}
		}
		for _, id := range seenTwice {
			bad[id] = true
		}
		for _, id := range slices.Sorted(maps.Keys(bad))[:min(len(bad), 4)] {
			for _, n := range hostNames {
				t.Logf("%s's history of %s:\n%s", n, id, gitRun(t, tw.hosts[n].store.Dir(), "log", "--all", "--reflog", "--format=%h %p %s", "--name-status", "--diff-merges=first-parent", "--", "*"+id+".json"))
			}
		}
	}
	for _, n := range hostNames {
		found, err := fsck.Check(context.Background(), tw.hosts[n].store.Dir(), fsck.Options{})
		must(t, err)
		for _, f := range found {
			t.Errorf("fsck on %s: %s", n, f)
		}
	}
}

// A person is the remote's owner, force-pushing it now and then while the
// town works: wound back a few commits, squashed to one commit with the
// same files (or those of a few commits back), or rewritten with files
// dropped (every host's home records among them). remote is held for writing while the person acts, and for
// reading by each sync, so that every sync meets a settled remote.
type person struct {
	t            *testing.T
	remote       sync.RWMutex
	bare         string
	refused      map[string]string // host → what it must refuse, until the person acts
	refusals     map[string]int    // refused syncs since
	lastErr      map[string]error  // the last refusal, whose command the person runs
	pending      string            // the force-push awaiting the person's act
	done         []string          // what was done, for the log
	kinds        []int             // the force-pushes to come: each kind once, in a random order, then any
	nKinds       int               // how many kinds: 0 wound back, 1 squashed, 2 rewritten, 3 wound back and squashed, 4 branch deleted, 5 re-created, 6 refusing, 7 tombstones removed, 8 compacted, 9 a twin, 10 a killed sync then a squash
	compactOn    string            // the host whose next sync compacts the remote, racing the others' (kind 8)
	syncs        int               // ordinary syncs since the last force-push was put right
	recovered    []string          // what the hosts' syncs said they recovered
	squashed     string            // the last squash commit the person made
	putOver      bool              // a host's copy was put back over the pending squash
	squashHead   bool              // the pending squash was of the remote's head (not wound back first)
	refusing     bool              // the remote's pre-receive hook refuses every push
	pushRefusals int               // pushes it refused since
}

// did notes what the person did.
func (p *person) did(what string) {
	p.done = append(p.done, what)
	p.t.Logf("the person: %s", what)
}

// act is one turn of the person. If hosts are refusing, and each has
// refused (one of them twice), or the work is over, it runs what the refusals say: for
// a mistaken rewrite, the git push --force one names, from that host; for
// a squash a host was behind, mailfs sync --adopt there. Else, now and
// then (after every 4 ordinary syncs of the town), a new force-push.
func (p *person) act(tw *town, mu *sync.Mutex, rng *rand.Rand, last bool) {
	t := p.t
	p.remote.Lock()
	defer p.remote.Unlock()
	mu.Lock()
	defer mu.Unlock()
	git := func(dir string, env []string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	hook := filepath.Join(p.bare, "hooks", "pre-receive")
	if p.refusing {
		// The remote takes pushes again once it has refused one.
		if p.pushRefusals > 0 || last {
			if err := os.Remove(hook); err != nil {
				t.Error(err)
			}
			p.refusing = false
			p.did(fmt.Sprintf("the remote takes pushes again, after refusing %d", p.pushRefusals))
		}
		return
	}
	if len(p.refused) > 0 {
		// Each refusing host refuses at least once, one of them twice,
		// before the person acts.
		twice := false
		for h := range p.refused {
			if p.refusals[h] < 1 && !last {
				return
			}
			twice = twice || p.refusals[h] >= 2
		}
		if !twice && !last {
			return
		}
		switch p.pending {
		case "rewritten":
			// The rewrite stood through every refusal; the person puts the
			// branch back as a refusal says, from the host that gave it.
			if got, want := git(p.bare, nil, "rev-parse", "main"), strings.TrimPrefix(p.done[len(p.done)-1], "rewritten "); got != want {
				t.Errorf("the rewrite %s did not stand: the remote is at %s", want, got)
			}
			for _, h := range slices.Sorted(maps.Keys(p.lastErr)) {
				cmd := regexp.MustCompile(`git -C (\S+) (push --force \S+ \S+:refs/heads/main)\.`).FindStringSubmatch(p.lastErr[h].Error())
				if cmd == nil {
					t.Errorf("%s's refusal names no command: %v", h, p.lastErr[h])
					return
				}
				git(cmd[1], nil, strings.Fields(cmd[2])...)
				p.did("put back from " + h)
				break
			}
			if len(p.lastErr) == 0 { // the work ended before any host refused
				git(tw.hosts["alpha"].store.Dir(), nil, "push", "--force", tw.remote, "refs/remotes/origin/main:refs/heads/main")
			}
		case "squashed":
			// Half the time the person first runs the other command a
			// refusal names — the force-push of that host's own copy —
			// after other hosts took the squash and built on it; they
			// then refuse, naming --adopt, which the person runs next.
			if !last && !p.putOver && p.squashHead && rng.IntN(2) == 0 {
				for _, h := range slices.Sorted(maps.Keys(p.lastErr)) {
					cmd := regexp.MustCompile(`git -C (\S+) (push --force \S+ \S+:refs/heads/main)\.`).FindStringSubmatch(p.lastErr[h].Error())
					if cmd == nil {
						continue
					}
					git(cmd[1], nil, strings.Fields(cmd[2])...)
					p.putOver = true
					clear(p.refused)
					for name, other := range tw.hosts {
						took := exec.Command("git", "merge-base", "--is-ancestor", p.squashed, "refs/remotes/origin/main")
						took.Dir = other.store.Dir()
						if name != h && took.Run() == nil {
							p.refused[name] = "it took a squash that a host then put back over"
						}
					}
					clear(p.refusals)
					clear(p.lastErr)
					p.did("put back from " + h + " over the squash")
					if len(p.refused) == 0 {
						p.syncs = 0
					}
					return
				}
			}
			for _, h := range slices.Sorted(maps.Keys(p.refused)) {
				if err := p.lastErr[h]; err != nil && !strings.Contains(err.Error(), "mailfs sync --adopt") {
					t.Errorf("%s's refusal does not name mailfs sync --adopt: %v", h, err)
				}
				sy := &gitsync.Syncer{Store: tw.hosts[h].store, Remote: tw.remote, Adopt: true}
				rep, err := sy.Sync(context.Background())
				if err != nil {
					t.Errorf("mailfs sync --adopt on %s: %v", h, err)
				}
				if rep != nil {
					for _, r := range rep.Recovered {
						t.Logf("%s, adopting: %s", h, r)
					}
				}
				p.did("adopted on " + h)
			}
		}
		clear(p.refused)
		clear(p.refusals)
		clear(p.lastErr)
		p.syncs = 0
		p.putOver = false
		return
	}
	// A force-push after every few ordinary syncs of the town, and none
	// while a compaction waits for its host's next sync.
	if last || p.syncs < 4 || p.compactOn != "" {
		return
	}
	p.syncs = 0
	if len(p.kinds) == 0 {
		p.kinds = []int{rng.IntN(p.nKinds)}
	}
	kind := p.kinds[0]
	p.kinds = p.kinds[1:]
	if kind == 10 {
		// A host's sync killed at one of its steps (its context
		// cancelled: the git command running then is killed, and nothing
		// after it runs), then at once a squash of the remote as it is:
		// the host's next sync takes it, or refuses it as any host
		// behind the squash does, never taking its own history for a
		// first sync's (issue 59, Why 8).
		name := []string{"alpha", "beta", "gamma"}[rng.IntN(3)]
		steps := []string{"fetching", "reading the state tree", "committing", "writing the files that arrived", "pushing"}
		at := steps[rng.IntN(len(steps))]
		ctx, cancel := context.WithCancel(context.Background())
		h := tw.hosts[name]
		sy := &gitsync.Syncer{Store: h.store, Remote: tw.remote, Now: h.sync.Now, Progress: func(step string) {
			if strings.HasPrefix(step, at) {
				cancel()
			}
		}}
		_, err := sy.Sync(ctx)
		cancel()
		p.did(fmt.Sprintf("killed %s's sync at %q (%v)", name, at, err))
		kind = 1
	}
	head := git(p.bare, nil, "rev-parse", "main")
	tree := git(p.bare, nil, "rev-parse", "main^{tree}")
	id := []string{"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@p", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@p"}
	switch kind {
	case 0: // wound back a few commits
		back := strings.Fields(git(p.bare, nil, "rev-list", "--first-parent", "-n", "6", "main"))
		if len(back) < 2 {
			return
		}
		to := back[1+rng.IntN(len(back)-1)]
		git(p.bare, nil, "update-ref", "refs/heads/main", to)
		p.did("wound back to " + to[:8])
	case 1, 3: // squashed (3: wound back first): a host that had not seen these files cannot tell
		what := "squashed " + head[:8]
		if kind == 3 {
			back := strings.Fields(git(p.bare, nil, "rev-list", "--first-parent", "-n", "6", "main"))
			to := back[0]
			if len(back) > 1 {
				to = back[1+rng.IntN(len(back)-1)]
			}
			tree = git(p.bare, nil, "rev-parse", to+"^{tree}")
			what = "wound back to " + to[:8] + " and squashed"
		}
		squashed := git(p.bare, id, "commit-tree", tree, "-m", "squashed")
		git(p.bare, nil, "update-ref", "refs/heads/main", squashed)
		p.squashed, p.squashHead, p.putOver = squashed, kind == 1, false
		for name, h := range tw.hosts {
			if known := git(h.store.Dir(), nil, "rev-parse", "refs/remotes/origin/main^{tree}"); known != tree {
				p.refused[name] = "squashed while it was behind"
			}
		}
		p.pending = "squashed"
		p.did(what)
	case 2: // rewritten with files dropped: every home record, some mail
		idx := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		git(p.bare, idx, "read-tree", "main")
		var drop strings.Builder
		for f := range strings.SplitSeq(git(p.bare, nil, "ls-tree", "-r", "--name-only", "main"), "\n") {
			if strings.HasPrefix(f, "state/homes/") || strings.HasPrefix(f, "state/mail/") && rng.IntN(5) == 0 {
				fmt.Fprintf(&drop, "0 %s\t%s\n", strings.Repeat("0", 40), f)
			}
		}
		cmd := exec.Command("git", "update-index", "--index-info")
		cmd.Dir, cmd.Env, cmd.Stdin = p.bare, append(os.Environ(), idx...), strings.NewReader(drop.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("update-index: %v\n%s", err, out)
			return
		}
		rewritten := git(p.bare, append(idx, id...), "commit-tree", git(p.bare, idx, "write-tree"), "-m", "rewritten")
		git(p.bare, nil, "update-ref", "refs/heads/main", rewritten)
		for name := range tw.hosts {
			p.refused[name] = "rewritten with files dropped"
		}
		p.pending = "rewritten"
		p.did("rewritten " + rewritten)
	case 4: // the branch deleted (a forge's "delete branch"): the next sync pushes its whole tree
		git(p.bare, nil, "update-ref", "-d", "refs/heads/main")
		p.did("deleted the branch")
	case 5: // the repository re-created empty (a server restored from nothing)
		if err := os.RemoveAll(p.bare); err != nil {
			t.Error(err)
			return
		}
		git(filepath.Dir(p.bare), nil, "init", "-q", "--bare", "-b", "main", p.bare)
		git(p.bare, nil, "config", "receive.autogc", "false")
		p.did("re-created the repository empty")
	case 6: // the remote refuses every push for a while (a hook)
		if err := os.WriteFile(hook, []byte("#!/bin/sh\necho closed >&2\nexit 1\n"), 0o700); err != nil {
			t.Error(err)
			return
		}
		p.refusing, p.pushRefusals = true, 0
		p.did("made the remote refuse pushes")
	case 7: // an ordinary commit of the person's on top, removing every host's tombstones
		idx := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		git(p.bare, idx, "read-tree", "main")
		git(p.bare, idx, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "state/gone")
		tidied := git(p.bare, append(idx, id...), "commit-tree", git(p.bare, idx, "write-tree"), "-p", head, "-m", "tidy up state/gone")
		git(p.bare, nil, "update-ref", "refs/heads/main", tidied)
		p.did("removed the tombstones in " + tidied[:8])
	case 8: // mailfs sync --compact on a host, at its next sync: its agents work, the other hosts push meanwhile
		p.compactOn = []string{"alpha", "beta", "gamma"}[rng.IntN(3)]
	case 9: // a second machine given a host's name syncs: refused, nothing pushed
		name := []string{"alpha", "beta", "gamma"}[rng.IntN(3)]
		if exec.Command("git", "-C", p.bare, "cat-file", "-e", "main:"+gitsync.HostsDir+"/"+name+".json").Run() != nil {
			return // the remote does not hold the name yet (emptied since): the twin would hold it first
		}
		s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
		if err != nil {
			t.Error(err)
			return
		}
		defer s.Close()
		s.Host = name
		_, err = (&gitsync.Syncer{Store: s, Remote: tw.remote}).Sync(context.Background())
		if !errors.Is(err, gitsync.ErrHostTaken) {
			t.Errorf("a second machine named %s: sync = %v; want it refused", name, err)
		}
		if got := git(p.bare, nil, "rev-parse", "main"); got != head {
			t.Errorf("the twin of %s pushed", name)
		}
		p.did("a second machine named " + name + " was refused")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
