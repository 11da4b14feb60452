package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// compactSubject begins the subject of a compaction's commit.
const compactSubject = "mailfs compact from "

// maxCompactList bounds how many of the replaced commits a compaction
// names: a host whose last sync is older than that meets the compaction
// as any other rewrite (refused, until --adopt).
const maxCompactList = 1000

// ErrCompactWaits is returned by a compaction of a history in which a
// commit other than their home's sync removed a host's tombstones (a
// person's commit removing state/gone) that the home has not yet put
// back: the history is the last record of the deletes they stood for,
// for a host that still holds the messages. Nothing was replaced; the
// home's next sync puts them back, then compact.
var ErrCompactWaits = errors.New("gitsync: not compacted yet")

// ErrCompactRaced is returned by a compaction that another host's push
// beat: nothing was replaced; run it again.
var ErrCompactRaced = errors.New("gitsync: another host pushed while this one compacted")

// compact replaces the remote's history by one commit holding its tree,
// after a sync that left this host and the remote alike: git keeps a
// history that grows with every send, archive and delete, and the state
// tree is all a town needs of it (tombstones and outboxes are not
// history: see GoneDir, outbox). The commit names the commits it
// replaced (the newest maxCompactList of the first-parent line), so that
// every host whose last sync is among them takes it as it takes a push
// (see lookAtRewrite) — no refusal, nothing lost or brought back — and the
// push is made only if the remote is still what this host synced
// (--force-with-lease): a host that pushed meanwhile makes it fail, with
// nothing replaced. What the remote then frees is its own business (a
// bare repository's git gc; a forge's housekeeping).
func (s *Syncer) compact(ctx context.Context, g *git, rep *Report) error {
	tracking := "refs/remotes/" + rep.Remote + "/" + rep.Branch
	tip, head := g.rev(ctx, tracking), g.rev(ctx, "HEAD")
	if tip == "" || tip != head {
		return fmt.Errorf("gitsync: not compacted: this host (%.12s) and the remote (%.12s) are not alike after the sync; sync again, then compact", head, tip)
	}
	tree, err := g.tree(ctx, tip)
	if err != nil {
		return err
	}
	line, err := g.run(ctx, "log", "--first-parent", "-n", strconv.Itoa(maxCompactList), "--format=%H %s", tip)
	if err != nil {
		return err
	}
	commits, newest := replacedLine(line)
	if len(commits) < 2 {
		return nil // one commit already
	}
	log, err := g.run(ctx, "log", "--first-parent", "-n", strconv.Itoa(maxCompactList), "--diff-merges=first-parent",
		"--no-renames", "-z", "--format=%x01%s", "--name-status", tip, "--", GoneDir)
	if err != nil {
		return err
	}
	if cut := tombstonesCut(log); len(cut) > 0 {
		return fmt.Errorf("%w: the tombstones of %s were removed by a commit that was not their home's sync, and the history is the last record of the deletes they stood for; nothing was replaced: sync on %s (it puts them back), then compact", ErrCompactWaits, strings.Join(cut, ", "), strings.Join(cut, ", "))
	}
	msg := fmt.Sprintf(compactSubject+"%s: %d commits replaced by one\n\n%s\n\n%s", rep.Host, len(commits), strings.Join(commits, "\n"), newest)
	c, err := g.commitTree(ctx, tree, msg)
	if err != nil {
		return err
	}
	s.step("compacting %s %s: %d commits", rep.Remote, rep.Branch, len(commits))
	if _, err := g.run(ctx, "push", "-q", "--force-with-lease=refs/heads/"+rep.Branch+":"+tip, rep.Remote, c+":refs/heads/"+rep.Branch); err != nil {
		var ge *GitError
		if errors.As(err, &ge) {
			switch pushFailed(ge.Stderr) {
			case pushRaced:
				return fmt.Errorf("%w: nothing was replaced; run the compaction again", ErrCompactRaced)
			case pushRefused:
				return fmt.Errorf("%w: nothing was replaced: %w", ErrPushRefused, err)
			}
		}
		return err
	}
	// The tree is the index's and the working tree's already: refs only.
	if _, err := g.run(ctx, "update-ref", g.headRef(), c, tip); err != nil {
		return err
	}
	if _, err := g.run(ctx, "update-ref", tracking, c); err != nil {
		return err
	}
	g.head = c
	if len(g.outbox.Entries) > 0 {
		// What was pending is in the compacted tree: held by c now.
		g.outbox.Commit = c
		if err := writeOutbox(g, g.outbox); err != nil {
			return err
		}
	}
	rep.Compacted = len(commits)
	return nil
}

// newestSyncOf begins a line of a compaction's message that names, for
// one host, the newest of the replaced commits its syncs made:
// "newest sync of <host>: <commit>". A host whose outbox waited on a
// replaced commit reads them (see ackedAt): a home whose sync is newer
// on the line has what the commit held.
const newestSyncOf = "newest sync of "

// replacedLine reads "git log --first-parent --format='%H %s'" of the
// history a compaction replaces: its commits, newest first, and the
// lines of the message that name each host's newest sync among them
// (see newestSyncOf), sorted. It is pure.
func replacedLine(log string) (commits []string, newest string) {
	seen := map[string]string{}
	for l := range strings.Lines(log) {
		c, subject, _ := strings.Cut(strings.TrimSpace(l), " ")
		if c == "" {
			continue
		}
		commits = append(commits, c)
		if rest, ok := strings.CutPrefix(subject, syncSubject); ok {
			if host, _, _ := strings.Cut(rest, ":"); seen[host] == "" {
				seen[host] = c
			}
		}
	}
	var lines []string
	for _, host := range slices.Sorted(maps.Keys(seen)) {
		lines = append(lines, newestSyncOf+host+": "+seen[host])
	}
	return commits, strings.Join(lines, "\n")
}

// ackedAt reads the messages of a history's compactions, newest first
// ("git log --format=%x01%H%n%B"), and finds the newest that replaced
// commit: it returns that compaction and the hosts whose syncs made a
// commit newer than commit on the line it replaced (they built on it),
// or "" and nil when none replaced it. It is pure.
func ackedAt(log, commit string) (compaction string, synced map[string]bool) {
	for _, entry := range strings.Split(log, "\x01")[1:] {
		c, body, _ := strings.Cut(entry, "\n")
		at := map[string]int{}
		newest := map[string]string{}
		i := 0
		for l := range strings.Lines(body) {
			l = strings.TrimSpace(l)
			if rest, ok := strings.CutPrefix(l, newestSyncOf); ok {
				if host, by, ok := strings.Cut(rest, ": "); ok {
					newest[host] = by
				}
			} else if l != "" && !strings.Contains(l, " ") {
				at[l] = i
				i++
			}
		}
		pos, ok := at[commit]
		if !ok {
			continue
		}
		synced = map[string]bool{}
		for host, by := range newest {
			if n, ok := at[by]; ok && n < pos {
				synced[host] = true
			}
		}
		return strings.TrimSpace(c), synced
	}
	return "", nil
}

// compactedFrom reads the messages of a history's compactions (git log
// --format=%B) and returns the newest of line (a first-parent line,
// newest first) that one of them replaced, or "": the new history holds
// everything that commit held. It is pure.
func compactedFrom(bodies string, line []string) string {
	replaced := map[string]bool{}
	for l := range strings.Lines(bodies) {
		replaced[strings.TrimSpace(l)] = true
	}
	for _, c := range line {
		if replaced[c] {
			return c
		}
	}
	return ""
}

// tombstonesCut reads "git log -z --format=%x01%s --name-status" of a
// history's tombstone folder, newest first, and returns the hosts (sorted)
// some of whose tombstone files were last removed by a commit that was
// not that host's sync: a person's, or another host's. It is pure.
func tombstonesCut(log string) []string {
	seen := map[string]bool{}
	cut := map[string]bool{}
	for _, c := range strings.Split(log, "\x01")[1:] {
		fields := strings.Split(strings.TrimLeft(c, "\n"), "\x00")
		subject := strings.TrimSpace(fields[0])
		for i := 1; i+1 < len(fields); i += 2 {
			status, p := strings.TrimSpace(fields[i]), fields[i+1]
			parts := strings.Split(p, "/")
			if seen[p] || len(parts) < 4 {
				continue
			}
			seen[p] = true // its newest change decides
			if host := parts[2]; status == "D" && !strings.HasPrefix(subject, syncSubject+host+":") {
				cut[host] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(cut))
}
