package gitsync

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// GoneDir holds the homes' tombstones: state/gone/<host>/<day>/<batch>.txt
// (one file per sync that buried; an older mailfs wrote <day>.txt, still
// read), one path a line, sorted, each a message file that left an object
// homed on <host> on that UTC day (deleted, or moved out of it: a queue
// item claimed) and has not come back. Only <host>'s syncs write its
// folder.
const GoneDir = "state/gone"

// GoneFor is how long a home's tombstone stands. Within it no merge, no
// put-back of a rewritten remote and no older copy's first sync brings
// the message back; past it, a host that was offline longer than that
// and still holds the message can (docs/machines.md).
const GoneFor = 90 * 24 * time.Hour

// Why tombstones: git history says what a home deleted only while it
// lasts, and a person's force-push (a squash) cuts it; a copy of the town
// made before a delete shares no history at all. A home never takes back
// what it removed, except as the arrival half of a move into the object
// (a release puts a claimed item back into its queue): the tombstone,
// committed in the tree itself, says so to every host, whatever happened
// to history.

// tombstones is the set of messages some home has tombstoned: by the
// object and id of each path buried (see graveOf), the host that did. A
// message is buried in its object, whichever folder of it (the mailbox,
// its archive) it was last in.
type tombstones map[string]string

// graveOf returns the key a tombstone of message path p has: its object
// and its id ("" for a path that is no message).
func graveOf(p string) string {
	a, ok := objectOf(p)
	if !ok || !isMessage(p) {
		return ""
	}
	return a.String() + "\x00" + messageID(p)
}

// of returns the host that buried message path p's id in its object, or "".
func (ts tombstones) of(p string) string {
	if k := graveOf(p); k != "" {
		return ts[k]
	}
	return ""
}

// readTombstones reads every tombstone in tree: one ls-tree, one
// cat-file for the day files.
func (g *git) readTombstones(ctx context.Context, tree string) (tombstones, error) {
	out := tombstones{}
	if tree == "" {
		return out, nil
	}
	list, err := g.run(ctx, "ls-tree", "-r", "-z", "--full-tree", tree, "--", GoneDir)
	if err != nil {
		return nil, err
	}
	var ids []string
	var hosts []string
	for _, e := range parseLsTree(list) {
		// <host>/<day>.txt (an older mailfs), or <host>/<day>/<batch>.txt
		parts := strings.Split(e.path, "/")
		if len(parts) != 4 && len(parts) != 5 || !strings.HasSuffix(parts[len(parts)-1], ".txt") {
			continue
		}
		ids = append(ids, e.blob)
		hosts = append(hosts, parts[2])
	}
	i := 0
	err = g.blobs(ctx, ids, func(_ string, data []byte) error {
		for l := range strings.Lines(string(data)) {
			if k := graveOf(strings.TrimSpace(l)); k != "" {
				out[k] = hosts[i]
			}
		}
		i++
		return nil
	})
	return out, err
}

// buried decides what this sync's changes do to this host's tombstones:
// the message files of its homes that ours removes and whose id it does
// not add again within the same object (a delete, or a move out of it:
// a claim) are buried; those of its homes that come back, by ours or as
// the arrival half of a move in that apply brings (a release), are raised.
// A message whose id the object still holds in its other folder
// (held(sibling) says so: a second copy, as the tree has it now) has not
// left it, and is not buried. It is pure: see writeTombstones for the act.
func buried(mine func(maildir.Address) bool, ours, apply []change, held func(string) bool) (bury, raise []string) {
	type key struct {
		obj maildir.Address
		id  string
	}
	readded := map[key]bool{}
	for _, c := range ours {
		if c.status != 'D' && isMessage(c.path) {
			if a, ok := objectOf(c.path); ok {
				readded[key{a, messageID(c.path)}] = true
			}
		}
	}
	for _, c := range ours {
		if !isMessage(c.path) {
			continue
		}
		a, ok := objectOf(c.path)
		if !ok || !mine(a) {
			continue
		}
		switch {
		case c.status == 'D' && !readded[key{a, messageID(c.path)}] && !held(sibling(c.path)):
			bury = append(bury, c.path)
		case c.status == 'A':
			raise = append(raise, c.path)
		}
	}
	for _, c := range apply {
		if c.status == 'A' && isMessage(c.path) {
			if a, ok := objectOf(c.path); ok && mine(a) {
				raise = append(raise, c.path)
			}
		}
	}
	return bury, raise
}

// holds reports whether the working tree holds file p now: one lstat,
// no git exec.
func (s *Syncer) holds(p string) bool {
	_, err := os.Lstat(filepath.Join(s.Store.Dir(), filepath.FromSlash(p)))
	return err == nil
}

// writeTombstones buries and raises paths in this host's day files in the
// working tree, forgets the days older than GoneFor, and returns the
// changes to commit. It reads only this host's own folder.
//
// Days are counted by clock (see tombClock): the later of this host's
// clock and the town's for the day a burial is dated, the earlier for
// forgetting, so that a wrong clock here never forgets a tombstone early.
// It asks clock only when a burial or a forgetting is at stake.
func (s *Syncer) writeTombstones(ctx context.Context, g *git, host string, bury, raise []string, clock func() (day, now time.Time, err error)) ([]change, error) {
	dir := GoneDir + "/" + host
	f, err := s.openFolders()
	if err != nil {
		return nil, err
	}
	defer f.close()
	d, err := f.dir(dir, len(bury) > 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // nothing buried here yet: nothing to raise
	}
	if err != nil {
		return nil, err
	}
	// Every tombstone file, by its name below dir: a day's batch
	// ("<day>/<batch>.txt"), or a whole day's file of an older mailfs
	// ("<day>.txt"); with the day of each.
	files, dayOf := map[string][]string{}, map[string]string{}
	read := func(in *durable.Dir, name, rel, day string) {
		data, _, err := in.ReadFile(name, 64<<20)
		if err != nil {
			return
		}
		dayOf[rel] = day
		for l := range strings.Lines(string(data)) {
			if p := strings.TrimSpace(l); p != "" {
				files[rel] = append(files[rel], p)
			}
		}
	}
	var dayDirs []string
	err = d.Each(func(e fs.DirEntry) {
		if day, ok := strings.CutSuffix(e.Name(), ".txt"); ok && e.Type().IsRegular() {
			read(d, e.Name(), e.Name(), day)
		} else if _, err := time.Parse(time.DateOnly, e.Name()); err == nil && e.IsDir() {
			dayDirs = append(dayDirs, e.Name())
		}
	})
	if err != nil {
		return nil, err
	}
	for _, day := range dayDirs {
		sub, err := f.dir(dir+"/"+day, false)
		if err != nil {
			return nil, err
		}
		err = sub.Each(func(e fs.DirEntry) {
			if strings.HasSuffix(e.Name(), ".txt") && !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular() {
				read(sub, e.Name(), day+"/"+e.Name(), day)
			}
		})
		if err != nil {
			return nil, err
		}
	}
	changed := map[string]bool{}
	if len(raise) > 0 {
		up := map[string]bool{}
		for _, p := range raise {
			up[graveOf(p)] = true
		}
		for rel, ps := range files {
			kept := slices.DeleteFunc(slices.Clone(ps), func(p string) bool { return up[graveOf(p)] })
			if len(kept) != len(ps) {
				files[rel] = kept
				changed[rel] = true
			}
		}
	}
	for rel, day := range dayOf {
		t, err := time.Parse(time.DateOnly, day)
		if err != nil || s.now().Sub(t) <= GoneFor+24*time.Hour {
			continue // (by this host's clock, first: most syncs ask no more)
		}
		_, now, err := clock()
		if err != nil {
			return nil, err
		}
		if now.Sub(t) > GoneFor+24*time.Hour {
			files[rel] = nil
			changed[rel] = true
		}
	}
	if len(bury) > 0 {
		// A file of this sync's own: no burial rewrites a day's tombstones
		// (git would store the whole day again at every sync that buries).
		day, _, err := clock()
		if err != nil {
			return nil, err
		}
		rel := day.UTC().Format(time.DateOnly) + "/" + s.now().UTC().Format("15-04-05.000000000") + ".txt"
		files[rel] = append(files[rel], bury...)
		changed[rel] = true
	}
	var out []change
	for _, rel := range slices.Sorted(maps.Keys(changed)) {
		in := d
		if sub, ok := strings.CutSuffix(rel, "/"+path.Base(rel)); ok && sub != rel {
			if in, err = f.dir(dir+"/"+sub, len(files[rel]) > 0); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, err
			}
		}
		p := path.Join(dir, rel)
		ps := slices.Compact(slices.Sorted(slices.Values(files[rel])))
		if len(ps) == 0 {
			if err := in.Remove(path.Base(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			out = append(out, change{path: p, status: 'D', mode: "000000", blob: zeroID})
			continue
		}
		data := strings.Join(ps, "\n") + "\n"
		if err := in.Replace(path.Base(rel), []byte(data)); err != nil {
			return nil, err
		}
		blob, err := g.blobID(ctx, data)
		if err != nil {
			return nil, err
		}
		out = append(out, change{path: p, status: 'M', mode: "100644", blob: blob})
	}
	if len(out) > 0 {
		if err := f.sync(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tombClock decides the times tombstones are counted by, from this
// host's clock (local) and the town's (town: the newest commit time of
// another host's sync on the remote; ok false when there is none): a
// burial is dated by the later of the two, so a clock behind never dates
// one early, and tombstones are forgotten by the earlier, so a clock ahead
// never forgets one early. A clock ahead dates its own burials late: they
// live longer, which keeps a deleted message dead longer and loses
// nothing. It is pure.
func tombClock(local, town time.Time, ok bool) (day, now time.Time) {
	if !ok {
		return local, local
	}
	if town.After(local) {
		return town, local
	}
	return local, town
}

// townTime returns the newest commit time, in the last 50 commits of
// theirs's first-parent line, of a commit this host's syncs did not make
// (other hosts', a person's): the town's clock, as far as this host can
// read it. ok is false when there is none.
func (g *git) townTime(ctx context.Context, theirs, host string) (t time.Time, ok bool, err error) {
	if theirs == "" {
		return time.Time{}, false, nil
	}
	out, err := g.run(ctx, "log", "--first-parent", "-n", "50", "--format=%ct %s", theirs)
	if err != nil {
		return time.Time{}, false, err
	}
	return newestOther(out, host)
}

// newestOther reads "git log --format='%ct %s'": the newest time of a
// commit whose subject is not one of host's syncs. It is pure.
func newestOther(log, host string) (t time.Time, ok bool, err error) {
	for l := range strings.Lines(log) {
		ct, subject, _ := strings.Cut(strings.TrimSpace(l), " ")
		if strings.HasPrefix(subject, syncSubject+host+":") {
			continue
		}
		sec, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("gitsync: unexpected git log line %q", l)
		}
		if c := time.Unix(sec, 0); !ok || c.After(t) {
			t, ok = c, true
		}
	}
	return t, ok, nil
}

// blobID returns the id git gives a blob of data: computed here in a
// SHA-1 repository (the object itself is written by the update-index
// that stages the file), asked of git otherwise.
func (g *git) blobID(ctx context.Context, data string) (string, error) {
	if empty, err := g.emptyTree(ctx); err == nil && empty == emptySHA1Tree {
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", len(data))
		h.Write([]byte(data))
		return hex.EncodeToString(h.Sum(nil)), nil
	}
	out, err := g.runIn(ctx, strings.NewReader(data), nil, "hash-object", "--stdin")
	return strings.TrimSpace(out), err
}

// stageTombstones puts this host's changed tombstone files into the
// index the snapshot was written from, and returns the snapshot with
// them: two execs, and the commit's tree then is the index's, so the
// branch moves without a reset.
func (g *git) stageTombstones(ctx context.Context, tombs []change) (string, error) {
	args := []string{"update-index", "--add", "--remove", "--"}
	for _, c := range tombs {
		args = append(args, c.path)
	}
	if _, err := g.run(ctx, args...); err != nil {
		return "", err
	}
	out, err := g.run(ctx, "write-tree")
	return strings.TrimSpace(out), err
}

// cutTombstones returns the tombstones in mine's history that a commit
// other than their home's sync removed — a person's git rm -r
// state/gone — and that are not back in mine's tree (where the file as
// the home put it back decides): they still stand. The home puts them
// back at its next sync (see settle); until then, and after a compaction
// cut the history of the deletes they stood for, they are the only
// record of those deletes (see gate). Two git execs: the tombstone files
// deleted, and those mine holds.
func (g *git) cutTombstones(ctx context.Context, mine string) (tombstones, error) {
	out, err := g.run(ctx, "log", "--format=%x01%s", "-p", "--no-color", "--no-ext-diff", "--no-renames", "--diff-filter=D", mine, "--", GoneDir)
	if err != nil || !strings.Contains(out, "\n-") {
		return tombstones{}, err
	}
	there, err := g.paths(ctx, "ls-tree", "-r", "-z", "--name-only", "--full-tree", mine, "--", GoneDir)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for _, p := range there {
		kept[p] = true
	}
	return cutOf(out, kept), nil
}

// cutOf reads "git log --format=%x01%s -p --diff-filter=D" of the
// tombstone folder, newest first: the lines of each tombstone file whose
// newest delete was made by a commit other than its host's sync, unless
// the file is back (kept). It is pure.
func cutOf(log string, kept map[string]bool) tombstones {
	out := tombstones{}
	seen := map[string]bool{}
	subject, host, take := "", "", false
	for l := range strings.Lines(log) {
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(l, "\x01"):
			subject, take = strings.TrimPrefix(l, "\x01"), false
		case strings.HasPrefix(l, "diff --git "):
			take = false
		case strings.HasPrefix(l, "--- a/"):
			file := strings.TrimPrefix(l, "--- a/")
			parts := strings.Split(file, "/")
			if len(parts) < 4 || seen[file] {
				continue // its newest delete decided
			}
			seen[file] = true
			host = parts[2]
			take = !kept[file] && !strings.HasPrefix(subject, syncSubject+host+":")
		case take && strings.HasPrefix(l, "-"):
			if k := graveOf(strings.TrimSpace(l[1:])); k != "" {
				out[k] = host
			}
		}
	}
	return out
}
