package gitsync

import (
	"maps"
	"slices"

	"github.com/mailfs/mailfs/maildir"
)

// A root that already holds mail meets, at its first sync, a remote with
// a history it does not share (a backup, an rsync, a copied disk of the
// town, or a second copy that claimed the same homes): with no common
// commit every file of the copy looks like an add, and the home rule
// that keeps merges safe never fires. So the objects' homes are trusted,
// as the remote has them: a message of an object homed on another host
// (or whose home record this host loses to one pushed first) that its
// home removed since the copy was made (tombstoned, see GoneDir), that
// its home moved (its id is elsewhere on the remote: archived, claimed),
// or that the remote holds in another version (read, say), is the
// remote's: the copy's stale file is left as the remote has it, never
// pushed. Sends the copy made itself (ids the remote has never seen)
// still go out.

// staleCopies decides, for a first sync with no common commit, which of
// this host's adds (ours) are stale copies of other homes' messages. It
// is pure: their is the remote's tree as adds, graves its tombstones,
// mine whether this host's records make it the home of an object.
func staleCopies(ours, their map[string]change, graves tombstones, mine func(maildir.Address) bool) []string {
	where := map[string][]string{}
	for p, c := range their {
		if c.status == 'A' && isMessage(p) {
			where[messageID(p)] = append(where[messageID(p)], p)
		}
	}
	var stale []string
	for _, p := range slices.Sorted(maps.Keys(ours)) {
		c := ours[p]
		if c.status != 'A' || !isMessage(p) {
			continue
		}
		a, ok := objectOf(p)
		if !ok {
			continue
		}
		// Whose object: a home record the remote holds, unlike this
		// copy's, is the one pushed first, which this copy yields to.
		rec := maildir.HomeDir + "/" + a.Kind.String() + "/" + a.Name + ".json"
		tc, theirRec := their[rec]
		oc, ourRec := ours[rec]
		if mine(a) && !(theirRec && (!ourRec || !oc.same(tc))) {
			continue
		}
		tp, there := their[p]
		switch {
		case graves.of(p) != "":
		case there && !tp.same(c):
		case slices.ContainsFunc(where[messageID(p)], func(q string) bool { return q != p }):
		default:
			continue // a send of its own, or the same file: it stands
		}
		stale = append(stale, p)
	}
	return stale
}

// dropStale takes the stale copies out of ours and has the working tree
// follow the remote for each: its version where it has one, else none.
func dropStale(stale []string, ours, their map[string]change) (apply []change) {
	for _, p := range stale {
		oc := ours[p]
		delete(ours, p)
		if _, there := their[p]; !there {
			apply = append(apply, change{path: p, status: 'D', mode: "000000", omode: oc.mode, blob: zeroID, old: oc.blob})
		}
	}
	return apply
}
