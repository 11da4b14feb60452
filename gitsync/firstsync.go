package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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

// HeldDir is where a first sync sets aside an older copy's mail that it
// cannot place: runtime/held/<the file's path>, never committed, never
// pushed, never deleted by mailfs. "mailfs sync --held" lists it; a person
// moves a file back to its path to send it, or removes it.
const HeldDir = "runtime/held"

// unknownCopies decides, for a first sync with no common commit, which
// of this host's adds that staleCopies left standing are an older copy's
// mail of another host's object that no one can vouch for: the remote
// lacks the file and its id, its home never buried it, and this host
// cannot show it sent it (sent: in its outbox, or from an agent homed
// here). Such a message may be one its home deleted before its own first
// sync (no tombstone): pushing it would bring it back, deleting it might
// lose it, so it is held aside. It is pure.
func unknownCopies(ours, their map[string]change, graves tombstones, mine func(maildir.Address) bool, sent func(string) bool) []string {
	ids := map[string]bool{}
	for p, c := range their {
		if c.status == 'A' && isMessage(p) {
			ids[messageID(p)] = true
		}
	}
	var held []string
	for _, p := range slices.Sorted(maps.Keys(ours)) {
		c := ours[p]
		if c.status != 'A' || !isMessage(p) {
			continue
		}
		a, ok := objectOf(p)
		if !ok || mine(a) {
			continue
		}
		if _, there := their[p]; there || ids[messageID(p)] || graves.of(p) != "" || sent(p) {
			continue
		}
		held = append(held, p)
	}
	return held
}

// sentHere returns what unknownCopies asks of a message add of ours:
// whether this host can show it sent it — it is in the outbox, it is
// from an agent homed here (read from the files, one git exec for all),
// or it was sent after its object's home last synced (theirs's history
// says when: one git exec): the home cannot have deleted what it never
// had, while a message sent before the home's last sync that the home
// lacks may be one it deleted before it ever committed it.
func (s *Syncer) sentHere(ctx context.Context, g *git, ours map[string]change, theirs string) (func(string) bool, error) {
	sent := map[string]bool{}
	for _, e := range g.outbox.Entries {
		sent[e.Path] = true
	}
	mine := s.mineIn(g.homes)
	log, err := g.run(ctx, "log", "--format=%ct %s", "-n", "2000", theirs)
	if err != nil {
		return nil, err
	}
	synced := lastSyncs(log)
	for p, c := range ours {
		a, ok := objectOf(p)
		if !ok || c.status != 'A' || !isMessage(p) {
			continue
		}
		at, stamped := maildir.ParseStamp(path.Base(p))
		home, _ := s.homeOf(g.homes, a)
		// (Commit times are whole seconds: a send within the home's
		// last second counts as before it.)
		if last, ok := synced[home]; stamped && ok && !at.Before(last.Add(time.Second)) {
			sent[p] = true
		}
	}
	var paths, blobs []string
	for _, p := range slices.Sorted(maps.Keys(ours)) {
		if a, ok := objectOf(p); ok && ours[p].status == 'A' && isMessage(p) && !mine(a) && !sent[p] {
			paths, blobs = append(paths, p), append(blobs, ours[p].blob)
		}
	}
	i := 0
	err = g.blobs(ctx, blobs, func(_ string, data []byte) error {
		var m struct {
			From string `json:"from"`
		}
		if json.Unmarshal(data, &m) == nil && maildir.ValidAgent(m.From) && mine(maildir.Address{Kind: maildir.KindAgent, Name: m.From}) {
			sent[paths[i]] = true
		}
		i++
		return nil
	})
	return func(p string) bool { return sent[p] }, err
}

// setAside moves each of paths out of the state tree into HeldDir,
// keeping its path below it, by a rename that never replaces a file.
func (s *Syncer) setAside(paths []string, rep *Report) error {
	if len(paths) == 0 {
		return nil
	}
	f, err := s.openFolders()
	if err != nil {
		return err
	}
	defer f.close()
	for _, p := range paths {
		from, err := f.existing(p)
		if err != nil {
			return err
		}
		if from == nil {
			continue
		}
		to, err := f.dir(path.Join(HeldDir, path.Dir(p)), true)
		if err != nil {
			return err
		}
		switch err := from.Move(path.Base(p), to, path.Base(p)); {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return fmt.Errorf("gitsync: setting %s aside: %w", p, err)
		}
		rep.Held = append(rep.Held, p)
	}
	if err := f.sync(); err != nil {
		return err
	}
	if len(rep.Held) > 0 {
		s.warnf("this root held mail before its first sync that no host can vouch for: %d messages of other hosts' objects that the remote has never had, whose homes never buried them and that this host did not send (perhaps deleted by their home before its own first sync); set aside under %s, not pushed, not deleted: mailfs sync --held lists them", len(rep.Held), HeldDir)
	}
	return nil
}

// Held lists the files a first sync set aside under HeldDir (see
// unknownCopies), by the path each had in the state tree. To send one,
// put it back ([Syncer.RestoreHeld]); to drop it, remove it.
func Held(s *maildir.Store) ([]string, error) {
	root := filepath.Join(s.Dir(), filepath.FromSlash(HeldDir))
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return fs.SkipAll
		}
		if err != nil || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	return out, err
}

// ErrNotHeld is returned by [Syncer.RestoreHeld] for a name no message
// set aside under HeldDir has.
var ErrNotHeld = errors.New("gitsync: no held message has that name")

// RestoreHeld puts messages a first sync set aside (see [Held]) back at
// their paths in the state tree, for this host's next sync to push as its
// adds; their homes then keep or drop them as any arriving add (a home
// drops one it buried since). which names each by its path, as Held lists
// it, or its id; with none, every held message is put back. It decides
// first and moves nothing unless every name is held ([ErrNotHeld]) and
// none is in the tree already, under its path or in its object's other
// folder (fs.ErrExist: a second copy, which the next sync would push);
// each move never replaces a file. It holds the sync lock, and returns the
// paths put back.
func (s *Syncer) RestoreHeld(which []string) ([]string, error) {
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	held, err := Held(s.Store)
	if err != nil {
		return nil, err
	}
	back, err := heldToRestore(held, which)
	if err != nil {
		return nil, err
	}
	f, err := s.openFolders()
	if err != nil {
		return nil, err
	}
	defer f.close()
	for _, p := range back {
		for _, q := range []string{p, sibling(p)} {
			d, err := f.dir(path.Dir(q), false) // through the root, as the move goes
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if _, err := d.Lstat(path.Base(q)); err == nil {
				return nil, fmt.Errorf("gitsync: %s is not put back: %w: %s is in the tree", p, fs.ErrExist, q)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	var done []string
	for _, p := range back {
		if err := restoreOne(f, p); err != nil {
			// What moved before stays moved, and is made durable.
			return done, errors.Join(err, f.sync())
		}
		done = append(done, p)
	}
	return done, f.sync()
}

// restoreOne moves held message p back to its path, never over a file.
func restoreOne(f *folders, p string) error {
	from, err := f.dir(path.Join(HeldDir, path.Dir(p)), false)
	if err != nil {
		return err
	}
	to, err := f.dir(path.Dir(p), true)
	if err != nil {
		return err
	}
	if err := from.Move(path.Base(p), to, path.Base(p)); err != nil {
		return fmt.Errorf("gitsync: putting %s back: %w", p, err)
	}
	return nil
}

// heldToRestore decides which of the held paths a person named (which:
// paths or ids; none, all of them) go back. It is pure.
func heldToRestore(held, which []string) ([]string, error) {
	if len(which) == 0 {
		return held, nil
	}
	var back []string
	for _, w := range which {
		w = strings.TrimSuffix(strings.TrimPrefix(w, HeldDir+"/"), ".json")
		n := 0
		for _, p := range held {
			if strings.TrimSuffix(p, ".json") == w || messageID(p) == w {
				if !slices.Contains(back, p) {
					back = append(back, p)
				}
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNotHeld, w)
		}
	}
	return back, nil
}

// heldAside reports whether message path p is set aside under HeldDir.
func (s *Syncer) heldAside(p string) bool {
	_, err := os.Lstat(filepath.Join(s.Store.Dir(), filepath.FromSlash(HeldDir), filepath.FromSlash(p)))
	return err == nil
}

// lastSyncs reads "git log --format='%ct %s'": the newest commit time of
// each host's syncs. It is pure.
func lastSyncs(log string) map[string]time.Time {
	last := map[string]time.Time{}
	for l := range strings.Lines(log) {
		ct, subject, _ := strings.Cut(strings.TrimSpace(l), " ")
		rest, ok := strings.CutPrefix(subject, syncSubject)
		sec, err := strconv.ParseInt(ct, 10, 64)
		if !ok || err != nil {
			continue
		}
		host, _, _ := strings.Cut(rest, ":")
		if t := time.Unix(sec, 0); t.After(last[host]) {
			last[host] = t
		}
	}
	return last
}
