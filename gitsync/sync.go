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
	// Git is the git command; "" means "git" on $PATH.
	Git string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// Adopt takes a rewritten remote branch as meant, where a sync would
	// refuse it (see [ErrRewritten]): this host builds on the new history,
	// and its own changes since it last synced go on top. Set it for the
	// one sync a person asked for.
	Adopt bool
	// Progress, if not nil, is told each step, for a person watching.
	Progress func(step string)
	// Warn, if not nil, is told what a person should know even when not
	// watching: leftovers of a stopped sync recovered, files skipped.
	Warn func(msg string)
}

// A Report says what one Sync did. Paths are relative to the root.
type Report struct {
	Host       string
	Remote     string
	Branch     string
	Committed  []string    // this host's changes, committed and pushed
	Pulled     []string    // files that arrived from other hosts
	Pruned     []string    // archived mail that left the working tree
	Renamed    [][2]string // messages added here under a name another host had added too: old, new
	Yielded    []string    // home records dropped: another host claimed the object first
	Duplicates []string    // message ids found in two places after the pull (always reported)
	Reverted   []string    // changes made under a home another host claimed first, undone
	Served     []string    // claim requests this host served, as "request id: item path"
	Recovered  []string    // what a stopped sync had left, put right before this one
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
	g := &git{dir: dir, bin: bin, env: environ(host, true)}
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
func (s *Syncer) cycle(ctx context.Context, g *git, rep *Report) (bool, error) {
	remote, branch := rep.Remote, rep.Branch
	tracking := "refs/remotes/" + remote + "/" + branch
	// The fetch lands beside the tracking ref, which moves only once the
	// new history is accepted: a refused rewrite is refused again at every
	// sync, until a person acts (see lineage).
	fetched := "refs/mailfs/fetched/" + remote + "/" + branch
	s.step("fetching %s %s", remote, branch)
	// --refmap= keeps git from updating the tracking ref itself, as it
	// does for a configured remote; the sync packs after its push itself
	// (needsGC), so fetch's own maintenance would be one more exec.
	if _, err := g.run(ctx, "fetch", "-q", "--no-tags", "--no-auto-maintenance", "--refmap=", remote, "+refs/heads/"+branch+":"+fetched); err != nil {
		var ge *GitError
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "couldn't find remote ref") {
			return false, err
		}
		// An empty remote: this host's commit starts it.
		g.ok(ctx, "update-ref", "-d", fetched)
	}
	// The remote as this host last saw it (known), as it is now (upstream),
	// and this host's branch, in one exec.
	headRef := g.headRef()
	refs, err := g.refs(ctx, tracking, fetched, headRef)
	if err != nil {
		return false, err
	}
	known, upstream, head := refs[tracking], refs[fetched], refs[headRef]
	if headRef == "" {
		head = g.rev(ctx, "HEAD") // detached
	}
	g.head = head
	empty, err := g.emptyTree(ctx)
	if err != nil {
		return false, err
	}

	// What the other hosts' homes now hold of this host's sends to them.
	if err := s.acked(ctx, g, g.outbox, upstream); err != nil {
		return false, err
	}
	// theirs is the commit to build on; base, the tree both this host's
	// working tree and theirs descend from.
	theirs, base, err := s.lineage(ctx, g, rep, known, upstream, head, empty)
	if err != nil {
		return false, err
	}
	// What this host now holds of the remote is what it builds on: never
	// moved back to a wound-back remote, or a cycle started again (another
	// host pushed first) would take what this host saw beyond it for its
	// own changes.
	if theirs != "" && theirs != known {
		if _, err := g.run(ctx, "update-ref", tracking, theirs); err != nil {
			return false, err
		}
	}

	pruned, err := s.prune(ctx, g, head)
	if err != nil {
		return false, err
	}
	rep.Pruned = append(rep.Pruned, pruned...)
	if err := s.serveRequests(rep); err != nil {
		return false, err
	}

	// The snapshot: every file of the tree as it is now.
	s.step("reading the state tree")
	if err := g.addAll(ctx); err != nil {
		return false, err
	}
	out, err := g.run(ctx, "write-tree")
	if err != nil {
		return false, err
	}
	snapshot := strings.TrimSpace(out)
	ours, err := g.diff(ctx, base, snapshot)
	if err != nil {
		return false, err
	}
	theirTree := empty
	if theirs != "" {
		if theirTree, err = g.tree(ctx, theirs); err != nil {
			return false, err
		}
	}
	their, err := g.diff(ctx, base, theirTree)
	if err != nil {
		return false, err
	}

	// A first sync of a root that already held mail, with no history in
	// common with the remote: the homes' word, not the copy's, for their
	// objects (see staleCopies).
	var staleApply []change
	if base == empty && theirTree != empty && len(ours) > 0 {
		graves, err := g.readTombstones(ctx, theirTree)
		if err != nil {
			return false, err
		}
		mine := func(a maildir.Address) bool { return s.Store.MayChange(a) == nil }
		if stale := staleCopies(ours, their, graves, mine); len(stale) > 0 {
			ours = maps.Clone(ours) // the diff is shared: never modified
			staleApply = dropStale(stale, ours, their)
			rep.Reverted = append(rep.Reverted, stale...)
			s.recovered(rep, fmt.Sprintf("this root held mail before its first sync, and shares no history with the remote: %d of its files are older copies of messages their homes have since removed, moved or changed; they are left as the remote has them, not pushed", len(stale)))
		}
	}

	// This host's tombstones, where an add of a message under its homes
	// arrives: it may be a stale copy of one it removed.
	var graves tombstones
	for p, c := range their {
		if c.status != 'A' || !isMessage(p) {
			continue
		}
		if a, ok := objectOf(p); ok && s.Store.MayChange(a) == nil {
			if graves, err = g.readTombstones(ctx, snapshot); err != nil {
				return false, err
			}
			break
		}
	}

	// Decide everything before acting: a sync that stops changes nothing.
	plan, err := s.settle(g, rep, ours, their, graves)
	if err != nil {
		return false, err
	}
	plan.apply = append(plan.apply, staleApply...)
	if err := s.act(ctx, g, plan, rep); err != nil {
		return false, err
	}
	// The tombstones of what this host's homes removed, and of what
	// came back to them (see GoneDir).
	bury, raise := buried(func(a maildir.Address) bool { return s.Store.MayChange(a) == nil }, plan.ours, plan.apply)
	tombs, err := s.writeTombstones(ctx, g, rep.Host, bury, raise)
	if err != nil {
		return false, err
	}
	plan.ours = append(plan.ours, tombs...)

	// The merged tree: theirs with this host's changes on top.
	merged := theirTree
	switch {
	case len(their) == 0 && len(tombs) == 0:
		merged = snapshot // nothing arrived: the snapshot is the merge
	case len(their) == 0:
		if merged, err = g.buildTree(ctx, snapshot, tombs); err != nil {
			return false, err
		}
	case len(plan.ours) > 0:
		if merged, err = g.buildTree(ctx, theirTree, plan.ours); err != nil {
			return false, err
		}
	}

	// The commit: theirs, if this host adds nothing; else one on top.
	mine := theirs
	rep.Committed = nil
	if merged != theirTree || theirs == "" && merged != empty {
		// What the commit changes on theirs: this host's changes, as
		// merged (or, with nothing arrived, the snapshot's diff).
		var paths []string
		if len(their) > 0 {
			for _, c := range plan.ours {
				paths = append(paths, c.path)
			}
			slices.Sort(paths)
		} else {
			changed, err := g.diff(ctx, theirTree, merged)
			if err != nil {
				return false, err
			}
			paths = slices.Sorted(maps.Keys(changed))
		}
		s.step("committing %d changed files", len(paths))
		msg := fmt.Sprintf(syncSubject+"%s: %d files\n\n%s", rep.Host, len(paths), summary(paths))
		var parents []string
		if theirs != "" {
			parents = append(parents, theirs)
		}
		if mine, err = g.commitTree(ctx, merged, msg, parents...); err != nil {
			return false, err
		}
		rep.Committed = paths
	}

	// What the others did, into the working tree; then the branch.
	if mine != "" && (mine != head || len(plan.apply) > 0) {
		if err := s.land(ctx, g, mine, branch, snapshot, plan.apply, rep); err != nil {
			return false, err
		}
	}
	for _, c := range plan.apply {
		if c.status != 'D' && strings.HasPrefix(c.path, "state/") {
			rep.Pulled = append(rep.Pulled, c.path)
		}
	}
	if rep.Duplicates, err = duplicates(s.Store.Dir(), rep.Pulled); err != nil {
		return false, err
	}

	if mine == "" || mine == upstream {
		rep.Pushed = mine != ""
		if mine != "" {
			if err := s.pushed(g, plan.ours, mine); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	s.step("pushing to %s %s", remote, branch)
	if _, err := g.run(ctx, "push", "-q", remote, mine+":refs/heads/"+branch); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "rejected") || strings.Contains(ge.Stderr, "fetch first")) {
			s.step("another host pushed first: again from the fetch")
			return false, nil // another host pushed first: again
		}
		return false, err
	}
	// git push moves the tracking ref itself when the remote's fetch
	// refspec covers the branch (the default): then it is left as it is.
	if g.looseRef(tracking) != mine {
		if _, err := g.run(ctx, "update-ref", tracking, mine); err != nil {
			return false, err
		}
	}
	rep.Pushed = true
	if err := s.pushed(g, plan.ours, mine); err != nil {
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

// vanished reports whether git failed only because files went away.
func vanished(err error) bool {
	var ge *GitError
	if !errors.As(err, &ge) {
		return false
	}
	for line := range strings.SplitSeq(strings.TrimSpace(ge.Stderr), "\n") {
		switch {
		case strings.Contains(line, "No such file or directory"),
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
