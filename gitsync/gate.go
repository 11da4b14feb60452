package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// ErrWouldLose is matched by a [*LossError].
var ErrWouldLose = errors.New("gitsync: the sync would lose mail")

// A LossError is a sync the no-loss gate stopped: the change it built
// would take from this host's tree, or leave out of what it pushes,
// message files that no home deleted or moved. Nothing was landed or
// pushed.
type LossError struct {
	Paths []string // relative to the root
}

func (e *LossError) Error() string {
	return fmt.Sprintf("refused, nothing landed or pushed: the change would lose %d message files that no home deleted or moved: %s",
		len(e.Paths), strings.Join(e.Paths, ", "))
}

// Is makes a LossError match ErrWouldLose.
func (e *LossError) Is(target error) bool { return target == ErrWouldLose }

// The no-loss gate is the last word before a sync writes what arrived
// into this host's tree and pushes: whatever the merge, a put-back or an
// adopt decided, it compares the commit the sync is about to land and
// push with what this host holds — the tree it just snapshotted, and its
// outbox (sends to other homes not yet theirs) — and refuses a change
// that drops a message file unless the change itself justifies it: the
// message's id is elsewhere in the result (its home moved it: archived,
// claimed, restored; or a same-name add renamed), or the result holds the
// tombstone of its home (see GoneDir). It does not look at how the change
// was built, only at the two trees, so a mistake in the merge logic
// refuses instead of deleting.

// wouldLose decides which of gone — message files this host holds that
// the change removes from its tree or leaves out of what it pushes — the
// change does not justify: their id is not among ids (the ids the result
// holds somewhere), no tombstone of their object's home buries them, and
// the newest commit of what arrived that removed them (removedBy: the
// host whose sync made it, "" for a person's commit) is not their home's.
// home gives an object's home host as the result records it, "" when it
// records none; then any host's tombstone stands. It is pure.
func wouldLose(gone []string, ids map[string]bool, graves tombstones, removedBy map[string]string, home func(maildir.Address) string) []string {
	var lost []string
	for _, p := range slices.Compact(slices.Sorted(slices.Values(gone))) {
		if !isMessage(p) || ids[messageID(p)] {
			continue
		}
		a, _ := objectOf(p)
		h := home(a)
		if by := graves.of(p); by != "" && (h == "" || h == by) {
			continue
		}
		if by := removedBy[p]; by != "" && by == h {
			continue
		}
		lost = append(lost, p)
	}
	return lost
}

// gate checks commit mine, which the round is about to land (changing
// the working tree from r.snapshot by r.plan.apply) and push, against what
// this host holds (see wouldLose). Most rounds cost one diff-tree of the
// two trees, none when they are alike.
func (s *Syncer) gate(ctx context.Context, g *git, host string, r *round, mine string) error {
	if mine == "" {
		return nil
	}
	after, err := g.tree(ctx, mine)
	if err != nil {
		return err
	}
	var gone []string
	ids := map[string]bool{}
	diff := map[string]change{}
	if after != r.snapshot {
		if diff, err = g.diff(ctx, r.snapshot, after); err != nil {
			return err
		}
	}
	for p, c := range diff {
		switch {
		case c.status == 'D':
			gone = append(gone, p)
		case messageID(p) != "":
			ids[messageID(p)] = true
		}
	}
	// What the landing deletes from the tree: always what the result
	// lacks, so a delete of a path the result keeps is a loss on disk.
	landed := map[string]bool{}
	var odd []string
	for _, c := range r.plan.apply {
		if c.status == 'D' && isMessage(c.path) {
			landed[c.path] = true
			if _, ok := diff[c.path]; !ok {
				odd = append(odd, c.path)
			}
		}
	}
	if len(odd) > 0 {
		held, err := g.present(ctx, r.snapshot, odd)
		if err != nil {
			return err
		}
		gone = append(gone, held...)
	}
	// This host's sends to other homes not yet theirs: one no longer in
	// the tree must be in what it pushes.
	var unseen []string
	for _, e := range g.outbox.Entries {
		if _, err := os.Lstat(filepath.Join(s.Store.Dir(), filepath.FromSlash(e.Path))); err != nil {
			unseen = append(unseen, e.Path)
		}
	}
	sends := map[string]bool{} // gone from disk at an earlier landing, or by hand
	if len(unseen) > 0 {
		there, err := g.present(ctx, after, unseen)
		if err != nil {
			return err
		}
		for _, p := range unseen {
			if !slices.Contains(there, p) {
				gone = append(gone, p)
				sends[p] = true
			}
		}
	}
	// What a first sync set aside (see unknownCopies) is kept, not lost:
	// as the disk says.
	gone = slices.DeleteFunc(gone, s.heldAside)
	if len(gone) == 0 {
		return nil
	}
	lost := wouldLose(gone, ids, nil, nil, func(maildir.Address) string { return "" })
	if len(lost) == 0 {
		return nil
	}
	// What the result says of the rest: its tombstones, its homes.
	graves, err := g.readTombstones(ctx, after)
	if err != nil {
		return err
	}
	homes, err := g.homesIn(ctx, after, lost)
	if err != nil {
		return err
	}
	home := func(a maildir.Address) string { return homes[a] }
	if lost = wouldLose(lost, ids, graves, nil, home); len(lost) == 0 {
		return nil
	}
	// A last look, for ids the diff did not show (a copy elsewhere that
	// both trees hold, the landing keeps), and at who removed the rest:
	// a home whose tombstone is forgotten (older than GoneFor) is still
	// the author of the commit that removed its file.
	files, err := g.files(ctx, after)
	if err != nil {
		return err
	}
	for p := range files {
		if id := messageID(p); id != "" && !landed[p] {
			ids[id] = true
		}
	}
	removedBy, err := g.removedBy(ctx, r.head, mine, lost)
	if err != nil {
		return err
	}
	// A send already gone from the disk left it at an earlier landing:
	// who removed it is in the history that landed before (whole, for
	// want of a tombstone a person's commit removed since).
	var earlier []string
	for _, p := range lost {
		if _, ok := removedBy[p]; !ok && sends[p] {
			earlier = append(earlier, p)
		}
	}
	if len(earlier) > 0 {
		before, err := g.removedBy(ctx, "", mine, earlier)
		if err != nil {
			return err
		}
		maps.Copy(removedBy, before)
	}
	if lost = wouldLose(lost, ids, graves, removedBy, home); len(lost) == 0 {
		return nil
	}
	// A home's tombstone that a person's commit removed still stands
	// until the home puts it back (see cutTombstones): after a compaction
	// it is the only record of the delete.
	cut, err := g.cutTombstones(ctx, mine)
	if err != nil {
		return err
	}
	if lost = wouldLose(lost, ids, cut, removedBy, home); len(lost) > 0 {
		return &LossError{Paths: lost}
	}
	return nil
}

// homesIn returns the home host the home records of tree name for the
// objects of paths (none for an object it records no home of).
func (g *git) homesIn(ctx context.Context, tree string, paths []string) (map[maildir.Address]string, error) {
	var recs []string
	for _, p := range paths {
		if a, ok := objectOf(p); ok {
			recs = append(recs, maildir.HomeDir+"/"+a.Kind.String()+"/"+a.Name+".json")
		}
	}
	recs = slices.Compact(slices.Sorted(slices.Values(recs)))
	var blobs, at []string
	for chunk := range slices.Chunk(recs, 500) {
		out, err := g.run(ctx, append([]string{"ls-tree", "-z", "--full-tree", tree, "--"}, chunk...)...)
		if err != nil {
			return nil, err
		}
		for _, e := range parseLsTree(out) {
			blobs, at = append(blobs, e.blob), append(at, e.path)
		}
	}
	homes := map[maildir.Address]string{}
	i := 0
	err := g.blobs(ctx, blobs, func(_ string, data []byte) error {
		var rec struct {
			Host string `json:"host"`
		}
		if a, ok := objectOf(at[i]); ok && json.Unmarshal(data, &rec) == nil {
			homes[a] = rec.Host
		}
		i++
		return nil
	})
	return homes, err
}

// removedBy returns, for each of paths that a commit of mine's history
// not in head's removed, the host whose sync made the newest such commit
// ("" for a commit no sync made: a person's).
func (g *git) removedBy(ctx context.Context, head, mine string, paths []string) (map[string]string, error) {
	by := map[string]string{}
	rng := mine
	if head != "" && head != mine {
		rng = head + ".." + mine
	}
	for chunk := range slices.Chunk(paths, 500) {
		out, err := g.run(ctx, append([]string{"log", "--format=%x01%s", "--name-only", "--no-renames", "--diff-filter=D", rng, "--"}, chunk...)...)
		if err != nil {
			return nil, err
		}
		host := ""
		for l := range strings.Lines(out) {
			l = strings.TrimRight(l, "\n")
			if subject, ok := strings.CutPrefix(l, "\x01"); ok {
				host = ""
				if rest, ok := strings.CutPrefix(subject, syncSubject); ok {
					host, _, _ = strings.Cut(rest, ":")
				}
				continue
			}
			if _, seen := by[l]; l != "" && !seen {
				by[l] = host
			}
		}
	}
	return by, nil
}

// present returns those of paths that tree holds.
func (g *git) present(ctx context.Context, tree string, paths []string) ([]string, error) {
	var there []string
	for chunk := range slices.Chunk(paths, 500) {
		got, err := g.paths(ctx, append([]string{"ls-tree", "-z", "--name-only", "--full-tree", tree, "--"}, chunk...)...)
		if err != nil {
			return nil, err
		}
		there = append(there, got...)
	}
	return there, nil
}
