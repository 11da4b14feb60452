package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// DefaultPruneAfter is how long archived mail stays in the working tree
// when [Syncer.PruneAfter] is zero.
const DefaultPruneAfter = 30 * 24 * time.Hour

// maxTries bounds how often one Sync starts again because another host
// pushed between its fetch and its push.
const maxTries = 16

var (
	// ErrNoHost is returned by Sync on a host with no name: homes, and so
	// conflict-free merging, need one ("mailfs host NAME").
	ErrNoHost = errors.New("gitsync: this host has no name")

	// ErrNoRemote is returned when no remote is given and the repository
	// has no "origin".
	ErrNoRemote = errors.New("gitsync: no remote")

	// ErrConflict is matched by a [*ConflictError].
	ErrConflict = errors.New("gitsync: conflict")

	// ErrBusy is returned when other hosts kept pushing first, maxTries
	// times in a row; nothing is lost, the next Sync carries on.
	ErrBusy = errors.New("gitsync: other hosts kept pushing first")

	// ErrPushRefused is returned when the remote refused the push for a
	// reason of its own (a hook, a checked-out branch of a non-bare
	// repository, a protected branch, no right to push): the error
	// carries git's message. Nothing of this host was lost; its next
	// Sync pushes what the remote then takes.
	ErrPushRefused = errors.New("gitsync: the remote refused the push")
)

// A ConflictError says which paths stopped a sync, why, and what a
// person can do. Nothing was committed or pushed, and no file was changed:
// every local change is still in the working tree.
type ConflictError struct {
	Paths []string // relative to the root
	Why   string
	Fix   string // what to do, for a person
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("conflict, nothing committed or pushed: %s: %s", e.Why, strings.Join(e.Paths, ", "))
}

// Is makes a ConflictError match ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// A Syncer syncs one host's root with a git remote. Set its fields before
// the first Sync; a Syncer may be used by one goroutine at a time (and
// Sync holds a lock against other processes of the same host).
type Syncer struct {
	Store *maildir.Store

	// Remote is a configured remote's name or a URL; "" means "origin". A
	// URL becomes the remote "origin" the first time.
	Remote string
	// Branch is the remote branch; "" means the one the repository is on,
	// or "main" in a new repository.
	Branch string
	// PruneAfter: archived mail of local homes older than this leaves the
	// working tree (it stays in history; see Recall). Zero means
	// DefaultPruneAfter; negative, never.
	PruneAfter time.Duration
	// Peek is how often Every looks at the remote for claim requests and
	// served items between its syncs (see Every); zero means
	// max(one second, a period / 8).
	Peek time.Duration
	// Git is the git command; "" means "git" on $PATH.
	Git string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Compact, after a sync that left this host and the remote alike,
	// replaces the remote's history by one commit of its tree (see
	// compact). Set it for the one sync a person asked for.
	Compact bool
	// TakeOver makes this machine the holder of its host name where the
	// remote records another machine under it (see [ErrHostTaken]): only
	// when that machine is gone for good. Set it for the one sync a person
	// asked for.
	TakeOver bool
	// Adopt takes a rewritten remote branch as meant, where a sync would
	// refuse it (see [ErrRewritten]): this host builds on the new history,
	// and its own changes since it last synced go on top. Set it for the
	// one sync a person asked for.
	Adopt bool
	// Progress, if not nil, is told each step, for a person watching.
	Progress func(step string)
	// Warn, if not nil, is told what a person should know even when not
	// watching: leftovers of a stopped sync recovered, files skipped, a
	// clock behind the town's.
	Warn func(msg string)

	skewTold bool // the clock's skew was told: once per Syncer
}

// A Report says what one Sync did. Paths are relative to the root.
type Report struct {
	Host       string
	Remote     string
	Branch     string
	Committed  []string    // this host's changes, committed and pushed (its record of its name left out)
	Pulled     []string    // files that arrived from other hosts (the homes' tombstones and the hosts' records left out)
	Pruned     []string    // archived mail that left the working tree
	Renamed    [][2]string // messages added here under a name another host had added too: old, new
	Yielded    []string    // home records dropped: another host claimed the object first
	Duplicates []string    // message ids found in two places after the pull (always reported)
	Reverted   []string    // changes made under a home another host claimed first, undone
	Served     []string    // claim requests this host served, as "request id: item path"
	Recovered  []string    // what a stopped sync had left, put right before this one
	Compacted  int         // the commits a compaction replaced by one (see Syncer.Compact)
	Held       []string    // an older copy's mail no one vouches for, set aside under HeldDir (see unknownCopies)
	Pushed     bool        // the remote has this host's commit
	Tries      int         // fetch-rebase-push rounds it took
	Took       time.Duration
}

func (s *Syncer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Syncer) warnf(format string, args ...any) {
	if s.Warn != nil {
		s.Warn(fmt.Sprintf(format, args...))
	} else {
		s.step(format, args...)
	}
}

// recovered tells what a sync put right (a rewrite met, leftovers
// cleared), to the person and in the report.
func (s *Syncer) recovered(rep *Report, msg string) {
	s.warnf("%s", msg)
	rep.Recovered = append(rep.Recovered, msg)
}

func (s *Syncer) step(format string, args ...any) {
	if s.Progress != nil {
		s.Progress(fmt.Sprintf(format, args...))
	}
}

// Sync runs one cycle: commit, pull, push (see the package doc). It
// returns the report and, if the cycle did not finish, why; a
// [*ConflictError] means the repository was put back as it was.
func (s *Syncer) Sync(ctx context.Context) (*Report, error) {
	start := time.Now()
	host, err := s.Store.LocalHost()
	if err != nil {
		return nil, err
	}
	if host == "" {
		return nil, fmt.Errorf("%w: only named hosts have homes, and homes are what keep syncs free of conflicts", ErrNoHost)
	}
	if err := s.Store.Init(); err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()

	g, remote, branch, err := s.open(ctx, host)
	if err != nil {
		return nil, err
	}
	rep := &Report{Host: host, Remote: remote, Branch: branch}
	defer func() { rep.Took = time.Since(start) }()
	if err := s.recoverLeftovers(ctx, g, rep); err != nil {
		return rep, err
	}
	if g.outbox, err = readOutbox(g); err != nil {
		return rep, err
	}

	served := false
	for rep.Tries = 1; rep.Tries <= maxTries; rep.Tries++ {
		done, err := s.cycle(ctx, g, rep)
		if err != nil {
			return rep, err
		}
		if done && !served && s.requestsArrived(rep.Pulled) {
			// Claim requests for this host's queues came in: serve them
			// now, so the items go back with this sync, not the next.
			served = true
			continue
		}
		if done && s.Compact {
			return rep, s.compact(ctx, g, rep)
		}
		if done {
			return rep, nil
		}
		// Another host pushed first. Hosts that keep meeting at the
		// remote spread out: a random wait, doubling each round.
		wait := time.Duration(rand.Int64N(int64(25*time.Millisecond) << min(rep.Tries, 6)))
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(wait):
		}
	}
	return rep, fmt.Errorf("%w %d times in a row; run sync again", ErrBusy, maxTries)
}

// lock takes this host's sync lock.
func (s *Syncer) lock() (func(), error) {
	d, done, err := s.folder("runtime/sync.lock", true)
	if err != nil {
		return nil, err
	}
	unlock, err := d.Lock()
	if err != nil {
		done()
		return nil, err
	}
	return func() { unlock(); done() }, nil
}

// open finds or makes the repository at the root and its remote.
func (s *Syncer) open(ctx context.Context, host string) (*git, string, string, error) {
	dir := s.Store.Dir()
	bin := s.Git
	if bin == "" {
		bin = "git"
	}
	g := &git{dir: dir, bin: bin, env: environ(host, true), clock: s.Now}
	if _, err := os.Lstat(filepath.Join(dir, ".git")); errors.Is(err, os.ErrNotExist) {
		if s.Remote == "" { // a repository with nowhere to sync to: make none
			return nil, "", "", fmt.Errorf("%w: %s has no repository yet; give the remote to start one", ErrNoRemote, dir)
		}
		branch := s.Branch
		if branch == "" {
			branch = "main"
		}
		s.step("creating the repository in %s", dir)
		if _, err := g.run(ctx, "init", "-q", "-b", branch); err != nil {
			return nil, "", "", err
		}
	} else if err != nil {
		return nil, "", "", err
	}
	// (A root with a .git of its own is the top of its repository.)
	if err := g.readConfig(ctx); err != nil {
		return nil, "", "", err
	}
	if email, _ := g.configValue("", "user.email"); strings.TrimSpace(email) == "" {
		g.env = environ(host, false)
	}
	// Never guess renames, in any merge this repository does. Set once:
	// reading them back is one git call, setting each is another.
	for _, kv := range [][2]string{{"merge.renames", "false"}, {"merge.directoryRenames", "false"},
		{"diff.renames", "false"}, {"core.sharedRepository", "0600"}, {"gc.autoDetach", "false"}} { // no git process outlives the sync
		if v, ok := g.configValue("local", strings.ToLower(kv[0])); ok && v == kv[1] {
			continue
		}
		if _, err := g.run(ctx, "config", kv[0], kv[1]); err != nil {
			return nil, "", "", err
		}
	}
	remote, err := s.remote(ctx, g)
	if err != nil {
		return nil, "", "", err
	}
	branch := s.Branch
	if branch == "" {
		if branch = strings.TrimPrefix(g.headRef(), "refs/heads/"); branch == "" {
			out, err := g.run(ctx, "symbolic-ref", "--short", "HEAD")
			if branch = strings.TrimSpace(out); err != nil || branch == "" {
				branch = "main"
			}
		}
	}
	return g, remote, branch, nil
}

// remote returns the name of the remote to use, adding "origin" for a URL.
func (s *Syncer) remote(ctx context.Context, g *git) (string, error) {
	var names []string
	for _, e := range g.config {
		if name, ok := strings.CutPrefix(e.key, "remote."); ok && strings.HasSuffix(name, ".url") {
			names = append(names, strings.TrimSuffix(name, ".url"))
		}
	}
	want := s.Remote
	switch {
	case want == "" && slices.Contains(names, "origin"):
		return "origin", nil
	case want == "":
		return "", fmt.Errorf("%w: the repository at %s has no \"origin\"; give one", ErrNoRemote, g.dir)
	case slices.Contains(names, want):
		return want, nil
	case slices.Contains(names, "origin"):
		url, _ := g.configValue("", "remote.origin.url")
		if strings.TrimSpace(url) == want {
			return "origin", nil
		}
		return "", fmt.Errorf("gitsync: %q is not a remote of %s, and its origin is %s; give a remote's name", want, g.dir, strings.TrimSpace(url))
	}
	s.step("adding the remote origin: %s", want)
	if _, err := g.run(ctx, "remote", "add", "origin", want); err != nil {
		return "", err
	}
	return "origin", nil
}

// cycle is one round: fetch, snapshot, merge, apply, push. It reports
// done when the remote has everything, false to start again.
//
// Git never writes the working tree. The snapshot is `git add -A` and
// `write-tree` (git only reads files); the merge is made here, path by
// path, from two diffs against the last common commit, into an index of
// its own; what the other hosts changed is written into the working tree
// by [Syncer.apply]; and the branch and index move to the result with
// `git reset --mixed`, which leaves files alone. A write an agent makes at
// any moment of the cycle stays in the tree: it is in this snapshot, or it
// is an uncommitted change that the next sync commits.
//
// Each step is a method of its own: fetch (what the remote holds now),
// lineage (what to build on), snapshot (both sides' changes), decide (the
// plan, before anything changes), commit, land, push.
func (s *Syncer) cycle(ctx context.Context, g *git, rep *Report) (bool, error) {
	g.homes = homes{} // read again each round: a landing may bring records
	r, err := s.fetch(ctx, g, rep)
	if err != nil {
		return false, err
	}
	// What the other hosts' homes now hold of this host's sends to them.
	if err := s.acked(ctx, g, g.outbox, r.upstream); err != nil {
		return false, err
	}
	// theirs is the commit to build on; base, the tree both this host's
	// working tree and theirs descend from.
	var unrelated bool
	if r.theirs, r.base, r.onto, unrelated, err = s.lineage(ctx, g, rep, r.known, r.upstream, r.head, r.empty); err != nil {
		return false, err
	}
	// What this host now holds of the remote is what it builds on: never
	// moved back to a wound-back remote, or a cycle started again (another
	// host pushed first) would take what this host saw beyond it for its
	// own changes. A new history that does not hold this host's branch
	// (squashed, adopted) is taken once it has landed: a sync stopped
	// before then meets the same rewrite again, never a history it shares
	// nothing with (a "first sync" of its own mail).
	if r.theirs != "" && r.theirs != r.known && !unrelated {
		if _, err := g.run(ctx, "update-ref", r.tracking, r.theirs); err != nil {
			return false, err
		}
	}
	// The town's clock, read once a round: when other hosts' commits
	// arrived (a clock behind is told then, not only when it buries), or
	// when this round buries.
	clock := s.tombClock(ctx, g, rep, r)
	if r.theirs != "" && r.theirs != r.known {
		if _, _, err := clock(); err != nil {
			return false, err
		}
	}
	// One machine per host name, before anything is read or written.
	if err := s.claimName(ctx, g, rep.Host, r.theirs, r.head); err != nil {
		return false, err
	}
	pruned, err := s.prune(ctx, g, r.head)
	if err != nil {
		return false, err
	}
	rep.Pruned = append(rep.Pruned, pruned...)
	if err := s.serveRequests(rep); err != nil {
		return false, err
	}
	if err := s.snapshot(ctx, g, r); err != nil {
		return false, err
	}
	if err := s.decide(ctx, g, rep, r); err != nil {
		return false, err
	}
	// Act on what changes this host's files before the merge (renames,
	// yields), then bury and raise what its homes lost and got back.
	if err := s.act(ctx, g, r.plan, rep); err != nil {
		return false, err
	}
	bury, raise := buried(s.mineIn(g.homes), r.plan.ours, r.plan.apply, s.holds)
	if r.tombs, err = s.writeTombstones(ctx, g, rep.Host, bury, raise, clock); err != nil {
		return false, err
	}
	if len(r.tombs) > 0 {
		// Into the snapshot: they are this host's files now.
		if r.snapshot, err = g.stageTombstones(ctx, r.tombs); err != nil {
			return false, err
		}
		r.plan.ours = append(r.plan.ours, r.tombs...)
	} else if err := r.snapshotTree(ctx, g); err != nil {
		return false, err
	}
	mine, err := s.commit(ctx, g, rep, r)
	if err != nil {
		return false, err
	}
	// The last word before anything lands or leaves: whatever built
	// mine, it may drop nothing this host holds that no home removed.
	if err := s.gate(ctx, g, rep.Host, r, mine); err != nil {
		return false, err
	}
	// Queue items from other hosts are noted as arriving now, by this
	// host's clock, before they are in the tree: claims here go by that.
	s.noteArrivals(g, r.plan.apply, r.their)
	// What the others did, into the working tree; then the branch.
	if mine != "" && (mine != r.head || len(r.plan.apply) > 0) {
		if err := s.land(ctx, g, mine, rep.Branch, r.snapshot, r.plan.apply, rep); err != nil {
			return false, err
		}
	}
	if unrelated {
		if _, err := g.run(ctx, "update-ref", r.tracking, r.theirs); err != nil {
			return false, err
		}
	}
	for _, c := range r.plan.apply {
		// What arrived of the town's state; the homes' tombstones are
		// the sync's own bookkeeping, not mail.
		if c.status != 'D' && strings.HasPrefix(c.path, "state/") && !bookkeeping(c.path) {
			rep.Pulled = append(rep.Pulled, c.path)
		}
	}
	if rep.Duplicates, err = duplicates(s.Store.Dir(), rep.Pulled); err != nil {
		return false, err
	}
	return s.push(ctx, g, rep, r, mine)
}

// tombClock returns what writeTombstones counts days by (see
// tombClock), read at most once per round, and only when asked. When
// this host's clock is behind the town's by more than MaxSkew, it says
// so, once per Syncer.
func (s *Syncer) tombClock(ctx context.Context, g *git, rep *Report, r *round) func() (time.Time, time.Time, error) {
	var day, now time.Time
	var err error
	asked := false
	return func() (time.Time, time.Time, error) {
		if asked {
			return day, now, err
		}
		asked = true
		local := s.now()
		var town time.Time
		var ok bool
		if town, ok, err = g.townTime(ctx, r.theirs, rep.Host); err != nil {
			return day, now, err
		}
		if behind := ClockBehind(local, town); ok && behind > 0 && !s.skewTold {
			s.skewTold = true
			s.warnf("this host's clock (%s) is %s behind the newest commit another host pushed (%s): tombstones are dated by the later, and forgotten by the earlier, of the two, and the queue items sent here sort by it (docs/routing.md); set this host's clock right", local.UTC().Format(time.RFC3339), behind.Round(time.Second), town.UTC().Format(time.RFC3339))
		}
		day, now = tombClock(local, town, ok)
		return day, now, nil
	}
}

// A round is what one cycle learns and decides, step by step.
type round struct {
	tracking              string // the remote-tracking ref
	known, upstream, head string // the remote as last seen, as it is now; this host's branch
	empty                 string // the empty tree
	theirs, base          string // the remote's commit to merge; the tree both sides descend from
	onto                  string // the commit to build on: theirs, or this host's branch where it holds theirs and more
	snapshot, theirTree   string // this host's tree as it is; theirs's
	ours, their           map[string]change
	plan                  *plan
	tombs                 []change // this host's tombstone files, as changed
}

// fetch fetches the remote's branch beside the tracking ref, which moves
// only once the new history is accepted (a refused rewrite is refused
// again at every sync, until a person acts: see lineage), and reads the
// refs: the remote as this host last saw it (known), as it is now
// (upstream), and this host's branch, in one exec.
func (s *Syncer) fetch(ctx context.Context, g *git, rep *Report) (*round, error) {
	remote, branch := rep.Remote, rep.Branch
	r := &round{tracking: "refs/remotes/" + remote + "/" + branch}
	fetched := "refs/mailfs/fetched/" + remote + "/" + branch
	s.step("fetching %s %s", remote, branch)
	// --refmap= keeps git from updating the tracking ref itself, as it
	// does for a configured remote; the sync packs after its push itself
	// (needsGC), so fetch's own maintenance would be one more exec.
	if _, err := g.run(ctx, "fetch", "-q", "--no-tags", "--no-auto-maintenance", "--refmap=", remote, "+refs/heads/"+branch+":"+fetched); err != nil {
		var ge *GitError
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "couldn't find remote ref") {
			return nil, err
		}
		// An empty remote: this host's commit starts it.
		g.ok(ctx, "update-ref", "-d", fetched)
	}
	headRef := g.headRef()
	refs, err := g.refs(ctx, r.tracking, fetched, headRef)
	if err != nil {
		return nil, err
	}
	r.known, r.upstream, r.head = refs[r.tracking], refs[fetched], refs[headRef]
	if headRef == "" {
		r.head = g.rev(ctx, "HEAD") // detached
	}
	g.head = r.head
	r.empty, err = g.emptyTree(ctx)
	return r, err
}

// snapshot takes every file of the tree as it is now, and both sides'
// changes since the base.
//
// This host's changes are read from the index (diff-index), and its tree
// is written only once the round has staged what it buries (see
// snapshotTree): a round that buries writes one tree, not two, and diffs
// none.
func (s *Syncer) snapshot(ctx context.Context, g *git, r *round) error {
	s.step("reading the state tree")
	if err := g.addAll(ctx); err != nil {
		return err
	}
	var err error
	r.snapshot = ""
	if r.ours, err = g.diffIndex(ctx, r.base); err != nil {
		return err
	}
	r.theirTree = r.empty
	if r.theirs != "" {
		if r.theirTree, err = g.tree(ctx, r.theirs); err != nil {
			return err
		}
	}
	r.their, err = g.diff(ctx, r.base, r.theirTree)
	return err
}

// decide makes the round's plan from what it read, before anything
// changes: a sync that stops changes nothing. The decisions are settle's
// and staleCopies's; this reads what they need.
func (s *Syncer) decide(ctx context.Context, g *git, rep *Report, r *round) error {
	mine := s.mineIn(g.homes)
	ours := r.ours
	// A first sync of a root that already held mail, with no history in
	// common with the remote: the homes' word, not the copy's, for their
	// objects (see staleCopies).
	var staleApply []change
	var aside []string
	if r.base == r.empty && r.theirTree != r.empty && len(ours) > 0 {
		graves, err := g.readTombstones(ctx, r.theirTree)
		if err != nil {
			return err
		}
		if stale := staleCopies(ours, r.their, graves, mine); len(stale) > 0 {
			ours = maps.Clone(ours) // the diff is shared: never modified
			staleApply = dropStale(stale, ours, r.their)
			rep.Reverted = append(rep.Reverted, stale...)
			s.recovered(rep, fmt.Sprintf("this root held mail before its first sync, and shares no history with the remote: %d of its files are older copies of messages their homes have since removed, moved or changed; they are left as the remote has them, not pushed", len(stale)))
		}
		sent, err := s.sentHere(ctx, g, ours, r.theirs)
		if err != nil {
			return err
		}
		if held := unknownCopies(ours, r.their, graves, mine, sent); len(held) > 0 {
			ours = maps.Clone(ours)
			for _, p := range held {
				delete(ours, p)
			}
			aside = held
		}
	}
	// Where an add of a message under this host's homes arrives, it may
	// be a stale copy of one the home removed (its tombstones say) or
	// holds in the object's other folder (archived, or restored, since).
	var graves tombstones
	var siblings []string
	for _, p := range slices.Sorted(maps.Keys(r.their)) {
		if a, ok := objectOf(p); ok && r.their[p].status == 'A' && isMessage(p) && mine(a) {
			siblings = append(siblings, sibling(p))
		}
	}
	shadowed := map[string]bool{}
	if len(siblings) > 0 {
		if err := r.snapshotTree(ctx, g); err != nil {
			return err
		}
		var err error
		if graves, err = g.readTombstones(ctx, r.snapshot); err != nil {
			return err
		}
		for chunk := range slices.Chunk(siblings, 500) {
			out, err := g.run(ctx, append([]string{"ls-tree", "-z", "--full-tree", r.snapshot, "--"}, chunk...)...)
			if err != nil {
				return err
			}
			for _, e := range parseLsTree(out) {
				shadowed[sibling(e.path)] = true
			}
		}
	}
	homesCopy, err := s.homesVersions(ctx, g, ours, r.their)
	if err != nil {
		return err
	}
	plan, err := s.settle(g, rep, ours, r.their, graves, shadowed, homesCopy)
	if err != nil {
		return err
	}
	plan.apply = append(plan.apply, staleApply...)
	plan.aside = aside
	r.plan = plan
	return nil
}

// commit makes the round's commit: theirs, if this host adds nothing;
// else one on top, of theirs's tree with this host's changes (or, with
// nothing arrived, the snapshot).
func (s *Syncer) commit(ctx context.Context, g *git, rep *Report, r *round) (string, error) {
	merged := r.theirTree
	var err error
	switch {
	case len(r.their) == 0:
		merged = r.snapshot // nothing arrived: the snapshot is the merge
	case len(r.plan.ours) > 0:
		merged, err = g.buildTree(ctx, r.theirTree, r.plan.ours)
	}
	if err != nil {
		return "", err
	}
	rep.Committed = nil
	received := s.received(g, r.plan.apply)
	if r.onto != r.theirs {
		// On this host's own commit the remote lacks (see lineage): a
		// new commit only for what changed since, even where that undoes
		// it — the branch never drops it, for the remote may yet take it.
		ontoTree, err := g.tree(ctx, r.onto)
		if err != nil {
			return "", err
		}
		if merged == ontoTree {
			return r.onto, nil
		}
	} else if merged == r.theirTree && (r.theirs != "" || merged == r.empty) && (received == 0 || r.theirs == "") {
		return r.theirs, nil
	}
	// What the commit changes on theirs: this host's changes, as merged
	// (or, with nothing arrived, the snapshot's diff).
	var paths []string
	if len(r.their) > 0 {
		for _, c := range r.plan.ours {
			paths = append(paths, c.path)
		}
		slices.Sort(paths)
	} else {
		// Nothing arrived, so theirs's tree is the base: what the commit
		// changes is this host's changes and its tombstones.
		paths = changedWith(r.ours, r.tombs)
	}
	s.step("committing %d changed files", len(paths))
	msg := fmt.Sprintf(syncSubject+"%s: %d files\n\n%s", rep.Host, len(paths), summary(paths))
	if len(paths) == 0 && received > 0 {
		// Nothing of its own, but sends to its homes landed: a commit
		// that says so, so their senders drop them from their outboxes
		// now (see acked), not at this host's next change.
		msg = fmt.Sprintf(syncSubject+"%s: 0 files, %d sends to its homes received", rep.Host, received)
	}
	var parents []string
	if r.onto != "" {
		parents = append(parents, r.onto)
	}
	mine, err := g.commitTree(ctx, merged, msg, parents...)
	if err != nil {
		return "", err
	}
	rep.Committed = slices.DeleteFunc(paths, func(p string) bool { return strings.HasPrefix(p, HostsDir+"/") })
	return mine, nil
}

// changedWith returns the paths, sorted, where a tree differs from a
// base when ours are its changes from the base and tombs are changes made
// on top of it (a tombstone file written 'M', or removed 'D'): a file
// ours added and tombs removed, or tombs put back as the base had it, is
// no change. It is pure.
func changedWith(ours map[string]change, tombs []change) []string {
	paths := maps.Clone(ours)
	for _, t := range tombs {
		o, had := ours[t.path]
		switch {
		case had && t.status == 'D' && o.old == zeroID,
			had && t.status != 'D' && o.old == t.blob && o.omode == t.mode:
			delete(paths, t.path)
		default:
			paths[t.path] = t
		}
	}
	return slices.Sorted(maps.Keys(paths))
}

// snapshotTree writes the tree of the index that snapshot staged, once.
// The index has not changed since: r.ours is that tree's diff from the
// base, and is known as such.
func (r *round) snapshotTree(ctx context.Context, g *git) error {
	if r.snapshot != "" {
		return nil
	}
	out, err := g.run(ctx, "write-tree")
	if err != nil {
		return err
	}
	r.snapshot = strings.TrimSpace(out)
	g.knowDiff(r.base, r.snapshot, r.ours)
	return nil
}

// bookkeeping reports whether p is the sync's own record, not mail: a
// home's tombstones, a host's record of its name. Reports leave them out.
func bookkeeping(p string) bool {
	return strings.HasPrefix(p, GoneDir+"/") || strings.HasPrefix(p, HostsDir+"/")
}

// received counts the messages apply lands in this host's homes (sends
// from other hosts, arriving).
func (s *Syncer) received(g *git, apply []change) int {
	mine, n := s.mineIn(g.homes), 0
	for _, c := range apply {
		if a, ok := objectOf(c.path); ok && c.status == 'A' && isMessage(c.path) && mine(a) {
			n++
		}
	}
	return n
}

// push pushes commit mine unless the remote has it, and records what the
// remote then holds of this host's sends. It reports false when another
// host pushed first.
func (s *Syncer) push(ctx context.Context, g *git, rep *Report, r *round, mine string) (bool, error) {
	if mine == "" || mine == r.upstream {
		rep.Pushed = mine != ""
		if mine != "" {
			return true, s.pushed(g, r.plan.ours, mine)
		}
		return true, nil
	}
	s.step("pushing to %s %s", rep.Remote, rep.Branch)
	if _, err := g.run(ctx, "push", "-q", rep.Remote, mine+":refs/heads/"+rep.Branch); err != nil {
		var ge *GitError
		if !errors.As(err, &ge) {
			return false, err
		}
		switch pushFailed(ge.Stderr) {
		case pushRaced:
			s.step("another host pushed first: again from the fetch")
			return false, nil // another host pushed first: again
		case pushRefused:
			return false, fmt.Errorf("%w: %w", ErrPushRefused, err)
		}
		return false, err
	}
	// git push moves the tracking ref itself when the remote's fetch
	// refspec covers the branch (the default): then it is left as it is.
	if g.looseRef(r.tracking) != mine {
		if _, err := g.run(ctx, "update-ref", r.tracking, mine); err != nil {
			return false, err
		}
	}
	rep.Pushed = true
	if err := s.pushed(g, r.plan.ours, mine); err != nil {
		return false, err
	}
	// Pack what this sync added while it is here, as git commit would:
	// commit-tree does not, and the next fetch would pay for it instead.
	if g.needsGC() {
		if _, err := g.run(ctx, "gc", "--auto", "--quiet"); err != nil {
			s.warnf("git gc --auto: %v", err)
		}
	}
	return true, nil
}

// Why a push failed, by git's words.
type pushFailure int

const (
	pushBroke   pushFailure = iota // anything else: the network, the remote's disk
	pushRaced                      // another host pushed first: fetch and try again
	pushRefused                    // the remote said no for a reason of its own
)

// pushFailed reads git push's stderr: only a ref git rejected because the
// remote moved on (non-fast-forward, "fetch first") is a race worth
// another round; a ref the remote rejected (a hook, a checked-out branch,
// a protected branch) is its refusal, which no retry changes. It is
// pure.
func pushFailed(stderr string) pushFailure {
	refused := false
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "! [remote rejected]") && (strings.Contains(line, "(failed to update ref)") || strings.Contains(line, "(stale info)")):
			// Another push took the remote's ref lock first, or moved it
			// under this one: a race, on a remote that checks refs late.
			if !refused {
				return pushRaced
			}
		case strings.HasPrefix(line, "! [remote rejected]"):
			refused = true
		case strings.HasPrefix(line, "! [rejected]") && (strings.Contains(line, "(fetch first)") || strings.Contains(line, "(non-fast-forward)")):
			if !refused {
				return pushRaced
			}
		case strings.HasPrefix(line, "! [rejected]"), strings.Contains(line, "denied"), strings.Contains(line, "protected branch"):
			refused = true
		}
	}
	if refused {
		return pushRefused
	}
	return pushBroke
}

// pushed records what the remote now has of this host's changes, ours,
// in commit mine: its sends to other homes, kept until those homes have
// them (see outbox).
func (s *Syncer) pushed(g *git, ours []change, mine string) error {
	return s.sent(g, g.outbox, ours, mine)
}

// addAll stages the whole tree. git stops when a file goes away while
// it reads the folder (an agent archived or claimed it): it tries again,
// a few times, then takes the index as it is — what it missed is still
// in the tree, and the next sync commits it.
func (g *git) addAll(ctx context.Context) error {
	var err error
	for range 5 {
		if _, err = g.run(ctx, "add", "-A", "--ignore-errors", "--", "."); err == nil || !vanished(err) {
			return err
		}
	}
	return nil
}

// vanished reports whether git failed only because files went away, or
// changed under it while it read them: both are in the next snapshot.
func vanished(err error) bool {
	var ge *GitError
	if !errors.As(err, &ge) {
		return false
	}
	for line := range strings.SplitSeq(strings.TrimSpace(ge.Stderr), "\n") {
		switch {
		case strings.Contains(line, "No such file or directory"),
			strings.Contains(line, "short read while indexing"), // a file rewritten while git read it
			strings.Contains(line, "failed to insert into database"),
			strings.HasPrefix(line, "error: unable to index file"),
			strings.HasPrefix(line, "fatal: adding files failed"),
			strings.HasPrefix(line, "warning:"), line == "":
		default:
			return false
		}
	}
	return true
}

// summary counts changed paths by top folder, for the commit message.
func summary(paths []string) string {
	count := map[string]int{}
	for _, p := range paths {
		parts := strings.SplitN(p, "/", 4)
		key := parts[0]
		if len(parts) > 2 {
			key = path.Join(parts[:3]...)
		}
		count[key]++
	}
	var lines []string
	for _, k := range slices.Sorted(maps.Keys(count)) {
		lines = append(lines, fmt.Sprintf("%s: %d", k, count[k]))
	}
	return strings.Join(lines, "\n")
}

// serveRequests serves the claim requests waiting for this host's queues
// (see maildir.Store.ServeRequests) before the snapshot, so the claims
// travel with this sync.
func (s *Syncer) serveRequests(rep *Report) error {
	served, err := s.Store.ServeRequests()
	for _, sv := range served {
		item := "claimed by a stopped sync"
		if sv.Item != nil {
			item = sv.Item.Path
		}
		s.step("served claim request %s: %s", sv.Request.ID, item)
		rep.Served = append(rep.Served, sv.Request.ID+": "+item)
	}
	return err
}

// requestsArrived reports whether pulled holds a claim request for a
// queue homed here.
func (s *Syncer) requestsArrived(pulled []string) bool {
	for _, p := range pulled {
		rest, ok := strings.CutPrefix(p, maildir.RequestDir+"/")
		if !ok {
			continue
		}
		q, _, _ := strings.Cut(rest, "/")
		if s.Store.MayChange(maildir.Address{Kind: maildir.KindQueue, Name: q}) == nil {
			return true
		}
	}
	return false
}

// noteArrivals notes the arrival, now by this host's clock, of the items
// apply adds to queues homed here (see maildir.ArrivalDir), so that their
// claims follow arrival here rather than their senders' clocks. An item
// the same changes remove elsewhere is not an arrival but a move back (a
// release on another host): it keeps its place by name, as a release here
// does. A note that cannot be written is warned about, not an error: the
// items then go by their names.
func (s *Syncer) noteArrivals(g *git, apply []change, their map[string]change) {
	mine := s.mineIn(g.homes)
	moved := map[string]bool{}
	for p, c := range their {
		if c.status == 'D' && isMessage(p) {
			moved[messageID(p)] = true
		}
	}
	byQueue := map[maildir.Address][]string{}
	for _, c := range apply {
		a, ok := objectOf(c.path)
		if !ok || a.Kind != maildir.KindQueue || c.status != 'A' || !isMessage(c.path) ||
			path.Dir(c.path) != a.Dir(false) || moved[messageID(c.path)] || !mine(a) {
			continue
		}
		byQueue[a] = append(byQueue[a], path.Base(c.path))
	}
	now := s.now()
	for _, a := range slices.SortedFunc(maps.Keys(byQueue), func(x, y maildir.Address) int { return strings.Compare(x.Name, y.Name) }) {
		if err := s.Store.NoteArrivals(a, byQueue[a], now); err != nil {
			// Only the order is lost: these items go by their names.
			s.warnf("could not note the arrival of %d items of %s (they are claimed by their names' stamps): %v", len(byQueue[a]), a, err)
		}
	}
}
