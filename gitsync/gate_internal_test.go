package gitsync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// The no-loss gate's decision: a message file this host holds may leave
// its tree, or what it pushes, only when the result holds its id
// elsewhere or its home's tombstone.
func TestWouldLose(t *testing.T) {
	const (
		inbox   = "state/mail/nux/m1.json"
		archive = "state/mail/nux/archive/m1.json"
		queued  = "state/queue/work/q1.json"
		other   = "state/mail/mayor/m2.json"
		config  = "state/channel/ops.json"
	)
	home := func(a maildir.Address) string {
		switch a.Name {
		case "nux", "work":
			return "beta"
		case "mayor":
			return ""
		}
		return "alpha"
	}
	for _, c := range []struct {
		what      string
		gone      []string
		ids       []string
		graves    tombstones
		removedBy map[string]string
		want      []string
	}{
		{"nothing gone", nil, nil, nil, nil, nil},
		{"dropped, no word from its home", []string{inbox}, nil, nil, nil, []string{inbox}},
		{"archived by its home: the id is elsewhere", []string{inbox}, []string{"m1"}, nil, nil, nil},
		{"claimed out of the queue: the id is in a mailbox", []string{queued}, []string{"q1"}, nil, nil, nil},
		{"deleted by its home: its tombstone", []string{inbox}, nil, tombstones{graveOf(inbox): "beta"}, nil, nil},
		{"the archived copy's tombstone buries the object's id", []string{archive}, nil, tombstones{graveOf(inbox): "beta"}, nil, nil},
		{"a tombstone laid by another host than the home", []string{inbox}, nil, tombstones{graveOf(inbox): "gamma"}, nil, []string{inbox}},
		{"a tombstone of another object", []string{inbox}, nil, tombstones{graveOf("state/mail/witness/m1.json"): "beta"}, nil, []string{inbox}},
		{"no home known: any tombstone", []string{other}, nil, tombstones{graveOf(other): "gamma"}, nil, nil},
		{"another id elsewhere does not count", []string{inbox}, []string{"m2"}, nil, nil, []string{inbox}},
		{"not a message", []string{config, "state/homes/agent/nux.json"}, nil, nil, nil, nil},
		{"named once, sorted", []string{queued, inbox, inbox}, nil, nil, nil, []string{inbox, queued}},
		{"removed by its home's sync, its tombstone forgotten", []string{inbox}, nil, nil, map[string]string{inbox: "beta"}, nil},
		{"removed by another host's sync", []string{inbox}, nil, nil, map[string]string{inbox: "gamma"}, []string{inbox}},
		{"removed by a person's commit", []string{inbox}, nil, nil, map[string]string{inbox: ""}, []string{inbox}},
		{"removed by a sync, no home known", []string{other}, nil, nil, map[string]string{other: "gamma"}, []string{other}},
	} {
		ids := map[string]bool{}
		for _, id := range c.ids {
			ids[id] = true
		}
		if got := wouldLose(c.gone, ids, c.graves, c.removedBy, home); !slices.Equal(got, c.want) {
			t.Errorf("%s: lost %v, want %v", c.what, got, c.want)
		}
	}
}

// Which push failures are races, worth another round: only git's own
// rejection of a ref the remote moved on.
func TestPushFailed(t *testing.T) {
	for _, c := range []struct {
		what, stderr string
		want         pushFailure
	}{
		{"another host pushed first", " ! [rejected]        abc -> main (fetch first)\nerror: failed to push some refs\n", pushRaced},
		{"non-fast-forward", " ! [rejected]        abc -> main (non-fast-forward)\n", pushRaced},
		{"a non-bare remote", "remote: error: refusing to update checked out branch: refs/heads/main\n ! [remote rejected] abc -> main (branch is currently checked out)\n", pushRefused},
		{"a hook", " ! [remote rejected] abc -> main (pre-receive hook declined)\n", pushRefused},
		{"a protected branch", "remote: GitLab: You are not allowed to push code to protected branches on this project.\n ! [remote rejected] abc -> main (pre-receive hook declined)\n", pushRefused},
		{"no right", "ERROR: Permission to town/mail.git denied to bot.\nfatal: Could not read from remote repository.\n", pushRefused},
		{"the network", "fatal: unable to access 'https://forge/town.git/': Could not resolve host: forge\n", pushBroke},
	} {
		if got := pushFailed(c.stderr); got != c.want {
			t.Errorf("%s: %d, want %d", c.what, got, c.want)
		}
	}
}

// The gate against trees: it reads the change from the two trees and the
// outbox, not from the plan that built it, so a change that drops a
// message no home removed is refused whoever made it.
func TestGateRefusesWhatNoHomeRemoved(t *testing.T) {
	g, _ := scratchRepo(t)
	ctx := context.Background()
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Host = "alpha"
	sy := &Syncer{Store: s}
	const (
		inbox   = "state/mail/nux/m1.json"
		archive = "state/mail/nux/archive/m1.json"
		sent    = "state/mail/nux/m2.json"
		grave   = "state/gone/beta/2026-05-01.txt"
	)
	tree := func(files map[string]string) string {
		t.Helper()
		var info strings.Builder
		for p, content := range files {
			blob, err := g.runIn(ctx, strings.NewReader(content), nil, "hash-object", "-w", "--stdin")
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&info, "100644 %s\t%s\n", strings.TrimSpace(blob), p)
		}
		env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		if _, err := g.runIn(ctx, strings.NewReader(info.String()), env, "update-index", "--add", "--index-info"); err != nil {
			t.Fatal(err)
		}
		out, err := g.runIn(ctx, nil, env, "write-tree")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	held := map[string]string{inbox: "m1", "state/mail/nux/m3.json": "m3"}
	with := func(extra map[string]string, drop ...string) map[string]string {
		m := maps.Clone(held)
		maps.Copy(m, extra)
		for _, p := range drop {
			delete(m, p)
		}
		return m
	}
	for _, c := range []struct {
		what   string
		result map[string]string
		apply  []change
		outbox []outboxEntry
		lost   []string
	}{
		{"nothing changed", held, nil, nil, nil},
		{"dropped by the merge", with(nil, inbox), []change{del(inbox, "b")}, nil, []string{inbox}},
		{"dropped from the push only", with(nil, inbox), nil, nil, []string{inbox}},
		{"archived by its home", with(map[string]string{archive: "m1"}, inbox), []change{del(inbox, "b")}, nil, nil},
		{"deleted by its home", with(map[string]string{grave: inbox + "\n"}, inbox), []change{del(inbox, "b")}, nil, nil},
		{"a tombstone by another host than the recorded home", with(map[string]string{grave: inbox + "\n", "state/homes/agent/nux.json": `{"host":"gamma"}`}, inbox), []change{del(inbox, "b")}, nil, []string{inbox}},
		{"the landing deletes a file the result keeps", held, []change{del(inbox, "b")}, nil, []string{inbox}},
		{"a send no longer here, missing from the push", held, nil, []outboxEntry{{Path: sent, Home: "beta"}}, []string{sent}},
		{"a send no longer here, in the push", with(map[string]string{sent: "m2"}), nil, []outboxEntry{{Path: sent, Home: "beta"}}, nil},
	} {
		g.outbox = &outbox{Entries: c.outbox}
		g.homes = homes{}
		r := &round{snapshot: tree(held), plan: &plan{apply: c.apply}}
		mine, err := g.commitTree(ctx, tree(c.result), "result")
		if err != nil {
			t.Fatal(err)
		}
		err = sy.gate(ctx, g, "alpha", r, mine)
		var le *LossError
		switch {
		case c.lost == nil && err != nil:
			t.Errorf("%s: %v", c.what, err)
		case c.lost != nil && (!errors.As(err, &le) || !errors.Is(err, ErrWouldLose) || !slices.Equal(le.Paths, c.lost)):
			t.Errorf("%s: %v, want the loss of %v", c.what, err, c.lost)
		}
	}
}

// What git add may say when files move or change under it while it reads
// them (agents at work): each is in the next snapshot, so the add is
// tried again, not the sync failed.
func TestVanished(t *testing.T) {
	for _, c := range []struct {
		stderr string
		want   bool
	}{
		{"error: open(\"state/mail/a/x.json\"): No such file or directory\nerror: unable to index file 'state/mail/a/x.json'\nfatal: adding files failed\n", true},
		{"error: short read while indexing state/mail/a/x.json\nerror: state/mail/a/x.json: failed to insert into database\nerror: unable to index file 'state/mail/a/x.json'\nfatal: adding files failed\n", true},
		{"fatal: Unable to create '/r/.git/index.lock': File exists.\n", false},
		{"error: insufficient permission for adding an object to repository database .git/objects\n", false},
	} {
		if got := vanished(&GitError{Args: []string{"add"}, Stderr: c.stderr, Err: errors.New("exit status 128")}); got != c.want {
			t.Errorf("%q: %v, want %v", c.stderr, got, c.want)
		}
	}
}

// The times tombstones are counted by: dated by the later of the two
// clocks, forgotten by the earlier.
func TestTombClock(t *testing.T) {
	local := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	behind, ahead := local.Add(-120*24*time.Hour), local.Add(120*24*time.Hour)
	for _, c := range []struct {
		what            string
		local, town     time.Time
		ok              bool
		wantDay, wantAt time.Time
	}{
		{"no town clock: this host's", local, time.Time{}, false, local, local},
		{"alike", local, local, true, local, local},
		{"this host behind: dated by the town's", behind, local, true, local, behind},
		{"this host ahead: forgotten by the town's", ahead, local, true, ahead, local},
	} {
		day, at := tombClock(c.local, c.town, c.ok)
		if !day.Equal(c.wantDay) || !at.Equal(c.wantAt) {
			t.Errorf("%s: dated %v, forgotten by %v; want %v, %v", c.what, day, at, c.wantDay, c.wantAt)
		}
	}
	got, ok, err := newestOther("200 mailfs sync from beta: 1 files\n150 mailfs sync from alpha: 2 files\n100 squashed\n", "beta")
	if err != nil || !ok || got.Unix() != 150 {
		t.Errorf("the town's clock %v %v %v; want 150, not beta's own", got.Unix(), ok, err)
	}
	if _, ok, _ := newestOther("200 mailfs sync from beta: 1 files\n", "beta"); ok {
		t.Error("only this host's commits: a town clock")
	}
}
