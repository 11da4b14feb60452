package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// ErrRewritten is returned when the remote's branch was rewritten (a
// force-push) so that it no longer holds what this host last synced, and
// the rewrite is neither a rewind nor a squash that keeps the same tree.
// Nothing was changed.
var ErrRewritten = errors.New("gitsync: the remote's branch was rewritten")

// lineage decides what this cycle builds on (theirs) and the tree that it
// and this host's working tree both descend from (base).
//
// A remote rewritten by force-push is met in one of four ways. Wound back
// (what is there now is older than what this host saw): this host still
// has what was lost, builds on its own copy and pushes it back. Wound back
// and built on since (what is there shares history with what this host
// saw, but holds neither): what the remote lost since the fork goes back
// on top of what it has now, in a merge of the two (see putBack).
// Squashed (another history, the same tree): the new history is adopted.
// Anything else: refused, with nothing changed, because merging with a
// history that dropped files would delete them here, or push them back
// where a person meant them gone — unless a person said it is meant
// ([Syncer.Adopt]).
//
// A new history (squashed, adopted) does not hold this host's branch:
// unrelated reports it, and the tracking ref then moves only once what
// arrived has landed (see cycle). Its base is the tree this host's
// working tree and known both descend from (see landedBase), not known's
// own: a sync stopped after it moved the tracking ref and before it
// landed leaves this host's tree behind known.
func (s *Syncer) lineage(ctx context.Context, g *git, rep *Report, known, upstream, head, empty string) (theirs, base string, unrelated bool, err error) {
	theirs = upstream
	if upstream == "" && head != "" {
		// The remote has no such branch: a new repository, a branch
		// deleted, a repository re-created empty, or one that refused
		// this host's first push. Never a deletion: this host builds on
		// the remote as it last saw it (else on its own branch), and
		// pushes its whole tree with its history.
		theirs = known
		if theirs == "" {
			theirs = head
		} else {
			s.recovered(rep, fmt.Sprintf("the remote has no branch %s (deleted, or the repository made again): this host's whole tree goes there with its history, and nothing is deleted here", rep.Branch))
		}
	}
	if known != "" && upstream != "" && known != upstream {
		r, err := s.lookAtRewrite(ctx, g, known, upstream)
		if err != nil {
			return "", "", false, err
		}
		if !r.ahead {
			at, err := g.landedUnrecorded(ctx, head, known, upstream)
			if err != nil {
				return "", "", false, err
			}
			if at != "" {
				// A stopped sync took this new history, and landed it, but
				// never recorded it: this host builds on it from what it
				// landed, as from any remote that moved on. Judged again
				// against known (which this host's tree has left), the
				// changes it landed would look like its own.
				s.recovered(rep, fmt.Sprintf("a stopped sync had taken the remote's new history of %s here (up to %.12s) and never recorded it: this sync builds on it", rep.Branch, at))
				r = rewriteSeen{ahead: true}
			}
		}
		switch judgeRewrite(r, s.Adopt) {
		case keepTheirs:
		case woundBack:
			s.recovered(rep, fmt.Sprintf("the remote's branch %s was wound back to %.12s; this host's copy of what it lost (up to %.12s) goes back with this sync", rep.Branch, upstream, known))
			theirs = known
		case compacted:
			s.recovered(rep, fmt.Sprintf("the remote's branch %s was compacted (%.12s, a squash of a history that holds %.12s); this host takes the new history", rep.Branch, upstream, r.compactedAt))
			// What this host holds above the commit the compaction
			// replaced (a put-back it never pushed) is its own, on top.
			atTree, err := g.tree(ctx, r.compactedAt)
			if err != nil {
				return "", "", false, err
			}
			base, err := s.landedBase(ctx, g, head, r.compactedAt, atTree, empty)
			return upstream, base, true, err
		case squashed:
			s.recovered(rep, fmt.Sprintf("the remote's branch %s was rewritten (%.12s, the same files as %.12s); this host takes the new history", rep.Branch, upstream, known))
			base, err := s.landedBase(ctx, g, head, known, r.knownTree, empty)
			return upstream, base, true, err
		case forked:
			if theirs, err = s.putBack(ctx, g, rep, known, upstream, r.fork, r.forkTree); err != nil {
				return "", "", false, err
			}
		case adopted:
			if theirs, err = s.adopt(ctx, g, rep, known, upstream, r.rewrite); err != nil {
				return "", "", false, err
			}
			base, err := s.landedBase(ctx, g, head, known, r.knownTree, empty)
			return theirs, base, true, err
		case refused:
			return "", "", false, fmt.Errorf("%w: %s/%s no longer holds %.12s, which this host last synced, and its files differ; nothing was changed, and every sync refuses the same until a person acts. If the rewrite was a mistake, put the branch back from this host: git -C %s push --force %s %s:refs/heads/%s. If it is meant (a squash made while this host was behind is), take it here: mailfs sync --adopt",
				ErrRewritten, rep.Remote, rep.Branch, known, g.dir, rep.Remote, known, rep.Branch)
		}
	}
	switch {
	case head == "":
		return theirs, empty, false, nil
	case theirs == "" || head == theirs:
		base, err = g.tree(ctx, head)
		return theirs, base, false, err
	}
	base, mb, err := g.base(ctx, head, theirs)
	if err != nil {
		return "", "", false, err
	}
	if mb == "" {
		// Unrelated histories (a host that committed before it ever
		// fetched): everything here counts as this host's adds.
		return theirs, empty, false, nil
	}
	// A commit of this host's own that the remote holds beyond the merge
	// base: a killed sync's push that the server took after this host's
	// branch had moved on (it had the whole pack, and moved its branch
	// once the client was gone). Its files are this host's own older
	// state, not another host's changes: a sync lands its commit before
	// it pushes it, so this host's tree has held all of it and changed
	// on from there. Judged against the merge base, what it held then
	// (an item since claimed, mail since read) would come back as adds.
	late, err := g.ownSince(ctx, mb, theirs, rep.Host)
	if err != nil || late == "" {
		return theirs, base, false, err
	}
	s.recovered(rep, fmt.Sprintf("the remote took a push of this host's (%.12s) after this host had moved on (a sync killed as it pushed): it is this host's own older state, and this sync builds from it", late))
	base, err = g.tree(ctx, late)
	return theirs, base, false, err
}

// ownSince returns a commit that a sync of this host made (its subject
// says so) on base, that theirs holds, and that this host's branch once
// held (HEAD's reflog: landed here, and not by a machine that held this
// host's name before a take-over); the newest such, "" when none. That
// is the commit of a sync killed as it pushed, built on the remote as it
// was (base, where the host's later syncs built too), which the server
// took after the host had moved on.
func (g *git) ownSince(ctx context.Context, base, theirs, host string) (string, error) {
	if base == theirs {
		return "", nil
	}
	out, err := g.run(ctx, "log", "--topo-order", "--format=%H%x00%P%x00%s", base+".."+theirs)
	if err != nil {
		return "", err
	}
	var own []string
	for line := range strings.Lines(out) {
		f := strings.SplitN(strings.TrimSpace(line), "\x00", 3)
		if len(f) == 3 && strings.HasPrefix(f[2], syncSubject+host+":") && strings.HasPrefix(f[1]+" ", base+" ") {
			own = append(own, f[0])
		}
	}
	if len(own) == 0 {
		return "", nil
	}
	out, err = g.run(ctx, "reflog", "show", "--format=%H", "HEAD")
	if err != nil {
		return "", err
	}
	landed := map[string]bool{}
	for line := range strings.Lines(out) {
		landed[strings.TrimSpace(line)] = true
	}
	for _, c := range own {
		if landed[c] {
			return c, nil
		}
	}
	return "", nil
}

// landedBase returns the tree that this host's working tree (last landed
// at head) and known, the commit a new history was judged against, both
// descend from: known's tree when head holds it (the usual case), head's
// when a stopped sync moved the tracking ref to known and never landed
// it, their merge base's when both moved on; empty when nothing landed.
func (s *Syncer) landedBase(ctx context.Context, g *git, head, known, knownTree, empty string) (string, error) {
	switch {
	case head == "":
		return empty, nil
	case head == known:
		return knownTree, nil
	}
	tree, mb, err := g.base(ctx, head, known)
	if err != nil || mb == "" {
		return knownTree, err
	}
	return tree, nil
}

// landedUnrecorded returns the commit of the remote's history (upstream)
// that this host's branch (head) landed and the commit it last recorded
// as the remote (known) does not hold: the newest they share, when known
// does not hold it. That is a new history (squashed, compacted, adopted,
// with what was put back) that a sync took, landed and was stopped before
// it moved the tracking ref. "" when head holds nothing of upstream
// beyond known.
func (g *git) landedUnrecorded(ctx context.Context, head, known, upstream string) (string, error) {
	if head == "" || head == known {
		return "", nil
	}
	out, err := g.run(ctx, "merge-base", head, upstream)
	var ge *GitError
	if err != nil && errors.As(err, &ge) && strings.TrimSpace(out) == "" {
		return "", nil // no history in common
	}
	if err != nil {
		return "", err
	}
	mb := strings.TrimSpace(out)
	if held, err := g.ok(ctx, "merge-base", "--is-ancestor", mb, known); err != nil || held {
		return "", err
	}
	return mb, nil
}

// A rewriteSeen is what a sync found of the remote's history against the
// commit it last synced (known), when the two differ.
type rewriteSeen struct {
	ahead       bool   // the remote holds known: it moved on, nothing was rewritten
	back        bool   // known holds the remote: it was wound back
	knownTree   string // the files of known
	squashed    bool   // a commit of the new history has known's files
	compacted   bool   // a compaction (see compact) of a history that held known is in the new history
	compactedAt string // the newest commit of known's first-parent line that the compaction replaced
	rewrite     string // the tree a person made: the newest commit of the new history no sync made (else its oldest)
	fork        string // the commit the two histories share, when they do (not looked for when back or squashed)
	forkTree    string
}

// What a sync does with a remote rewritten under it.
type rewriteAnswer int

const (
	keepTheirs rewriteAnswer = iota // nothing was rewritten: build on the remote
	woundBack                       // build on this host's copy, and push it back
	squashed                        // take the new history
	compacted                       // take the new history: a squash of one that held known
	forked                          // put what the remote lost back on top of what it has now
	adopted                         // a person said the rewrite is meant: take it
	refused                         // change nothing, and say what a person can do
)

// judgeRewrite decides what a sync does with what it found: a pure
// function of the finding (and whether a person said --adopt), tested by
// a table (TestJudgeRewrite).
func judgeRewrite(r rewriteSeen, adopt bool) rewriteAnswer {
	switch {
	case r.ahead:
		return keepTheirs
	case r.back:
		return woundBack
	case r.squashed:
		return squashed
	case r.compacted:
		return compacted
	case r.fork != "":
		return forked
	case adopt:
		return adopted
	}
	return refused
}

// lookAtRewrite finds what judgeRewrite needs: whether the remote still
// holds known or was wound back to one of its ancestors, whether the new
// history holds known's files (the first 1,000 commits of its first
// parents), which tree a person made, and where the histories fork.
func (s *Syncer) lookAtRewrite(ctx context.Context, g *git, known, upstream string) (rewriteSeen, error) {
	var r rewriteSeen
	var err error
	if r.ahead, err = g.ok(ctx, "merge-base", "--is-ancestor", known, upstream); err != nil || r.ahead {
		return r, err
	}
	if r.back, err = g.ok(ctx, "merge-base", "--is-ancestor", upstream, known); err != nil {
		return r, err
	}
	if r.knownTree, err = g.tree(ctx, known); err != nil {
		return r, err
	}
	log, err := g.run(ctx, "log", "--first-parent", "-n", "1000", "--format=%T %s", upstream)
	if err != nil {
		return r, err
	}
	var trees []string
	trees, r.rewrite = treesOf(log)
	r.squashed = slices.Contains(trees, r.knownTree)
	if !r.back && !r.squashed && strings.Contains(log, " "+compactSubject) {
		// The compaction's message lists the commits it replaced.
		bodies, err := g.run(ctx, "log", "--first-parent", "-n", "1000", "--grep=^"+compactSubject, "--format=%B", upstream)
		if err != nil {
			return r, err
		}
		// known itself, or (a put-back or an adopt this host made and
		// never pushed) its newest first-parent ancestor the remote had.
		line, err := g.run(ctx, "rev-list", "--first-parent", "-n", "1000", known)
		if err != nil {
			return r, err
		}
		r.compactedAt = compactedFrom(bodies, strings.Fields(line))
		r.compacted = r.compactedAt != ""
	}
	if !r.back && !r.squashed {
		r.forkTree, r.fork, err = g.base(ctx, known, upstream)
	}
	if err == nil && !r.back && !r.squashed && !r.compacted && r.fork == "" {
		// The other way round: this host took a compaction, and the
		// remote now holds the history it replaced, built on (a branch
		// deleted or re-created, then pushed by a host that had not
		// taken it). The newest replaced commit the remote holds is
		// where the two fork.
		bodies, err := g.run(ctx, "log", "--first-parent", "-n", "1000", "--grep=^"+compactSubject, "--format=%B", known)
		if err != nil || !strings.Contains(bodies, "\n") {
			return r, err
		}
		line, err := g.run(ctx, "rev-list", "--first-parent", "-n", "1000", upstream)
		if err != nil {
			return r, err
		}
		if at := compactedFrom(bodies, strings.Fields(line)); at != "" {
			r.fork = at
			r.forkTree, err = g.tree(ctx, at)
		}
	}
	return r, err
}

// treesOf reads "git log --format='%T %s'" of a history: its trees, newest
// first, and the tree a person made — the newest whose commit no sync made,
// else the oldest.
func treesOf(log string) (trees []string, rewrite string) {
	for l := range strings.Lines(log) {
		tree, subject, _ := strings.Cut(strings.TrimSpace(l), " ")
		trees = append(trees, tree)
		if rewrite == "" && !strings.HasPrefix(subject, syncSubject) {
			rewrite = tree
		}
	}
	if rewrite == "" && len(trees) > 0 {
		rewrite = trees[len(trees)-1]
	}
	return trees, rewrite
}

// syncSubject begins the subject of every commit a sync makes, so that a
// commit a person made (a rewrite) can be told from them.
const syncSubject = "mailfs sync from "

// maxBaseDepth bounds how deep base looks for the bases of merge bases.
const maxBaseDepth = 8

// base returns the tree that commits a and b both descend from, and a
// merge base of theirs that names it ("" when they share no history).
//
// When criss-crossed merges left several merge bases — put-backs make
// them: two hosts each merge what a wound-back remote lost into what
// another pushed — the tree is a virtual one, made as git's recursive
// merge makes it: the bases merged path by path over their own base. Any
// one base alone is wrong for some path: a file only the other base holds
// looks added, or deleted, on a side that never touched it, and a message
// comes back from where its home archived or deleted it.
func (g *git) base(ctx context.Context, a, b string) (tree, commit string, err error) {
	return g.baseAt(ctx, a, b, 0)
}

func (g *git) baseAt(ctx context.Context, a, b string, depth int) (string, string, error) {
	out, err := g.run(ctx, "merge-base", "--all", a, b)
	bases := strings.Fields(out)
	var ge *GitError
	switch {
	case err != nil && errors.As(err, &ge) && len(bases) == 0:
		return "", "", nil
	case err != nil:
		return "", "", err
	}
	tree, err := g.tree(ctx, bases[0])
	if err != nil || depth >= maxBaseDepth {
		return tree, bases[0], err
	}
	virtual := bases[0]
	for i, next := range bases[1:] {
		nextTree, err := g.tree(ctx, next)
		if err != nil {
			return "", "", err
		}
		under, c, err := g.baseAt(ctx, virtual, next, depth+1)
		if err != nil {
			return "", "", err
		}
		if c == "" {
			if under, err = g.emptyTree(ctx); err != nil {
				return "", "", err
			}
		}
		if tree, err = g.merge3(ctx, under, tree, nextTree); err != nil {
			return "", "", err
		}
		if i+2 < len(bases) { // the next base's own base needs a commit
			if virtual, err = g.commitTree(ctx, tree, "mailfs sync: a virtual merge base", virtual, next); err != nil {
				return "", "", err
			}
		}
	}
	return tree, bases[0], nil
}

// merge3 returns tree a with what b changed since their base, on the
// paths a did not change (where both did, a's change stands).
func (g *git) merge3(ctx context.Context, base, a, b string) (string, error) {
	da, err := g.diff(ctx, base, a)
	if err != nil {
		return "", err
	}
	db, err := g.diff(ctx, base, b)
	if err != nil {
		return "", err
	}
	var take []change
	for _, p := range slices.Sorted(maps.Keys(db)) {
		if _, ok := da[p]; !ok {
			take = append(take, db[p])
		}
	}
	if len(take) == 0 {
		return a, nil
	}
	return g.buildTree(ctx, a, take)
}

// putBackOn returns tree up with what it lost of tree known since tree
// fork put back on it (see lost), and how many files went back.
func (g *git) putBackOn(ctx context.Context, fork, known, up string) (string, int, error) {
	back, err := g.lost(ctx, fork, known, up)
	if err != nil || len(back) == 0 {
		return up, 0, err
	}
	tree, err := g.buildTree(ctx, up, back)
	return tree, len(back), err
}

// lost returns the changes that put back on tree up what it lost of tree
// known since tree fork: the paths known changed since fork and up did
// not (where both did, up's newer version stands) — but not a message
// that up added since under another name: its home moved it on (archived
// it, or handed a queue item to a claimant) after this host last saw it,
// and putting it back would make it two; nor one its home tombstoned in
// up (see GoneDir).
func (g *git) lost(ctx context.Context, fork, known, up string) ([]change, error) {
	mine, err := g.diff(ctx, fork, known)
	if err != nil {
		return nil, err
	}
	since, err := g.diff(ctx, fork, up)
	if err != nil {
		return nil, err
	}
	graves, err := g.buriedSince(ctx, fork, known, up)
	if err != nil {
		return nil, err
	}
	return lostOf(mine, since, graves), nil
}

// lostOf decides what goes back (see lost) from the changes known made
// since the fork (mine), those up made (since), and the tombstones that
// stand in up (see buriedSince). It is pure.
func lostOf(mine, since map[string]change, graves tombstones) []change {
	movedOn := map[string]bool{}
	for p, c := range since {
		if id := messageID(p); id != "" && c.status == 'A' {
			movedOn[id] = true
		}
	}
	var back []change
	skipped := map[string]bool{} // ids whose add stays out
	for _, p := range slices.Sorted(maps.Keys(mine)) {
		c := mine[p]
		if _, changed := since[p]; changed {
			continue
		}
		if c.status == 'A' && movedOn[messageID(p)] {
			continue // up holds it elsewhere: the remove may go back
		}
		if c.status == 'A' && graves.of(p) != "" {
			skipped[messageID(p)] = true
			continue
		}
		back = append(back, c)
	}
	// A move is its add and its remove: never the remove alone, which
	// would leave the message nowhere.
	return slices.DeleteFunc(back, func(c change) bool {
		return c.status == 'D' && isMessage(c.path) && skipped[messageID(c.path)]
	})
}

// buriedSince returns the tombstones of tree up that still stand as this
// host saw the home last (tree known): those up has and known has too, or
// that were laid after fork. One the home raised after fork (a release put
// the item back) and known shows raised is not one: up is older there.
func (g *git) buriedSince(ctx context.Context, fork, known, up string) (tombstones, error) {
	inUp, err := g.readTombstones(ctx, up)
	if err != nil || len(inUp) == 0 {
		return inUp, err
	}
	inKnown, err := g.readTombstones(ctx, known)
	if err != nil {
		return nil, err
	}
	inFork, err := g.readTombstones(ctx, fork)
	if err != nil {
		return nil, err
	}
	maps.DeleteFunc(inUp, func(k, _ string) bool { return inKnown[k] == "" && inFork[k] != "" })
	return inUp, nil
}

// putBack makes the commit a sync builds on when the remote was wound
// back to fork and others pushed on top since (upstream), while this host
// still holds what the remote lost (fork..known): upstream's tree with the
// lost changes put back on it — except on paths changed since the fork,
// whose newer version stands — and both histories as its parents, so
// every host's next sync finds what it last saw below it. forkTree is the
// tree of fork, or the virtual base of several (see base).
func (s *Syncer) putBack(ctx context.Context, g *git, rep *Report, known, upstream, fork, forkTree string) (string, error) {
	knownTree, err := g.tree(ctx, known)
	if err != nil {
		return "", err
	}
	upTree, err := g.tree(ctx, upstream)
	if err != nil {
		return "", err
	}
	tree, back, err := g.putBackOn(ctx, forkTree, knownTree, upTree)
	if err != nil {
		return "", err
	}
	if tree, back, err = s.putBackUnsent(ctx, g, knownTree, tree, back); err != nil {
		return "", err
	}
	commit, err := g.commitTree(ctx, tree, fmt.Sprintf(syncSubject+"%s: put back %d files the remote lost when it was wound back to %.12s", rep.Host, back, fork), upstream, known)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("the remote's branch %s was wound back to %.12s and built on since; this host's copy of what it lost (%d files, up to %.12s) goes back with this sync", rep.Branch, fork, back, known)
	s.recovered(rep, msg)
	return commit, nil
}

// adopt makes the commit a sync builds on when a person took a rewritten
// remote branch (upstream) as meant. It is upstream, with two kinds of
// file as this host has them:
//
//   - What the rewrite lost rather than meant. A remote wound back and
//     then squashed (or rewritten) before this host put back what it lost
//     lacks the commits this host last synced above some point: the
//     newest commit of this host's line that the rewrite (the tree a
//     person made, without what syncs pushed on top) holds (see
//     lastHeld). What changed above it goes back, as for a wound-back
//     remote (see putBack), except where others changed a path since:
//     without it, a message this host sent, or a queue item it moved to
//     its claimant, is gone from every host.
//   - The files of this host's homes, where the rewrite holds an older
//     version than this host last synced (known), lacks one, or holds one
//     that this host's history removed (a message since archived or
//     deleted here): only a home changes its files, so the rewrite cannot
//     have meant it.
//
// What others added since stands, as does everything else the rewrite
// holds.
func (s *Syncer) adopt(ctx context.Context, g *git, rep *Report, known, upstream, rewrite string) (string, error) {
	knownTree, err := g.tree(ctx, known)
	if err != nil {
		return "", err
	}
	upTree, err := g.tree(ctx, upstream)
	if err != nil {
		return "", err
	}
	held, err := g.lastHeld(ctx, known, rewrite)
	if err != nil {
		return "", err
	}
	tree, back := upTree, 0
	if held != "" && held != known {
		heldTree, err := g.tree(ctx, held)
		if err != nil {
			return "", err
		}
		if tree, back, err = g.putBackOn(ctx, heldTree, knownTree, upTree); err != nil {
			return "", err
		}
	}
	if tree, back, err = s.putBackUnsent(ctx, g, knownTree, tree, back); err != nil {
		return "", err
	}
	if tree, back, err = s.putBackHeld(ctx, g, knownTree, tree, back); err != nil {
		return "", err
	}
	keep, err := s.homesAsKnown(ctx, g, rep, known, knownTree, tree)
	if err != nil {
		return "", err
	}
	commit := upstream
	if len(keep) > 0 {
		if tree, err = g.buildTree(ctx, tree, keep); err != nil {
			return "", err
		}
	}
	if tree != upTree {
		if commit, err = g.commitTree(ctx, tree, fmt.Sprintf(syncSubject+"%s: adopt the rewritten branch, with %d files it lost put back and %d files of this host's homes as it has them", rep.Host, back, len(keep)), upstream); err != nil {
			return "", err
		}
	}
	msg := fmt.Sprintf("the remote's branch %s was rewritten (%.12s, other files than %.12s); taken as meant, as asked: this host's changes since it last synced go on top, %d files it lost since %.12s go back, and %d files of its homes stay as it has them", rep.Branch, upstream, known, back, held, len(keep))
	s.recovered(rep, msg)
	return commit, nil
}

// homesAsKnown returns the changes that make tree hold the files of this
// host's homes as this host last synced them (known, its tree
// knownTree): a file the rewrite changed or removed goes back to known's
// version; one it added stays, unless this host's home moved it
// (archived, restored, claimed) or deleted it since, or known's history
// removed it; this host's tombstones are known's, since only it writes
// them.
func (s *Syncer) homesAsKnown(ctx context.Context, g *git, rep *Report, known, knownTree, tree string) ([]change, error) {
	d, err := g.diff(ctx, knownTree, tree)
	if err != nil {
		return nil, err
	}
	knownFiles, err := g.files(ctx, knownTree)
	if err != nil {
		return nil, err
	}
	// Where this host's homes held each message when it last synced.
	homeAt := map[string]string{}
	for p := range knownFiles {
		if id := messageID(p); id != "" {
			if a, ok := objectOf(p); ok && s.Store.MayChange(a) == nil {
				homeAt[id] = p
			}
		}
	}
	graves, err := g.readTombstones(ctx, knownTree)
	if err != nil {
		return nil, err
	}
	mine := func(a maildir.Address) bool { return s.Store.MayChange(a) == nil }
	keep, added := keepHomes(rep.Host, d, homeAt, graves, mine)
	for chunk := range slices.Chunk(added, 500) {
		gone, err := g.paths(ctx, append([]string{"log", "-z", "--format=", "--name-only", "--diff-filter=D", known, "--"}, chunk...)...)
		if err != nil {
			return nil, err
		}
		for _, p := range slices.Compact(slices.Sorted(slices.Values(gone))) {
			keep = append(keep, change{path: p, status: 'D', mode: "000000", omode: d[p].mode, blob: zeroID, old: d[p].blob})
		}
	}
	return keep, nil
}

// keepHomes decides, from the changes d that take this host's last
// synced tree to the tree an adopt builds (the rewrite's), which go back
// as this host last synced them (see homesAsKnown): this host's
// tombstones; a file of its homes the rewrite changed or removed; a
// message of its homes the rewrite adds that its home held elsewhere
// (homeAt: where each id was) or buried (graves) goes again. It returns
// those, and the other adds under its homes, for homesAsKnown to look up
// in history. It is pure.
func keepHomes(host string, d map[string]change, homeAt map[string]string, graves tombstones, mine func(maildir.Address) bool) (keep []change, added []string) {
	for _, p := range slices.Sorted(maps.Keys(d)) {
		c := d[p]
		if strings.HasPrefix(p, GoneDir+"/"+host+"/") || p == HostsDir+"/"+host+".json" {
			// This host's tombstones, and its record of its name: only
			// it writes them.
			keep = append(keep, change{path: p, status: 'M', mode: c.omode, omode: c.mode, blob: c.old, old: c.blob})
			continue
		}
		if a, ok := objectOf(p); !ok || !mine(a) {
			continue
		}
		if c.status == 'A' {
			if at, ok := homeAt[messageID(p)]; ok && at != p || graves.of(p) == host {
				// A message this host's home moved (archived, restored,
				// claimed) or deleted: the rewrite holds it from before.
				keep = append(keep, change{path: p, status: 'D', mode: "000000", omode: c.mode, blob: zeroID, old: c.blob})
				continue
			}
			added = append(added, p)
			continue
		}
		keep = append(keep, change{path: p, status: 'M', mode: c.omode, omode: c.mode, blob: c.old, old: c.blob})
	}
	return keep, added
}

// putBackUnsent puts back on tree what this host sent to other homes
// that no home has shown it holds and the tree lacks (see outbox), and
// adds their number to back. known is the tree this host last synced.
func (s *Syncer) putBackUnsent(ctx context.Context, g *git, known, tree string, back int) (string, int, error) {
	unsent, err := s.unsent(ctx, g, g.outbox, known, tree)
	if err != nil || len(unsent) == 0 {
		return tree, back, err
	}
	tree, err = g.buildTree(ctx, tree, unsent)
	return tree, back + len(unsent), err
}

// putBackHeld puts back on tree the messages of other hosts' objects
// that this host held when it last synced (known) and tree lacks, unless
// their home moved them on (the id is elsewhere in tree) or buried them
// (in tree or known): a rewrite cannot mean what only a home may do, and
// the no-loss gate would refuse the adopt. This host's own homes are
// homesAsKnown's. It adds their number to back.
func (s *Syncer) putBackHeld(ctx context.Context, g *git, known, tree string, back int) (string, int, error) {
	d, err := g.diff(ctx, known, tree)
	if err != nil {
		return tree, back, err
	}
	mine := s.mineIn(g.homes)
	var held []outboxEntry
	for _, p := range slices.Sorted(maps.Keys(d)) {
		c := d[p]
		if a, ok := objectOf(p); ok && c.status == 'D' && isMessage(p) && !mine(a) {
			held = append(held, outboxEntry{Path: p, Blob: c.old})
		}
	}
	if len(held) == 0 {
		return tree, back, nil
	}
	files, err := g.files(ctx, tree)
	if err != nil {
		return tree, back, err
	}
	graves, err := g.readTombstones(ctx, tree)
	if err != nil {
		return tree, back, err
	}
	seen, err := g.readTombstones(ctx, known)
	if err != nil {
		return tree, back, err
	}
	maps.Copy(graves, seen)
	again := unsentOf(held, files, graves)
	if len(again) == 0 {
		return tree, back, nil
	}
	tree, err = g.buildTree(ctx, tree, again)
	return tree, back + len(again), err
}

// maxHeldLook bounds how far back lastHeld looks.
const maxHeldLook = 200

// lastHeld returns the newest of the last 200 commits on known's
// first-parent line (the remote as this host saw it) whose changes the
// tree a rewrite was made of (up) holds, or "" if it holds none of them:
// one whose tree is up itself (a remote wound back there and squashed),
// else the newest held. Others' syncs on top of the rewrite are left out
// of up: another host's adopt puts back what that host saw, and a commit
// of this host's line would look held for it. A commit is held when more of
// the paths it changed show it than show the tree before it. A path shows
// it when it is as the commit left it, or changed since: a message it
// added is there, or moved on by its home (archived, claimed); a file it
// changed or removed is not as it was. A path shows the tree before it
// when it is as it was before the commit: a file it changed or removed is
// there unchanged, a message it moved is where it was. A message it added
// that is nowhere shows neither: the rewrite lost it, or its home deleted
// it since.
func (g *git) lastHeld(ctx context.Context, known, up string) (string, error) {
	// Each commit with its tree; on the first-parent line, the next one
	// is its parent (the last, unless it is the root, is there only as
	// that).
	out, err := g.run(ctx, "log", "--first-parent", "-n", strconv.Itoa(maxHeldLook+1), "--format=%H %T", known)
	if err != nil {
		return "", err
	}
	var line [][]string
	for l := range strings.Lines(out) {
		if f := strings.Fields(l); len(f) == 2 {
			line = append(line, f)
		}
	}
	empty, err := g.emptyTree(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range line {
		if c[1] == up {
			return c[0], nil // the very tree the rewrite was made of
		}
	}
	var commits []string
	var pairs strings.Builder
	for i, c := range line {
		parent := empty
		switch {
		case i+1 < len(line):
			parent = line[i+1][1]
		case len(line) > maxHeldLook:
			continue
		}
		commits = append(commits, c[0])
		fmt.Fprintf(&pairs, "%s %s\n", parent, c[1])
	}
	raw, err := g.runIn(ctx, strings.NewReader(pairs.String()), nil, "diff-tree", "--stdin", "--always", "-r", "-z", "--raw", "--no-renames", "--full-index")
	if err != nil {
		return "", err
	}
	files, err := g.files(ctx, up)
	if err != nil {
		return "", err
	}
	sets, err := parseRaw(raw, true)
	if err != nil {
		return "", err
	}
	if len(sets) != len(commits) {
		return "", fmt.Errorf("gitsync: diff-tree --stdin gave %d diffs for %d pairs", len(sets), len(commits))
	}
	if i := newestHeld(sets, files); i >= 0 {
		return commits[i], nil
	}
	return "", nil
}

// newestHeld decides which of a line's commits, newest first, is the
// newest whose changes (changed[i]) the tree whose files are given holds:
// more of the paths it changed show it than show the tree before it. A
// path shows it when it is as the commit left it, or changed since: a
// message it added is there, or moved on by its home (archived, claimed);
// a file it changed or removed is not as it was. A path shows the tree
// before it when it is as it was before the commit: a file it changed or
// removed is there unchanged, a message it moved is where it was. A
// message it added that is nowhere shows neither: the rewrite lost it, or
// its home deleted it since. It returns -1 when none is held. It is pure.
func newestHeld(changed [][]change, files map[string]string) int {
	where := map[string]string{} // where each message is in files
	for p := range files {
		if id := messageID(p); id != "" {
			where[id] = p
		}
	}
	for i, set := range changed {
		removed := map[string]bool{}
		for _, c := range set {
			removed[c.path] = c.old != zeroID
		}
		onward, stale := 0, 0
		for _, c := range set {
			blob, has := files[c.path]
			switch {
			case c.old != zeroID && has && blob == c.old:
				stale++ // as it was before the commit
			case c.old != zeroID || has:
				onward++ // as the commit left it, or changed since
			case where[messageID(c.path)] == "":
				// An add that is nowhere there: lost with the commit, or
				// deleted by its home since. No sign either way.
			case removed[where[messageID(c.path)]]:
				stale++ // a move the commit made, not there
			default:
				onward++ // moved on since by its home: archived, claimed
			}
		}
		if onward > stale {
			return i
		}
	}
	return -1
}

// files returns the blob of every file in tree, by path.
func (g *git) files(ctx context.Context, tree string) (map[string]string, error) {
	out, err := g.run(ctx, "ls-tree", "-r", "-z", "--full-tree", tree)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, e := range parseLsTree(out) {
		files[e.path] = e.blob
	}
	return files, nil
}

// messageID returns the id of the message a path of the state tree holds
// (a mailbox's, a queue's or a channel's, archived or not), or "".
func messageID(p string) string {
	if !strings.HasPrefix(p, "state/mail/") && !strings.HasPrefix(p, "state/queue/") && !strings.HasPrefix(p, "state/channel/") || strings.Count(p, "/") < 3 {
		return "" // a channel's configuration, for one
	}
	id, _ := strings.CutSuffix(path.Base(p), ".json")
	if id == path.Base(p) {
		return ""
	}
	return id
}
