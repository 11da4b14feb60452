package gitsync_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// An older mailfs rebased with --autostash; killed mid-rebase it left
// .git/rebase-merge, the tree checked out at the remote's commit (this
// host's committed send gone from it) and the uncommitted mark stashed
// (undone). The next sync ends the rebase without touching the tree,
// writes back both, removes a stale index.lock and a journal's temp, says
// so, and nothing is lost on either host.
func TestStoppedRebaseOfAnOlderSyncIsRecovered(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	old, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "old"})
	must(t, err)
	older, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "older"})
	must(t, err)
	b.syncOK(t)
	a.syncOK(t)
	fromAlpha, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "from alpha"})
	must(t, err)
	a.syncOK(t)

	// What the older sync did on beta: commit, then rebase with autostash.
	sent, err := b.store.Send(&maildir.Message{From: "witness", To: "mayor", Subject: "committed"})
	must(t, err)
	dir := b.store.Dir()
	gitRun(t, dir, "add", "-A")
	gitRun(t, dir, "commit", "-q", "-m", "old sync")
	_, err = b.store.MarkRead(agent("witness"), old[0].ID)
	must(t, err)
	gitRun(t, dir, "fetch", "-q", "origin")
	cmd := exec.Command("git", "rebase", "-i", "--autostash", "origin/main")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_SEQUENCE_EDITOR=sed -i 1ibreak", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("rebase: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge", "autostash")); err != nil {
		t.Fatalf("the set-up left no stopped rebase: %v", err)
	}
	if m, err := b.store.Get(agent("witness"), old[0].ID); err != nil || m.Read {
		t.Fatalf("the set-up did not undo the mark: %v %v", m, err)
	}
	// An agent goes on working while the rebase stands stopped: a mark of
	// a file every commit here tracks, which the recovery must not undo (a
	// reset --hard would).
	_, err = b.store.MarkRead(agent("witness"), older[0].ID)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, ".git", "index.lock"), nil, 0o600))
	// A journal's temp, as a sync killed while it wrote its journal leaves.
	temp := filepath.Join(dir, ".git", ".mailfs-0123456789abcdef.tmp")
	must(t, os.WriteFile(temp, []byte("{"), 0o600))

	rep := b.syncOK(t)
	joined := strings.Join(rep.Recovered, "\n")
	for _, want := range []string{"removed .git/index.lock", "removed .git/.mailfs-0123456789abcdef.tmp", "ended a rebase", "wrote back"} {
		if !strings.Contains(joined, want) {
			t.Errorf("recovered %q, want it to say %q", rep.Recovered, want)
		}
	}
	a.syncOK(t)
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		if m, err := h.store.Get(agent("witness"), old[0].ID); err != nil || !m.Read {
			t.Errorf("%s: the stashed mark: %v %v", h.name, m, err)
		}
		if _, err := h.store.Get(agent("mayor"), sent[0].ID); err != nil {
			t.Errorf("%s: the committed send: %v", h.name, err)
		}
		if _, err := h.store.Get(agent("witness"), fromAlpha[0].ID); err != nil {
			t.Errorf("%s: alpha's send: %v", h.name, err)
		}
		if m, err := h.store.Get(agent("witness"), older[0].ID); err != nil || !m.Read {
			t.Errorf("%s: the mark made while the rebase stood stopped: read %v, %v", h.name, m != nil && m.Read, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-merge")); err == nil {
		t.Error("the rebase is still there")
	}
	if _, err := os.Stat(temp); err == nil {
		t.Error("the journal's temp is still there")
	}
}

// A remote wound back by force-push: the next sync puts back what it
// lost from this host's copy, and nothing deleted since comes back.
func TestRemoteWoundBackIsPutBack(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 2)
	a.syncOK(t)
	b.syncOK(t)
	before := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	l.work(t, b, "witness", "mayor", 2) // deletes and archives among it
	b.syncOK(t)
	a.syncOK(t)
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", before)
	rep := b.syncOK(t)
	if !strings.Contains(strings.Join(rep.Recovered, " "), "wound back") {
		t.Errorf("recovered %q", rep.Recovered)
	}
	a.syncOK(t)
	b.syncOK(t)
	l.check(t, a, b)
}

// A remote wound back, then built on by a host that had seen less, is
// neither older nor newer than what another host saw: that host puts back
// what the remote lost since the fork, in a merge with what was pushed
// since, and nothing is lost, regressed or resurrected anywhere.
func TestRemoteWoundBackAndBuiltOnIsPutBack(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 2)
	a.syncOK(t)
	b.syncOK(t)
	fork := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	l.work(t, b, "witness", "mayor", 2) // marks, archives, deletes among it
	b.syncOK(t)                         // the remote holds it; alpha has not seen it
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", fork)
	l.work(t, a, "mayor", "witness", 2)
	a.syncOK(t) // alpha saw nothing lost: it pushes on the fork
	rep := b.syncOK(t)
	if !strings.Contains(strings.Join(rep.Recovered, " "), "built on since") {
		t.Errorf("recovered %q", rep.Recovered)
	}
	for range 2 {
		a.syncOK(t)
		b.syncOK(t)
	}
	l.check(t, a, b)
	if got, want := stateFiles(t, a.store), stateFiles(t, b.store); !maps.Equal(got, want) {
		t.Error("the hosts hold different trees")
	}
}

// A squash made while a host was behind cannot be told from a rewrite
// there: that host refuses, at every sync, until a person takes it as
// meant (mailfs sync --adopt, as the refusal says); then every host goes
// on, and nothing is lost.
func TestSquashWhileBehindIsAdoptedWhenAsked(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 1)
	a.syncOK(t)
	b.syncOK(t)
	l.work(t, a, "mayor", "witness", 1)
	a.syncOK(t) // beta is behind
	tw.squash(t, "main")
	l.work(t, b, "witness", "mayor", 1)
	for range 2 {
		_, err := b.sync.Sync(context.Background())
		if !errors.Is(err, gitsync.ErrRewritten) || !strings.Contains(err.Error(), "mailfs sync --adopt") {
			t.Fatalf("sync of the host behind = %v; want it refused, naming --adopt", err)
		}
	}
	a.syncOK(t) // alpha saw the same files: it adopts on its own
	rep := b.adoptOK(t)
	if !strings.Contains(strings.Join(rep.Recovered, " "), "taken as meant") {
		t.Errorf("recovered %q", rep.Recovered)
	}
	a.syncOK(t)
	b.syncOK(t)
	l.check(t, a, b)
}

// A squash of a remote that had been wound back, adopted by a person on
// the home that had moved on since: what the home did to its own mail
// stands — an archive is not undone into a second copy, a read mark does
// not regress — and what others sent since arrives.
func TestAdoptKeepsWhatTheHomeDid(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	ids := sendBefore(t, a, "witness", 2)
	a.syncOK(t)
	b.syncOK(t)
	fork := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	errs, err := b.store.Archive(agent("witness"), []string{ids[0]})
	must(t, errors.Join(append(errs, err)...))
	_, err = b.store.MarkRead(agent("witness"), ids[1])
	must(t, err)
	b.syncOK(t)
	// The remote goes back to before, is squashed there, and built on.
	tw.squash(t, fork)
	after, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "after"})
	must(t, err)
	a.syncOK(t)
	if _, err := b.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("sync = %v; want it refused", err)
	}
	b.adoptOK(t)
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		files := stateFiles(t, h.store)
		if _, ok := files["state/mail/witness/"+ids[0]+".json"]; ok {
			t.Errorf("%s: the archived message is back in the mailbox", h.name)
		}
		if _, ok := files["state/mail/witness/archive/"+ids[0]+".json"]; !ok {
			t.Errorf("%s: the archived message left the archive", h.name)
		}
		if !strings.Contains(files["state/mail/witness/"+ids[1]+".json"], `"read": true`) {
			t.Errorf("%s: the read mark regressed", h.name)
		}
		if _, ok := files["state/mail/witness/"+after[0].ID+".json"]; !ok {
			t.Errorf("%s: what was sent since did not arrive", h.name)
		}
	}
}

// A squash of a remote that had been wound back to before the home
// deleted a message, adopted by a person on that home: the message stays
// deleted on both hosts, its tombstone standing, and what others sent
// since arrives. (adopt drops the rewrite's copy, as one this host's
// tombstone names; settling drops such a copy at every sync too.)
func TestAdoptDoesNotBringBackWhatTheHomeDeleted(t *testing.T) {
	t.Parallel()
	adoptAfterADelete(t, nil)
}

// The same, the delete older than a tombstone lives (GoneFor): the
// home's tombstone is forgotten, so only the home's own history says the
// message was deleted, and the message stays deleted. adopt sees it two
// ways: the delete is above the newest commit of the home's line that the
// rewrite holds, so it goes back with what the rewrite lost (putBackOn);
// and homesAsKnown finds the path deleted in the home's history. Either
// holds it alone; with both taken out, the message is back on both hosts.
func TestAdoptRemembersADeleteOlderThanItsTombstone(t *testing.T) {
	t.Parallel()
	adoptAfterADelete(t, func(tw *town, b *host, id string) {
		later := time.Now().Add(gitsync.GoneFor + 72*time.Hour)
		b.sync.Now = func() time.Time { return later }
		// The town's clock says so too (tombstones are forgotten by the
		// earlier of the host's and the town's): a commit of a person's
		// that late, changing nothing.
		note := exec.Command("git", "commit-tree", "main^{tree}", "-p", "main", "-m", "a person's note")
		note.Dir = tw.remote
		at := fmt.Sprintf("@%d +0000", later.Unix())
		note.Env = append(os.Environ(), "GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@p", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@p",
			"GIT_COMMITTER_DATE="+at, "GIT_AUTHOR_DATE="+at)
		out, err := note.Output()
		must(t, err)
		gitRun(t, tw.remote, "update-ref", "refs/heads/main", strings.TrimSpace(string(out)))
		b.syncOK(t) // forgets the tombstone
		if g := gone(stateFiles(t, b.store), id); len(g) > 0 {
			t.Fatalf("the tombstone is still there: %v", g)
		}
	})
}

// adoptAfterADelete runs the story both tests above tell: beta, witness's
// home, deletes one of two messages and syncs (alpha stays behind); then,
// after between, the remote is squashed to before the delete, alpha sends
// on top of it, and beta, refused, adopts. It fails the test if the
// deleted message is back on either host, or the other two are missing.
func adoptAfterADelete(t *testing.T, between func(tw *town, b *host, id string)) {
	tw, a, b := twoHosts(t)
	ids := sendBefore(t, a, "witness", 2)
	a.syncOK(t)
	b.syncOK(t)
	fork := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	must(t, b.store.Delete(agent("witness"), ids[0]))
	b.syncOK(t) // alpha is behind, and takes the squash of what it last saw
	if between != nil {
		between(tw, b, ids[0])
	}
	tw.squash(t, fork) // the remote goes back to before the delete
	after, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "after"})
	must(t, err)
	a.syncOK(t)
	if _, err := b.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("sync = %v; want it refused", err)
	}
	b.adoptOK(t)
	a.syncOK(t)
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		files := stateFiles(t, h.store)
		for p := range files {
			if strings.HasPrefix(p, "state/mail/") && strings.Contains(p, ids[0]) {
				t.Errorf("%s: the deleted message is back, at %s", h.name, p)
			}
		}
		if _, ok := files["state/mail/witness/"+ids[1]+".json"]; !ok {
			t.Errorf("%s: the message not deleted is gone", h.name)
		}
		if _, ok := files["state/mail/witness/"+after[0].ID+".json"]; !ok {
			t.Errorf("%s: what was sent since did not arrive", h.name)
		}
	}
}

// gone returns the paths of files under GoneDir that name id.
func gone(files map[string]string, id string) []string {
	var out []string
	for p, content := range files {
		if strings.HasPrefix(p, gitsync.GoneDir+"/") && strings.Contains(content, id) {
			out = append(out, p)
		}
	}
	return out
}

// A remote wound back and squashed there before the host that lost
// commits could put them back: that host refuses, and when a person takes
// the rewrite as meant (--adopt), what it lost goes back — a message it
// sent to another host's agent, a queue item it handed to one — while
// what the rewrite holds stands. Without that, both are gone from every
// host: the sent message lives only on the sender, and the claimed item
// left the queue its home keeps.
func TestAdoptPutsBackWhatAWoundBackSquashLost(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	must(t, a.store.CreateQueue("work"))
	for i := range 2 {
		_, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: fmt.Sprintf("job %d", i)})
		must(t, err)
	}
	a.syncOK(t)
	b.syncOK(t)
	fork := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	sent, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "sent, then wound back"})
	must(t, err)
	job, err := a.store.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, agent("witness"))
	must(t, err)
	a.syncOK(t) // the remote holds both; beta has not seen them
	tw.squash(t, fork)
	after, err := b.store.Send(&maildir.Message{From: "witness", To: "mayor", Subject: "on the squash"})
	must(t, err)
	b.syncOK(t) // beta saw just these files: it takes the squash on its own
	if _, err := a.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("sync = %v; want it refused", err)
	}
	rep := a.adoptOK(t)
	if !strings.Contains(strings.Join(rep.Recovered, " "), "files it lost since") {
		t.Errorf("recovered %q", rep.Recovered)
	}
	b.syncOK(t)
	a.syncOK(t)
	if got, want := stateFiles(t, a.store), stateFiles(t, b.store); !maps.Equal(got, want) {
		t.Error("the hosts hold different trees")
	}
	for _, h := range []*host{a, b} {
		files := stateFiles(t, h.store)
		for what, p := range map[string]string{
			"the message sent":       "state/mail/witness/" + sent[0].ID + ".json",
			"the item claimed":       "state/mail/witness/" + job.ID + ".json",
			"what was sent on top":   "state/mail/mayor/" + after[0].ID + ".json",
			"the item still waiting": "",
		} {
			if p == "" {
				ms, err := h.store.List(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, maildir.ListOptions{All: true})
				must(t, err)
				if len(ms) != 1 || ms[0].ID == job.ID {
					t.Errorf("%s: the queue holds %d items, want the one not claimed", h.name, len(ms))
				}
				continue
			}
			if _, ok := files[p]; !ok {
				t.Errorf("%s: %s is lost (%s)", h.name, what, p)
			}
		}
	}
}

// A squash made while a host was behind, after the home archived the one
// message that host's last sync sent: adopted, the message stays in the
// archive. The rewrite lacks it in the mailbox, as it would lack a message
// the rewrite lost — but its id is in the archive, so the commit that
// sent it is held, and nothing goes back.
func TestAdoptDoesNotUndoWhatTheHomeMovedOn(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	m, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "archived since"})
	must(t, err)
	a.syncOK(t)
	b.syncOK(t)
	errs, err := b.store.Archive(agent("witness"), []string{m[0].ID})
	must(t, errors.Join(append(errs, err)...))
	b.syncOK(t) // alpha is behind
	tw.squash(t, "main")
	if _, err := a.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("sync = %v; want it refused", err)
	}
	a.adoptOK(t)
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		files := stateFiles(t, h.store)
		if _, ok := files["state/mail/witness/"+m[0].ID+".json"]; ok {
			t.Errorf("%s: the archived message is back in the mailbox", h.name)
		}
		if _, ok := files["state/mail/witness/archive/"+m[0].ID+".json"]; !ok {
			t.Errorf("%s: the archived message left the archive", h.name)
		}
	}
}

// Two hosts put back what a wound-back remote lost at the same time, one
// pushing first: the other's second try meets two merge bases (its own
// put-back and the first's each merged the same two commits). Taken
// alone, the older base lacks a message both put back, which then looks
// lost since, and comes back beside the archived copy its home made in
// between. The virtual base of both (as git's recursive merge makes it)
// brings nothing back.
func TestCrissCrossedPutBacksBringNothingBack(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "beta", "gamma")
	a, b, c := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	must(t, a.store.ClaimHome(agent("mayor")))
	must(t, b.store.ClaimHome(agent("witness")))
	for _, h := range []*host{a, b, c, a, b} {
		h.syncOK(t)
	}
	fork := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	m, err := c.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "put back twice"})
	must(t, err)
	c.syncOK(t)
	b.syncOK(t)
	_, err = b.store.MarkRead(agent("witness"), m[0].ID)
	must(t, err)
	b.syncOK(t)
	// The remote goes back; alpha, which saw only that, builds on it.
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", fork)
	_, err = a.store.Send(&maildir.Message{From: "mayor", To: "mayor", Subject: "on the older commit"})
	must(t, err)
	a.syncOK(t)
	// gamma puts back what it sent; before its push, beta puts back what
	// it saw, archives the message and pushes: gamma tries again.
	first := true
	c.sync.Progress = func(step string) {
		if first && strings.HasPrefix(step, "pushing") {
			first = false
			b.syncOK(t)
			errs, err := b.store.Archive(agent("witness"), []string{m[0].ID})
			must(t, errors.Join(append(errs, err)...))
			b.syncOK(t)
		}
	}
	rep := c.syncOK(t)
	c.sync.Progress = nil
	if first || len(rep.Recovered) < 2 {
		t.Fatalf("gamma did not put back twice: recovered %q", rep.Recovered)
	}
	if bases := strings.Fields(gitRun(t, c.store.Dir(), "log", "--merges", "--format=%p", "-n", "2", "main")); len(bases) < 4 {
		t.Fatalf("no criss-cross of put-backs: %v", bases)
	}
	for range 2 {
		for _, h := range []*host{a, b, c} {
			h.syncOK(t)
		}
	}
	for _, h := range []*host{a, b, c} {
		files := stateFiles(t, h.store)
		if _, ok := files["state/mail/witness/"+m[0].ID+".json"]; ok {
			t.Errorf("%s: the archived message is back in the mailbox", h.name)
		}
		if !strings.Contains(files["state/mail/witness/archive/"+m[0].ID+".json"], `"read": true`) {
			t.Errorf("%s: the archived copy is gone or unread", h.name)
		}
	}
}

// A remote squashed to one commit with the same files is adopted by
// every host, which then go on syncing.
func TestRemoteSquashedIsAdopted(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 2)
	a.syncOK(t)
	b.syncOK(t)
	tw.squash(t, "main")
	l.work(t, b, "witness", "mayor", 1)
	l.work(t, a, "mayor", "witness", 1)
	for _, h := range []*host{a, b} {
		if rep := h.syncOK(t); !strings.Contains(strings.Join(rep.Recovered, " "), "rewritten") {
			t.Errorf("%s recovered %q", h.name, rep.Recovered)
		}
	}
	a.syncOK(t)
	l.check(t, a, b)
	if n := strings.Count(gitRun(t, tw.remote, "log", "--oneline", "main"), "\n"); n > 4 {
		t.Errorf("the old history came back: %d commits", n)
	}
}

// A remote rewritten to other files is refused: nothing changes here,
// and the error says how to put the branch back.
func TestRemoteRewrittenIsRefused(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 1)
	a.syncOK(t)
	b.syncOK(t)
	empty := strings.TrimSpace(gitRun(t, tw.remote, "commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "-m", "wiped"))
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", empty)
	head := gitRun(t, b.store.Dir(), "rev-parse", "HEAD")
	files := stateFiles(t, b.store)
	_, err := b.sync.Sync(context.Background())
	if !errors.Is(err, gitsync.ErrRewritten) || !strings.Contains(err.Error(), "push --force") {
		t.Fatalf("sync = %v", err)
	}
	if got := gitRun(t, b.store.Dir(), "rev-parse", "HEAD"); got != head {
		t.Error("HEAD moved")
	}
	if got := stateFiles(t, b.store); len(got) != len(files) {
		t.Errorf("the tree changed: %d files, had %d", len(got), len(files))
	}
	// The refusal sticks: every later sync (the next --every tick) refuses
	// the same and changes nothing, and the remote keeps the rewrite.
	for i := range 2 {
		if _, err := b.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
			t.Fatalf("sync %d after the refusal = %v; want it refused again", i+2, err)
		}
	}
	if got := gitRun(t, b.store.Dir(), "rev-parse", "HEAD"); got != head {
		t.Error("HEAD moved on a later sync")
	}
	if got := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "refs/heads/main")); got != empty {
		t.Errorf("a later sync pushed over the rewrite: the remote is at %s", got)
	}
	// The person puts the branch back, as the refusal says: syncs go on.
	gitRun(t, b.store.Dir(), "push", "--force", tw.remote, strings.TrimSpace(head)+":refs/heads/main")
	b.syncOK(t)
	a.syncOK(t)
	l.check(t, a, b)
}

// Two hosts claim one home before either syncs, and both change its
// mail. The first to push keeps the home; the other's record yields, its
// marks, archives and deletes under that home are undone (named in the
// report), its sends to it stay, and the next syncs are clean — never a
// standing conflict.
func TestLostHomeChangesAreUndoneNotConflicts(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	ids := sendBefore(t, a, "nux", 4)
	a.syncOK(t)
	b.syncOK(t)
	must(t, a.store.ClaimHome(agent("nux")))
	must(t, b.store.ClaimHome(agent("nux")))
	_, err := a.store.MarkRead(agent("nux"), ids[3])
	must(t, err)
	_, err = b.store.MarkRead(agent("nux"), ids[0])
	must(t, err)
	_, err = b.store.Archive(agent("nux"), []string{ids[1]})
	must(t, err)
	must(t, b.store.Delete(agent("nux"), ids[2]))
	sent, err := b.store.Send(&maildir.Message{From: "witness", To: "nux", Subject: "from beta"})
	must(t, err)
	a.syncOK(t)
	rep := b.syncOK(t)
	if !slices.Equal(rep.Yielded, []string{"state/homes/agent/nux.json"}) || len(rep.Reverted) != 4 {
		t.Fatalf("yielded %v, reverted %v", rep.Yielded, rep.Reverted)
	}
	a.syncOK(t)
	b.syncOK(t)
	l := newLedger()
	for i, id := range ids {
		l.want[id] = want{box: agent("nux"), read: i == 3}
	}
	l.want[sent[0].ID] = want{box: agent("nux")}
	l.check(t, a, b)
	if err := b.store.MayChange(agent("nux")); !errors.Is(err, maildir.ErrNotHome) {
		t.Errorf("beta may still change nux: %v", err)
	}
}

// A home race where both hosts changed the same messages: the loser's
// changes to them are undone (named in the report) and the winner's
// stand; the trees converge, and no sync stops.
func TestHomeRaceOnTheSameMessagesConverges(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	ids := sendBefore(t, a, "nux", 3)
	a.syncOK(t)
	b.syncOK(t)
	must(t, a.store.ClaimHome(agent("nux")))
	must(t, b.store.ClaimHome(agent("nux")))
	// alpha: marks 0, deletes 1, archives 2; beta: deletes 0, marks 1, marks 2.
	_, err := a.store.MarkRead(agent("nux"), ids[0])
	must(t, err)
	must(t, a.store.Delete(agent("nux"), ids[1]))
	_, err = a.store.Archive(agent("nux"), []string{ids[2]})
	must(t, err)
	must(t, b.store.Delete(agent("nux"), ids[0]))
	_, err = b.store.MarkRead(agent("nux"), ids[1])
	must(t, err)
	_, err = b.store.MarkRead(agent("nux"), ids[2])
	must(t, err)
	a.syncOK(t) // alpha pushes first: the home is alpha's
	rep := b.syncOK(t)
	if !slices.Equal(rep.Yielded, []string{"state/homes/agent/nux.json"}) || len(rep.Reverted) != 3 {
		t.Fatalf("yielded %v, reverted %v; want beta's three changes undone", rep.Yielded, rep.Reverted)
	}
	a.syncOK(t)
	b.syncOK(t)
	l := newLedger()
	l.want[ids[0]] = want{box: agent("nux"), read: true}
	l.want[ids[1]] = want{deleted: true}
	l.want[ids[2]] = want{box: agent("nux"), archived: true}
	l.check(t, a, b)
}

// git's message is reported whole, every line but its "hint:" advice
// (which names git commands), never cut at the first line.
func TestGitErrorsAreWholeWithoutHints(t *testing.T) {
	t.Parallel()
	err := &gitsync.GitError{Args: []string{"push", "origin"}, Err: errors.New("exit status 1"),
		Stderr: "To /srv/remote.git\n ! [rejected] main -> main (fetch first)\nerror: failed to push some refs to '/srv/remote.git'\nhint: Updates were rejected because the remote contains work\nhint: that you do not have locally.\n"}
	got := err.Error()
	want := "git push origin: To /srv/remote.git; ! [rejected] main -> main (fetch first); error: failed to push some refs to '/srv/remote.git'"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

// A stale version of a home's file pushed by another (a put-back or an
// adopt of a host that saw an older version; here, a person's commit on
// the remote) meets the home's own newer change, not yet synced: only a
// home changes its files, so the home's version stands and goes back to
// the remote — never a "changed on this host and on another" conflict
// that stops the home's every sync. Found by TestTownOnThreeHosts: an
// adopt's put-back of a group file edited back and forth.
func TestAStaleVersionMeetsTheHomesNewerChange(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	_, err := b.store.CreateGroup("crew", []string{"witness"})
	must(t, err)
	b.syncOK(t)
	a.syncOK(t)
	// The stale version, from a clone of the remote.
	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(clone), "clone", "-q", tw.remote, clone)
	p := "state/groups/crew.json"
	must(t, os.WriteFile(filepath.Join(clone, p), []byte(`{"members": ["witness", "stale"]}`+"\n"), 0o600))
	gitRun(t, clone, "commit", "-q", "-am", "an older crew")
	gitRun(t, clone, "push", "-q", "origin", "HEAD:main")
	// The home's own change, made meanwhile.
	_, err = b.store.AddMembers("crew", []string{"mayor"})
	must(t, err)
	want := read(t, b, p)
	rep := b.syncOK(t)
	if !slices.Contains(rep.Reverted, p) {
		t.Errorf("reverted %v; want %s named", rep.Reverted, p)
	}
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		if got := read(t, h, p); got != want {
			t.Errorf("%s: %s is %q; want the home's %q", h.name, p, got, want)
		}
	}
	if got := gitRun(t, tw.remote, "show", "main:"+p); got != want {
		t.Errorf("the remote's %s is %q; want the home's", p, got)
	}
}

// A sync that brings nothing writes no journal (nothing arrives to be
// made durable, issue 59's cycle cost): killed as it moves its branch, it
// leaves none for the next to finish, and the next commits and pushes
// what it had not.
func TestASyncThatBringsNothingLeavesNoJournal(t *testing.T) {
	needGit(t)
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, b, "witness", "mayor", 1)
	killed, err := b.syncIn(t, tw.remote, gitWrapper(t), "update-ref:before", "")
	if err != nil || !killed {
		t.Fatalf("the sync to kill at update-ref: killed %v, %v", killed, err)
	}
	if _, err := os.Stat(filepath.Join(b.store.Dir(), ".git", "mailfs-apply.json")); err == nil {
		t.Error("a sync that brought nothing left a landing journal")
	}
	rep := b.syncOK(t)
	for _, r := range rep.Recovered {
		if strings.Contains(r, "finished writing") || strings.Contains(r, "half-written") {
			t.Errorf("the next sync recovered a landing of nothing: %s", r)
		}
	}
	a.syncOK(t)
	l.check(t, a, b)
}
