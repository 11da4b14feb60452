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

	"github.com/mailfs/mailfs/internal/chipset"
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

// A ConflictError says which paths stopped a sync. The repository was put
// back as it was: every local change is still there, uncommitted, and
// nothing was pushed.
type ConflictError struct {
	Paths []string // relative to the root
	Why   string
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
	// Progress, if not nil, is told each step, for a person watching.
	Progress func(step string)
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
		return nil, fmt.Errorf("%w: name it first (mailfs host NAME); only named hosts have homes, and homes are what keep syncs free of conflicts", ErrNoHost)
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

	for rep.Tries = 1; rep.Tries <= maxTries; rep.Tries++ {
		done, err := s.cycle(ctx, g, rep)
		if err != nil || done {
			return rep, err
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
	root, err := chipset.New(s.Store.Dir())
	if err != nil {
		return nil, err
	}
	r, err := root.Open(true)
	if err != nil {
		root.Close()
		return nil, err
	}
	d, err := r.MkdirAll("runtime/sync.lock")
	if err != nil {
		root.Close()
		return nil, err
	}
	unlock, err := d.Lock()
	if err != nil {
		d.Close()
		root.Close()
		return nil, err
	}
	return func() { unlock(); d.Close(); root.Close() }, nil
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
			return nil, "", "", fmt.Errorf("%w: %s has no repository yet; give the remote to start one: mailfs sync --remote URL", ErrNoRemote, dir)
		}
		branch := s.Branch
		if branch == "" {
			branch = "main"
		}
		s.step("creating the repository in %s", dir)
		if _, err := g.run(ctx, "init", "-q", "-b", branch); err != nil {
			return nil, "", "", err
		}
	} else if top, err := g.run(ctx, "rev-parse", "--show-toplevel"); err != nil {
		return nil, "", "", err
	} else if filepath.Clean(strings.TrimSpace(top)) != filepath.Clean(dir) {
		return nil, "", "", fmt.Errorf("gitsync: %s is not the top of its repository (%s); mailfs sync keeps the root in a repository of its own", dir, strings.TrimSpace(top))
	}
	if email, _ := g.run(ctx, "config", "user.email"); strings.TrimSpace(email) == "" {
		g.env = environ(host, false)
	}
	// Never guess renames, in any merge this repository does. Set once:
	// reading them back is one git call, setting each is another.
	have, _ := g.run(ctx, "config", "--local", "--list")
	for _, kv := range [][2]string{{"merge.renames", "false"}, {"merge.directoryRenames", "false"},
		{"diff.renames", "false"}, {"core.sharedRepository", "0600"}, {"pull.rebase", "true"}, {"rebase.autoStash", "true"},
		{"gc.autoDetach", "false"}} { // no git process outlives the sync
		if strings.Contains("\n"+have, "\n"+strings.ToLower(kv[0])+"="+kv[1]+"\n") {
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
		out, err := g.run(ctx, "symbolic-ref", "--short", "HEAD")
		if branch = strings.TrimSpace(out); err != nil || branch == "" {
			branch = "main"
		}
	}
	return g, remote, branch, nil
}

// remote returns the name of the remote to use, adding "origin" for a URL.
func (s *Syncer) remote(ctx context.Context, g *git) (string, error) {
	out, err := g.run(ctx, "remote")
	if err != nil {
		return "", err
	}
	names := strings.Fields(out)
	want := s.Remote
	switch {
	case want == "" && slices.Contains(names, "origin"):
		return "origin", nil
	case want == "":
		return "", fmt.Errorf("%w: the repository at %s has no \"origin\"; give one: mailfs sync --remote URL", ErrNoRemote, g.dir)
	case slices.Contains(names, want):
		return want, nil
	case slices.Contains(names, "origin"):
		url, _ := g.run(ctx, "remote", "get-url", "origin")
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

// cycle is one fetch, settle, commit, rebase, push round. It reports
// done when the remote has everything, false to start again.
func (s *Syncer) cycle(ctx context.Context, g *git, rep *Report) (bool, error) {
	remote, branch := rep.Remote, rep.Branch
	s.step("fetching %s %s", remote, branch)
	tracking := "refs/remotes/" + remote + "/" + branch
	if _, err := g.run(ctx, "fetch", "-q", "--no-tags", remote, "+refs/heads/"+branch+":"+tracking); err != nil {
		var ge *GitError
		if !errors.As(err, &ge) || !strings.Contains(ge.Stderr, "couldn't find remote ref") {
			return false, err
		}
		// An empty remote: this host's commit starts it.
	}
	upstream := g.rev(ctx, tracking)
	head := g.rev(ctx, "HEAD")

	// A commit a failed push left is taken apart again, so that what it
	// holds is settled against what the others pushed meanwhile.
	if head != "" && upstream != "" {
		base, _ := g.run(ctx, "merge-base", head, upstream)
		base = strings.TrimSpace(base)
		switch {
		case base == "":
			// Unrelated histories (a host that committed before it ever
			// fetched): start this host's history over on the remote's.
			if err := g.unbirth(ctx, branch); err != nil {
				return false, err
			}
			head = ""
		case base != head:
			if _, err := g.run(ctx, "reset", "-q", "--mixed", base); err != nil {
				return false, err
			}
			head = base
		}
	}

	if err := s.settle(ctx, g, rep, head, upstream); err != nil {
		return false, err
	}
	pruned, err := s.prune(ctx, g, head)
	if err != nil {
		return false, err
	}
	rep.Pruned = append(rep.Pruned, pruned...)

	committed, err := s.commit(ctx, g, rep.Host)
	if err != nil {
		return false, err
	}
	if committed != nil {
		rep.Committed = committed
	}

	if upstream != "" {
		// git writes what it pulls into the tree, queues included: hold
		// the claim lock meanwhile, so that a claim's cursor never misses
		// an item it adds (see maildir.Store.LockQueues).
		unlock, err := s.Store.LockQueues()
		if err != nil {
			return false, err
		}
		err = s.replay(ctx, g, head, upstream, remote, branch)
		unlock()
		if err != nil {
			return false, err
		}
		pulled, err := s.arrived(ctx, g, head, upstream)
		if err != nil {
			return false, err
		}
		rep.Pulled = append(rep.Pulled, pulled...)
		// What this host adds to the remote, after the replay dropped what
		// the remote had already (a .gitignore both hosts wrote, say).
		if rep.Committed, err = g.paths(ctx, "diff", "--name-only", "-z", "--no-renames", upstream, "HEAD"); err != nil {
			return false, err
		}
		rep.Duplicates, err = duplicates(s.Store.Dir(), pulled)
		if err != nil {
			return false, err
		}
	}

	mine := g.rev(ctx, "HEAD")
	if mine == "" || mine == upstream {
		rep.Pushed = mine != ""
		return true, nil
	}
	s.step("pushing to %s %s", remote, branch)
	if _, err := g.run(ctx, "push", "-q", remote, "HEAD:refs/heads/"+branch); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && (strings.Contains(ge.Stderr, "rejected") || strings.Contains(ge.Stderr, "fetch first")) {
			s.step("another host pushed first: again from the fetch")
			return false, nil // another host pushed first: again
		}
		return false, err
	}
	if _, err := g.run(ctx, "update-ref", "refs/remotes/"+remote+"/"+branch, "HEAD"); err != nil {
		return false, err
	}
	rep.Pushed = true
	return true, nil
}

// unbirth makes the branch unborn again, keeping the index and the files.
func (g *git) unbirth(ctx context.Context, branch string) error {
	if _, err := g.run(ctx, "symbolic-ref", "HEAD", "refs/heads/"+branch); err != nil {
		return err
	}
	_, err := g.run(ctx, "update-ref", "-d", "refs/heads/"+branch)
	return err
}

// commit commits every change to the state tree, and returns the paths.
func (s *Syncer) commit(ctx context.Context, g *git, host string) ([]string, error) {
	if _, err := g.run(ctx, "add", "-A"); err != nil { // the root: .gitignore keeps runtime/ and temps out
		return nil, err
	}
	changed, err := g.paths(ctx, "diff", "--cached", "--name-only", "--no-renames", "-z")
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	s.step("committing %d changed files", len(changed))
	msg := fmt.Sprintf("mailfs sync from %s: %d files\n\n%s", host, len(changed), summary(changed))
	if _, err := g.run(ctx, "commit", "-q", "--no-verify", "-m", msg); err != nil {
		return nil, err
	}
	return changed, nil
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

// replay puts this host's commit on top of upstream: a checkout of the
// remote's branch when this host has none yet, else a rebase. A failure
// is put back (see putBack).
func (s *Syncer) replay(ctx context.Context, g *git, head, upstream, remote, branch string) error {
	if g.rev(ctx, "HEAD") == "" {
		// Nothing of this host's yet: take the remote's branch.
		if _, err := g.run(ctx, "checkout", "-q", "-B", branch, upstream); err != nil {
			return s.putBack(ctx, g, head, branch, err)
		}
		return nil
	}
	s.step("replaying this host's commit on %s/%s", remote, branch)
	if _, err := g.run(ctx, "rebase", "-q", "--autostash", "-X", "no-renames", upstream); err != nil {
		return s.putBack(ctx, g, head, branch, err)
	}
	return nil
}

// putBack undoes a failed replay: aborts the rebase, which restores any
// stash, and takes this cycle's commit apart again, leaving every local
// change in the working tree, uncommitted. It returns the error to report.
func (s *Syncer) putBack(ctx context.Context, g *git, head, branch string, cause error) error {
	paths, _ := g.paths(ctx, "diff", "--name-only", "-z", "--diff-filter=U")
	if _, err := g.run(ctx, "rebase", "--abort"); err != nil {
		// not in a rebase (a checkout that refused): nothing to abort
		_ = err
	}
	var err error
	if head != "" {
		_, err = g.run(ctx, "reset", "-q", "--mixed", head)
	} else if err = g.unbirth(ctx, branch); err == nil {
		_, err = g.run(ctx, "read-tree", "--empty")
	}
	if err != nil {
		return fmt.Errorf("%w; putting the repository back failed too: %w", cause, err)
	}
	why := "git stopped"
	var ge *GitError
	if errors.As(cause, &ge) {
		why = firstLine(ge.Stderr)
		if len(paths) == 0 {
			paths = untrackedIn(ge.Stderr)
		}
	}
	return &ConflictError{Paths: paths, Why: why}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// untrackedIn returns the paths git lists, one per tab-indented line,
// when it refuses to overwrite files.
func untrackedIn(stderr string) []string {
	var ps []string
	for line := range strings.SplitSeq(stderr, "\n") {
		if p, ok := strings.CutPrefix(line, "\t"); ok {
			ps = append(ps, strings.TrimSpace(p))
		}
	}
	return ps
}
