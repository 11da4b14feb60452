package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// outboxFile keeps, in .git (never committed, never pushed), the messages
// this host sent to objects homed on other hosts that no home has yet
// shown it holds.
const outboxFile = "mailfs-outbox.json"

// An outbox is what this host sent to other hosts' homes and must not
// lose before their homes have it.
//
// A send to another host's mailbox or queue is an add this host commits
// and pushes; until that home syncs on top of it, this host's history and
// the remote's are the only copies. A person's force-push can drop it
// from the remote, and a rewrite adopted here (mailfs sync --adopt) would
// then drop it from this host too: gone everywhere but a reflog. So every
// such add stays in the outbox, with the commit that last pushed it,
// until a commit made by its home's sync descends from that commit: the
// home built on it, so its working tree holds the message (a sync lands
// what arrived before it pushes), and from then on the home answers for
// it. A sync that builds on a rewrite (adopt, or a put-back) puts back
// every entry the rewrite lacks, unless the message is elsewhere in it
// (its home moved it on: archived it, handed it to a claimant).
type outbox struct {
	Commit  string        `json:"commit"` // the last commit this host pushed that held them
	Entries []outboxEntry `json:"entries"`
}

type outboxEntry struct {
	Path string `json:"path"`
	Blob string `json:"blob"`
	Home string `json:"home"`
}

func readOutbox(g *git) (*outbox, error) {
	data, err := os.ReadFile(filepath.Join(g.dir, ".git", outboxFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &outbox{}, nil
	}
	if err != nil {
		return nil, err
	}
	o := &outbox{}
	if err := json.Unmarshal(data, o); err != nil {
		return nil, fmt.Errorf("gitsync: .git/%s: %w", outboxFile, err)
	}
	return o, nil
}

func writeOutbox(g *git, o *outbox) error {
	d, done, err := journalDir(g)
	if err != nil {
		return err
	}
	defer done()
	if len(o.Entries) == 0 {
		if err := d.Remove(outboxFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return d.Sync()
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return d.Replace(outboxFile, append(data, '\n'))
}

// homes answers, for one sync, whose objects are whose: each object's
// home record is read once, however many of its files a sync meets (a
// first push meets every message).
type homes map[maildir.Address]string

// of returns the host a's home record names, and whether it is this
// host's.
func (s *Syncer) homeOf(h homes, a maildir.Address) (host string, mine bool) {
	if host, ok := h[a]; ok {
		return host, host == "\x00"
	}
	var nh *maildir.NotHomeError
	err := s.Store.MayChange(a)
	switch {
	case err == nil:
		host = "\x00" // this host's
	case errors.As(err, &nh):
		host = nh.Home
	}
	h[a] = host
	return host, host == "\x00"
}

// mineIn returns a memoised "is a this host's" for one sync.
func (s *Syncer) mineIn(h homes) func(maildir.Address) bool {
	return func(a maildir.Address) bool { _, mine := s.homeOf(h, a); return mine }
}

// sent adds to the outbox this host's message adds to other hosts' homes
// that commit mine pushes, and moves every entry still pending to mine.
func (s *Syncer) sent(g *git, o *outbox, ours []change, mine string) error {
	have := map[string]bool{}
	for _, e := range o.Entries {
		have[e.Path] = true
	}
	changed := false
	for _, c := range ours {
		if c.status != 'A' || !isMessage(c.path) || have[c.path] {
			continue
		}
		a, ok := objectOf(c.path)
		if !ok {
			continue
		}
		if home, mine := s.homeOf(g.homes, a); !mine && home != "" {
			o.Entries = append(o.Entries, outboxEntry{Path: c.path, Blob: c.blob, Home: home})
			changed = true
		}
	}
	if len(o.Entries) == 0 || !changed && o.Commit == mine {
		return nil
	}
	o.Commit = mine
	return writeOutbox(g, o)
}

// acked drops from the outbox what the homes have: the entries whose home
// made a commit that descends from the one that pushed them, within
// theirs's history. One git exec, only while entries are pending.
//
// A compaction replaced that commit when theirs's history does not hold
// it: the entries are then re-pointed at the compaction, whose tree holds
// what the commit held (or what their homes made of it), and the homes'
// syncs the compaction names as newer than the commit, on the line it
// replaced, ack theirs (see ackedAt) — a home that built on the send
// before the compaction has it, even where this host never fetched that
// history. Then the homes' syncs since the compaction ack theirs, as
// above.
func (s *Syncer) acked(ctx context.Context, g *git, o *outbox, theirs string) error {
	if len(o.Entries) == 0 || o.Commit == "" || theirs == "" || theirs == o.Commit {
		return nil
	}
	out, err := g.run(ctx, "log", "--ancestry-path", "--format=%s", o.Commit+".."+theirs)
	var ge *GitError
	if err != nil && !errors.As(err, &ge) {
		return err
	}
	n, moved := len(o.Entries), false
	if out == "" {
		// Not in theirs's history (or not here at all: pruned). Replaced
		// by a compaction?
		bodies, err := g.run(ctx, "log", "--first-parent", "-n", strconv.Itoa(maxCompactList), "--grep=^"+compactSubject, "--format=%x01%H%n%B", theirs)
		if err != nil {
			return err
		}
		c, synced := ackedAt(bodies, o.Commit)
		if c == "" {
			return nil // keep them: a rewrite this host's sync judges (see lineage)
		}
		o.Entries = ackedBy(o.Entries, synced)
		o.Commit, moved = c, true
		if c != theirs && len(o.Entries) > 0 {
			if out, err = g.run(ctx, "log", "--ancestry-path", "--format=%s", c+".."+theirs); err != nil {
				return err
			}
		}
	}
	o.Entries = ackedBy(o.Entries, syncedHosts(out))
	if len(o.Entries) == n && !moved {
		return nil
	}
	return writeOutbox(g, o)
}

// syncedHosts reads the subjects of a history (git log --format=%s): the
// hosts whose syncs made a commit of it.
func syncedHosts(log string) map[string]bool {
	synced := map[string]bool{}
	for l := range strings.Lines(log) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), syncSubject); ok {
			host, _, _ := strings.Cut(rest, ":")
			synced[host] = true
		}
	}
	return synced
}

// ackedBy returns the entries still pending: those whose own home made
// none of the commits (synced) that descend from the push. Another
// host's sync on top says nothing of what a home holds. It is pure.
func ackedBy(entries []outboxEntry, synced map[string]bool) []outboxEntry {
	return slices.DeleteFunc(entries, func(e outboxEntry) bool { return synced[e.Home] })
}

// unsent returns the changes that put back on tree up the outbox entries
// it lacks, unless the message is elsewhere in it (its home moved it on)
// or its home tombstoned it there (removed it: see GoneDir), in up or in
// known, the tree this host last synced.
func (s *Syncer) unsent(ctx context.Context, g *git, o *outbox, known, up string) ([]change, error) {
	if len(o.Entries) == 0 {
		return nil, nil
	}
	files, err := g.files(ctx, up)
	if err != nil {
		return nil, err
	}
	// The tombstones up has, and those this host last saw (known): a
	// rewrite from before a home buried a message lacks its tombstone.
	graves, err := g.readTombstones(ctx, up)
	if err != nil {
		return nil, err
	}
	seen, err := g.readTombstones(ctx, known)
	if err != nil {
		return nil, err
	}
	for k, h := range seen {
		graves[k] = h
	}
	return unsentOf(o.Entries, files, graves), nil
}

// unsentOf decides which outbox entries go back on a tree whose files
// are given: those it lacks, unless the message is elsewhere in it (its
// home moved it on: archived, claimed) — but not where its home buried it
// (a queue it was claimed out of, in a rewrite from before) — or its home
// buried it (graves). It is pure.
func unsentOf(entries []outboxEntry, files map[string]string, graves tombstones) []change {
	where := map[string]bool{}
	for p := range files {
		if id := messageID(p); id != "" && graves.of(p) == "" {
			where[id] = true
		}
	}
	var back []change
	for _, e := range entries {
		if _, ok := files[e.Path]; ok || where[messageID(e.Path)] || graves.of(e.Path) != "" {
			continue // there, moved on by its home, or removed by it
		}
		back = append(back, change{path: e.Path, status: 'A', mode: "100644", omode: "000000", blob: e.Blob, old: zeroID})
	}
	return back
}
