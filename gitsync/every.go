package gitsync

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// requestPoll is how often Every looks for a claim request made on this
// host (or, on the queue's home, served here) since its last sync: a few
// directory reads, so often enough that an agent waiting on a request
// never waits on this look. It is also the shortest look at the remote.
const requestPoll = 250 * time.Millisecond

// Every syncs now, then every d until ctx ends, handing each sync's
// report and error to report (once ctx ended, only a sync that finished).
// Claim requests go faster than d, because an agent waits on each (see
// maildir.RequestClaim):
//
//   - a request made on this host starts a sync within requestPoll, so it
//     reaches the queue's home without waiting for the next tick;
//   - on a queue's home, a request served outside a sync (a claim there
//     serves the waiting requests first, when an item came after the
//     request did) starts a sync within requestPoll too, so the item it
//     claimed goes down without waiting for the next tick;
//   - a host that homes a queue looks at the remote every peekEvery(d),
//     and at once after each sync (git ls-remote: one exec, no transfer,
//     while nothing was pushed), and when it holds a claim request for
//     one of its queues that this host has not taken yet, syncs at once:
//     that sync serves it and pushes the item (see Sync);
//   - while this host has requests of its own in its tree (not yet served,
//     or served and not yet brought back), it looks at the remote as
//     often, and syncs as soon as anything new is there, so the item the
//     home served comes back; and it syncs every d/4 all the same.
//
// So an item asked for off the queue's home reaches the agent within
// about requestPoll + 2 × peekEvery(d) + three syncs (peekEvery is d/8,
// at least requestPoll), whatever the hosts' ticks: within one period d,
// not one period of each host after another.
func (s *Syncer) Every(ctx context.Context, d time.Duration, report func(*Report, error)) {
	poll := time.NewTicker(requestPoll)
	defer poll.Stop()
	pk := &peeker{s: s}
	for {
		// The requests as they were before the sync: one made or served
		// while it ran, or while report runs, is a change the wait below
		// acts on (at worst one sync more, which finds it carried).
		seen := s.requestNames()
		rep, err := s.Sync(ctx)
		if ctx.Err() != nil {
			if err == nil {
				report(rep, nil) // it finished: say so
			}
			return
		}
		if rep != nil {
			seen = broughtBy(seen, rep.Pulled, rep.Served)
		}
		report(rep, err)
		own, _ := s.Store.OwnRequests()
		pk.synced(ctx)
		timer := time.NewTimer(waitFor(d, len(own)))
		// The first look at the remote comes at the first poll: while
		// this sync ran, another host may have pushed what it waits for.
		nextPeek := time.Now()
	wait:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
				break wait
			case <-poll.C:
				if s.requestsChanged(seen) {
					timer.Stop()
					break wait
				}
				if time.Now().Before(nextPeek) {
					continue
				}
				nextPeek = time.Now().Add(s.peekEvery(d))
				if pk.due(ctx, len(own) > 0) {
					timer.Stop()
					break wait
				}
			}
		}
	}
}

// peekEvery is how often Every looks at the remote for claim requests
// and served items: Syncer.Peek, else d/8 (eight ls-remotes a period,
// for a remote across a network), at least requestPoll.
func (s *Syncer) peekEvery(d time.Duration) time.Duration {
	if s.Peek > 0 {
		return s.Peek
	}
	return max(requestPoll, d/8)
}

// A peeker looks at the remote between Every's syncs (see Every): what it
// last found there, so that a push is looked into once.
type peeker struct {
	s      *Syncer
	g      *git
	remote string
	branch string
	seen   string // the remote's commit as this host last took or looked at it
}

// synced records, after a sync, that this host's branch is what the
// remote held as far as it knows.
func (p *peeker) synced(ctx context.Context) {
	if p.g == nil && !p.open(ctx) {
		return
	}
	p.seen = p.g.rev(ctx, "HEAD")
}

// open finds the repository and remote Sync uses; false if there is none
// (yet): Every then only ticks.
func (p *peeker) open(ctx context.Context) bool {
	host, err := p.s.Store.LocalHost()
	if err != nil || host == "" {
		return false
	}
	if _, err := os.Lstat(filepath.Join(p.s.Store.Dir(), ".git")); err != nil {
		return false
	}
	g, remote, branch, err := p.s.open(ctx, host)
	if err != nil {
		return false
	}
	p.g, p.remote, p.branch = g, remote, branch
	return true
}

// due reports whether a sync should run now: the remote moved since this
// host last looked and, with own set (this host waits on requests of its
// own), that is enough; else it holds a claim request for a queue homed
// here that this host's tree lacks. Anything that fails is no reason: the
// tick comes all the same.
func (p *peeker) due(ctx context.Context, own bool) bool {
	if p.g == nil && !p.open(ctx) {
		return false
	}
	if !own && !p.homesAQueue() {
		return false
	}
	out, err := p.g.run(ctx, "ls-remote", "--heads", p.remote, "refs/heads/"+p.branch)
	if err != nil {
		return false
	}
	head, _, _ := strings.Cut(strings.TrimSpace(out), "\t")
	if head == "" || head == p.seen {
		return false
	}
	if own {
		return true
	}
	// What it brings, into a ref of its own (never the ones Sync reads):
	// claim requests for this host's queues, added since this host's
	// branch?
	peek := "refs/mailfs/peek/" + p.remote + "/" + p.branch
	if _, err := p.g.run(ctx, "fetch", "-q", "--no-tags", "--no-auto-maintenance", "--refmap=", p.remote, "+refs/heads/"+p.branch+":"+peek); err != nil {
		return false
	}
	added, err := p.g.paths(ctx, "diff-tree", "-r", "-z", "--name-only", "--no-renames", "--diff-filter=A", "HEAD", peek, "--", maildir.RequestDir)
	if err != nil {
		return false
	}
	p.seen = head
	return p.s.requestsArrived(added)
}

// homesAQueue reports whether this host is the home of a work queue.
func (p *peeker) homesAQueue() bool {
	queues, err := p.s.Store.Queues()
	if err != nil {
		return false
	}
	for _, q := range queues {
		if p.s.Store.MayChange(maildir.Address{Kind: maildir.KindQueue, Name: q}) == nil {
			return true
		}
	}
	return false
}

// waitFor is the wait before the next sync of Every: d, or d/4 while this
// host has own requests waiting.
func waitFor(d time.Duration, own int) time.Duration {
	if own > 0 {
		return d / 4
	}
	return d
}

// requestNames returns the names of the claim request files in the tree,
// without reading them.
func (s *Syncer) requestNames() map[string]bool {
	names := map[string]bool{}
	queues, _ := listDir(s.Store.Root(), maildir.RequestDir) // the guarded root: no link followed
	for _, q := range queues {
		files, _ := listDir(s.Store.Root(), maildir.RequestDir+"/"+q.Name())
		for _, f := range files {
			names[q.Name()+"/"+f.Name()] = true
		}
	}
	return names
}

// broughtBy returns seen with the claim requests a sync pulled and did
// not serve added (pulled: paths; served: "request id: item"). Such a
// request arrived after seen was taken; on the queue's home a claim may
// serve it before the loop next looks (a claim there serves waiting
// requests first), and the loop must see that as a request gone, whose
// item goes down at once, not as nothing changed. One still waiting
// (the queue was empty) is then no new request of this host's either.
func broughtBy(seen map[string]bool, pulled, served []string) map[string]bool {
	done := map[string]bool{}
	for _, sv := range served {
		id, _, _ := strings.Cut(sv, ":")
		done[id] = true
	}
	out := maps.Clone(seen)
	for _, p := range pulled {
		rest, ok := strings.CutPrefix(p, maildir.RequestDir+"/")
		if !ok {
			continue
		}
		q, name, _ := strings.Cut(rest, "/")
		if id, ok := strings.CutSuffix(name, ".json"); ok && !done[id] {
			out[q+"/"+name] = true
		}
	}
	return out
}

// requestsChanged reports whether the claim requests in the tree changed
// since seen was taken in a way a sync must carry at once: a request file
// that was not there (requests from other hosts arrive only by a sync, so
// a new one was made here, and goes up to the home), or, on the queue's
// home, one that is gone (served here by a claim, which claimed an item
// for it, or withdrawn: the item, or the news, goes down to the
// requester).
func (s *Syncer) requestsChanged(seen map[string]bool) bool {
	now := s.requestNames()
	for n := range now {
		if !seen[n] {
			return true
		}
	}
	for n := range seen {
		q, _, _ := strings.Cut(n, "/")
		if !now[n] && s.Store.MayChange(maildir.Address{Kind: maildir.KindQueue, Name: q}) == nil {
			return true
		}
	}
	return false
}
