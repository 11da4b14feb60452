package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// A plan is what one cycle will do, decided before it does anything.
type plan struct {
	ours   []change // this host's changes, to put on the remote's tree
	apply  []change // the others' changes (and reverts) for the working tree
	rename []change // this host's message adds whose name another host added too
	yield  []string // this host's home records that another host's beat
	revert []string // this host's changes under a home it lost, undone
	aside  []string // an older copy's mail no one vouches for, to set aside under HeldDir
}

// settle merges two sets of changes against one base, path by path:
// this host's (ours) and the remote's (theirs). Under the homes rule they
// touch different paths but for adds, so:
//
//   - a path only one side changed takes that side's change;
//   - a path both changed alike is left alone;
//   - a message name added on both is kept twice: this host's copy is
//     renamed to carry the host's name — unless they are one message,
//     as this host sent it and as its home (another host) changed it
//     since (homesCopy, see homesVersions): then the home's stands;
//   - a home record added on both goes to the one pushed first: this
//     host's yields, and what it changed under that home is undone (the
//     files go back to the winner's), so the loser never pushes changes
//     it had no right to make; its sends (adds) stay;
//   - a file of this host's homes both changed keeps this host's change
//     (see below);
//   - anything else both changed, and any change this host made to files
//     of an object homed elsewhere (by hand: mailfs refuses it), stops
//     the sync before it changes anything, naming the paths.
//
// And a home never takes back a message it removed (graves: its
// tombstones, see GoneDir), or one it holds in the object's other folder
// (shadowed: archived or restored since): an add of one that arrives is
// undone on the remote, unless it is the arrival half of a move into the
// object (the same changes remove the id elsewhere: a release). Nor does it take
// another host's change or removal of one of its files: only a home
// changes its files, so that is a stale version a host that saw less put
// back after a force-push, and the home's own stands — as it was, or as
// the home changed it since.
func (s *Syncer) settle(g *git, rep *Report, ours, theirs map[string]change, graves tombstones, shadowed, homesCopy map[string]bool) (*plan, error) {
	st := s.settling(ours, theirs)
	st.homesCopy = homesCopy
	p := &plan{}
	if both := st.takeTheirs(p, rep, graves, shadowed); len(both) > 0 {
		return nil, bothChanged(g, rep.Remote+"/"+rep.Branch, theirs, both)
	}
	if offHome := st.keepOurs(p); len(offHome) > 0 {
		return nil, &ConflictError{Paths: offHome, Why: "changed on this host (by hand: mailfs refuses it) but homed on another, and only an object's home host changes its files",
			Fix: "put them back (git -C " + g.dir + " checkout HEAD -- PATH), or first move the object's home here (mailfs home move OBJECT --to " + rep.Host + ", on its home host)"}
	}
	return p, nil
}

// A settlement is what settle weighs both sides' changes with: the two
// sets, the ids the remote moved out of some object, the homes this host
// loses, and which objects are this host's (by the home records it has,
// looked up once each).
type settlement struct {
	s            *Syncer
	ours, theirs map[string]change
	movedOut     map[string][]maildir.Address
	lost         map[maildir.Address]bool
	homes        map[maildir.Address]bool
	mayChange    map[maildir.Address]error
	homesCopy    map[string]bool // adds on both sides that are one message (see homesVersions)
}

func (s *Syncer) settling(ours, theirs map[string]change) *settlement {
	st := &settlement{s: s, ours: ours, theirs: theirs, movedOut: map[string][]maildir.Address{},
		lost: map[maildir.Address]bool{}, homes: map[maildir.Address]bool{}, mayChange: map[maildir.Address]error{}}
	// The ids the remote's changes remove from some object, by object:
	// an add of one into another object is the arrival half of a move
	// (a release); within one object, only its home moves a message.
	for path, tc := range theirs {
		if a, ok := objectOf(path); ok && tc.status == 'D' && isMessage(path) {
			st.movedOut[messageID(path)] = append(st.movedOut[messageID(path)], a)
		}
	}
	// The homes this host loses, first: its changes under them yield to
	// the winner's, whichever path sorts first.
	for path, tc := range theirs {
		if oc, mine := ours[path]; mine && oc.status == 'A' && tc.status == 'A' && !oc.same(tc) && strings.HasPrefix(path, maildir.HomeDir+"/") {
			if a, ok := objectOf(path); ok {
				st.lost[a] = true
			}
		}
	}
	return st
}

// movedIn reports whether the remote's add of path is the arrival half of
// a move from another object.
func (st *settlement) movedIn(path string) bool {
	a, _ := objectOf(path)
	return slices.ContainsFunc(st.movedOut[messageID(path)], func(b maildir.Address) bool { return b != a })
}

// home reports whether object a is this host's, by the records it has.
func (st *settlement) home(a maildir.Address) bool {
	h, seen := st.homes[a]
	if !seen {
		h = st.s.Store.MayChange(a) == nil
		st.homes[a] = h
	}
	return h
}

// takeTheirs decides, path by path, what becomes of the remote's changes
// (see settle), and returns the paths both sides changed unlike.
func (st *settlement) takeTheirs(p *plan, rep *Report, graves tombstones, shadowed map[string]bool) (both []string) {
	host, ours, theirs, lost := rep.Host, st.ours, st.theirs, st.lost
	for _, path := range slices.Sorted(maps.Keys(theirs)) {
		tc := theirs[path]
		oc, mine := ours[path]
		a, isObj := objectOf(path)
		switch {
		case !mine && tc.status == 'A' && (graves.of(path) == host || shadowed[path]) && !st.movedIn(path) && !lost[a]:
			// A stale copy of what this host's home removed, or holds in
			// the object's other folder: undone.
			p.ours = append(p.ours, change{path: path, status: 'D', mode: "000000", omode: tc.mode, blob: zeroID, old: tc.blob})
			rep.Reverted = append(rep.Reverted, path)
		case !mine && (strings.HasPrefix(path, GoneDir+"/"+host+"/") || path == HostsDir+"/"+host+".json"):
			// Another's change to this host's tombstones (a person's
			// commit removing state/gone): only this host writes them, and
			// a tombstone lost lets a copy bring its message back. This
			// host's version, which is the base's, stands, as after a
			// rewrite.
			if tc.status == 'A' {
				p.ours = append(p.ours, change{path: path, status: 'D', mode: "000000", omode: tc.mode, blob: zeroID, old: tc.blob})
			} else {
				p.ours = append(p.ours, change{path: path, status: 'M', mode: tc.omode, omode: tc.mode, blob: tc.old, old: tc.blob})
			}
			rep.Reverted = append(rep.Reverted, path)
		case !mine && tc.status != 'A' && isObj && !lost[a] && !strings.HasPrefix(path, maildir.HomeDir+"/") && st.home(a):
			// Another host changed or removed a file of this host's home:
			// only its home does that, so it is a stale version put back
			// by a host that saw less (after a force-push). This host's
			// version, which is the base's, stands.
			p.ours = append(p.ours, change{path: path, status: 'M', mode: tc.omode, omode: tc.mode, blob: tc.old, old: tc.blob})
			rep.Reverted = append(rep.Reverted, path)
		case !mine:
			p.apply = append(p.apply, tc)
		case oc.same(tc):
		case path == HostsDir+"/"+host+".json":
			// This host's record of its name, as it took it over (see
			// claimName): its own stands.
			p.ours = append(p.ours, oc)
		case oc.status == 'A' && tc.status == 'A' && st.homesCopy[path] && !lost[a]:
			// One message, as this host sent it and as its home (another
			// host) changed it since: the home's version is written over
			// this host's, and this host pushes nothing of it.
			p.apply = append(p.apply, change{path: path, status: 'M', mode: tc.mode, omode: oc.mode, blob: tc.blob, old: oc.blob})
			st.s.recovered(rep, fmt.Sprintf("%s was added here and on the remote in two versions of one message: its home's (read or claimed since) stands, not a second copy", path))
		case oc.status == 'A' && tc.status == 'A' && isMessage(path):
			p.rename = append(p.rename, oc)
			p.apply = append(p.apply, tc)
		case oc.status == 'A' && tc.status == 'A' && strings.HasPrefix(path, maildir.HomeDir+"/"):
			p.yield = append(p.yield, path)
			p.apply = append(p.apply, tc)
		case isObj && lost[a] && oc.status != 'A':
			// Both changed a file of a home this host lost: the winner's
			// change stands, this host's is undone (named below).
			p.apply = append(p.apply, tc)
		case isObj && tc.status != 'A' && !lost[a] && !strings.HasPrefix(path, maildir.HomeDir+"/") && st.home(a):
			// Both changed a file of this host's home: the other side's
			// is a stale version put back by a host that saw less (as
			// above), and this host's own change stands (keepOurs puts
			// it on the remote's tree).
			rep.Reverted = append(rep.Reverted, path)
		default:
			both = append(both, path)
		}
	}
	return both
}

// bothChanged is the error for paths both sides changed unlike, with what
// a person can do: take the remote's version, or make the same change on
// the host that pushed.
func bothChanged(g *git, tracking string, theirs map[string]change, both []string) error {
	// Taking the remote's version of a path it deleted (or moved) is
	// removing it here: git checkout would find no such path there.
	var gone, changed []string
	for _, path := range both {
		if theirs[path].status == 'D' {
			gone = append(gone, path)
		} else {
			changed = append(changed, path)
		}
	}
	var take []string
	if len(changed) > 0 {
		take = append(take, "git -C "+g.dir+" checkout "+tracking+" -- "+strings.Join(changed, " "))
	}
	if len(gone) > 0 {
		take = append(take, "(cd "+g.dir+" && rm -- "+strings.Join(gone, " ")+")")
	}
	return &ConflictError{Paths: both, Why: "changed on this host and on another",
		Fix: "keep one version: to take the remote's, " + strings.Join(take, "; ") + ", then mailfs sync; to keep this host's, make the same change on the host that pushed, then sync"}
}

// keepOurs decides which of this host's changes go on the remote's tree
// (see settle), and returns those it may not make: files of objects homed
// elsewhere, changed by hand.
func (st *settlement) keepOurs(p *plan) (offHome []string) {
	ours, theirs, lost, mayChange := st.ours, st.theirs, st.lost, st.mayChange
	// This host's changes under a home it lost, and adds that were the
	// other half of a move out of it (an archive, a claim), are undone.
	var moved []string
	for _, path := range slices.Sorted(maps.Keys(ours)) {
		oc := ours[path]
		if a, ok := objectOf(path); ok && lost[a] && oc.status != 'A' && !strings.HasPrefix(path, maildir.HomeDir+"/") {
			moved = append(moved, pathBase(path))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(ours)) {
		oc := ours[path]
		if tc, ok := theirs[path]; ok && (oc.same(tc) || oc.status == 'A' && tc.status == 'A' || strings.HasPrefix(path, HostsDir+"/")) {
			continue // alike, or settled above
		}
		a, isObj := objectOf(path)
		switch {
		case isObj && lost[a] && oc.status != 'A':
			p.revert = append(p.revert, path)
			if _, ok := theirs[path]; !ok {
				if oc.old == zeroID {
					continue
				}
				p.apply = append(p.apply, change{path: path, status: 'M', mode: "100644", blob: oc.old, old: oc.blob})
			}
			continue
		case oc.status == 'A' && slices.Contains(moved, pathBase(path)) && isMessage(path):
			p.revert = append(p.revert, path)
			p.apply = append(p.apply, change{path: path, status: 'D', mode: "000000", blob: zeroID, old: oc.blob})
			continue
		case isObj && oc.status != 'A':
			err, seen := mayChange[a]
			if !seen {
				err = st.s.Store.MayChange(a)
				mayChange[a] = err
			}
			if err != nil {
				offHome = append(offHome, path)
				continue
			}
		}
		p.ours = append(p.ours, oc)
	}
	return offHome
}

// act carries out what settle decided that changes this host's files
// before the merge: renames and yields.
func (s *Syncer) act(ctx context.Context, g *git, p *plan, rep *Report) error {
	for _, c := range p.rename {
		to, err := s.rename(c.path, rep.Host)
		if errors.Is(err, fs.ErrNotExist) {
			continue // gone since the snapshot (archived, deleted): the next sync sees where
		}
		if err != nil {
			return err
		}
		s.step("renamed %s to %s: another host added that name first", c.path, to)
		rep.Renamed = append(rep.Renamed, [2]string{c.path, to})
		c.path = to
		p.ours = append(p.ours, c)
	}
	for _, y := range p.yield {
		d, done, err := s.folder(path.Dir(y), false)
		if err != nil {
			return err
		}
		err = d.Remove(path.Base(y))
		done()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.step("dropped %s: another host claimed that home first", y)
		rep.Yielded = append(rep.Yielded, y)
	}
	for _, r := range p.revert {
		s.warnf("undid %s: it was changed under a home another host claimed first", r)
	}
	if err := s.setAside(p.aside, rep); err != nil {
		return err
	}
	rep.Reverted = append(rep.Reverted, p.revert...)
	return nil
}

// objectOf returns the mailbox, queue, channel or group whose home rules
// path: its files, its archive, its home record.
func objectOf(p string) (maildir.Address, bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 3 || parts[0] != "state" {
		return maildir.Address{}, false
	}
	kinds := map[string]maildir.Kind{"mail": maildir.KindAgent, "agent": maildir.KindAgent, "queue": maildir.KindQueue,
		"channel": maildir.KindChannel, "group": maildir.KindGroup}
	switch {
	case parts[1] == "groups" && len(parts) == 3:
		return maildir.Address{Kind: maildir.KindGroup, Name: strings.TrimSuffix(parts[2], ".json")}, true
	case parts[1] == "homes" && len(parts) == 4:
		k, ok := kinds[parts[2]]
		return maildir.Address{Kind: k, Name: strings.TrimSuffix(parts[3], ".json")}, ok
	case parts[1] == "requests" && len(parts) == 4: // claim requests: the queue's to serve
		return maildir.Address{Kind: maildir.KindQueue, Name: parts[2]}, maildir.ValidAgent(parts[2])
	case parts[1] == "mail" || parts[1] == "queue" || parts[1] == "channel":
		if len(parts) < 4 {
			return maildir.Address{}, false
		}
		return maildir.Address{Kind: kinds[parts[1]], Name: parts[2]}, maildir.ValidAgent(parts[2])
	}
	return maildir.Address{}, false
}

func pathBase(p string) string { return path.Base(p) }

// isMessage reports whether p is a message file's path: in a mailbox,
// queue or channel, or one of their archives.
func isMessage(p string) bool {
	dir, name := path.Split(p)
	if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
		return false
	}
	parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	if len(parts) == 4 && parts[3] == maildir.ArchiveDir {
		parts = parts[:3]
	}
	return len(parts) == 3 && parts[0] == "state" && (parts[1] == "mail" || parts[1] == "queue" || parts[1] == "channel")
}

// rename gives the local message file p a free name carrying host: the
// id with "-<host>" (then "-2", …) appended, by a rename that never
// replaces a file.
func (s *Syncer) rename(p, host string) (string, error) {
	dir, name := path.Split(p)
	d, done, err := s.folder(strings.TrimSuffix(dir, "/"), false)
	if err != nil {
		return "", err
	}
	defer done()
	id := strings.TrimSuffix(name, ".json")
	for n := 1; n < 1000; n++ {
		to := id + "-" + host
		if n > 1 {
			to += fmt.Sprintf("-%d", n)
		}
		err := d.Move(name, d, to+".json")
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return dir + to + ".json", d.Sync()
	}
	return "", fmt.Errorf("gitsync: no free name for %s", p)
}

// sibling returns the path message path p would have in the other folder
// of its object: its archive, or, for an archived one, the object's own.
func sibling(p string) string {
	dir, name := path.Split(p)
	if d, ok := strings.CutSuffix(dir, maildir.ArchiveDir+"/"); ok {
		return d + name
	}
	return dir + maildir.ArchiveDir + "/" + name
}
