package gitsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// The put-back a refusal names, after another host took the rewrite: a
// person squashes the remote; alpha, up to date, takes it and pushes on
// it; beta, behind, refuses and names the force-push of its own copy; the
// person runs it, which drops what alpha sent since beta last synced;
// alpha now refuses and names mailfs sync --adopt; the person runs it.
// Every message acknowledged on either host is then in its place on both,
// and nothing deleted or archived comes back (issue 39, item 2).
func TestAPutBackAfterAnotherHostTookTheSquashLosesNothing(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 1)
	l.work(t, b, "witness", "mayor", 1)
	a.syncOK(t)
	b.syncOK(t)
	a.syncOK(t)
	l.work(t, a, "mayor", "witness", 2) // beta never sees these before the squash
	a.syncOK(t)
	tw.squash(t, "main")
	a.syncOK(t) // alpha saw these very files: it takes the squash on its own
	l.work(t, a, "mayor", "witness", 1)
	a.syncOK(t) // and builds on it
	l.work(t, b, "witness", "mayor", 1)
	putBackOverTheSquash(t, b, a)
	l.check(t, a, b)
}

// putBackOverTheSquash is what a person does as the refusals say: behind,
// refused, naming the force-push of its own copy, which the person runs;
// took, which took the squash, is then refused naming --adopt, which the
// person runs; then both sync twice.
func putBackOverTheSquash(t *testing.T, behind, took *host) {
	t.Helper()
	_, err := behind.sync.Sync(context.Background())
	put := regexp.MustCompile(`git -C (\S+) (push --force \S+ \S+:refs/heads/main)\.`).FindStringSubmatch(errString(err))
	if !errors.Is(err, gitsync.ErrRewritten) || put == nil {
		t.Fatalf("%s's sync = %v; want it refused, naming the force-push", behind.name, err)
	}
	gitRun(t, put[1], strings.Fields(put[2])...) // the person, as told
	_, err = took.sync.Sync(context.Background())
	if !errors.Is(err, gitsync.ErrRewritten) || !strings.Contains(err.Error(), "mailfs sync --adopt") {
		t.Fatalf("%s's sync after the put-back = %v; want it refused, naming --adopt", took.name, err)
	}
	took.adoptOK(t)
	for range 2 {
		behind.syncOK(t)
		took.syncOK(t)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Put-backs never undo what a home did since: a message its home
// archived after another host last saw it in the inbox is not put back
// in the inbox by that host's --adopt of a remote wound back and
// squashed (lost's "moved on" rule: without it the message is in two
// places).
func TestAdoptDoesNotPutBackWhatTheHomeMovedOn(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	r1 := strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main"))
	ms, err := b.store.Send(&maildir.Message{From: "witness", To: "mayor", Subject: "to be archived"})
	must(t, err)
	id := ms[0].ID
	b.syncOK(t)
	a.syncOK(t)
	sendBefore(t, b, "witness", 1) // what alpha never sees before the squash
	b.syncOK(t)
	tw.squash(t, r1) // wound back past the send, and squashed there
	if _, err := a.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("alpha's sync = %v, want refused", err)
	}
	a.adoptOK(t)
	if errs, err := a.store.Archive(agent("mayor"), []string{id}); errors.Join(append(errs, err)...) != nil {
		t.Fatal(errs, err)
	}
	a.syncOK(t)
	if _, err := b.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("beta's sync = %v, want refused", err)
	}
	b.adoptOK(t)
	for range 2 {
		a.syncOK(t)
		b.syncOK(t)
	}
	for _, h := range []*host{a, b} {
		if got := placesOf(t, h, id); len(got) != 1 || !strings.Contains(got[0], "/archive/") {
			t.Errorf("%s: the message is at %v, want only in mayor's archive", h.name, got)
		}
	}
}

// The same put-back over a squash, when what alpha did before it was to
// claim a queue item of its own queue for an agent homed on beta (a move
// out of alpha's queue into beta's mailbox): the item ends in exactly
// one place, witness's mailbox, never lost and never back in the queue.
func TestAPutBackOverASquashKeepsAClaimForAnotherHost(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	must(t, a.store.ClaimHome(work))
	a.syncOK(t)
	b.syncOK(t)
	ms, err := b.store.Send(&maildir.Message{From: "witness", To: "queue:work", Subject: "job"})
	must(t, err)
	id := ms[0].ID
	b.syncOK(t)
	a.syncOK(t)
	if m, err := a.store.Claim(work, agent("witness")); err != nil || m.ID != id {
		t.Fatalf("claim: %v %v", m, err)
	}
	a.syncOK(t) // beta is behind: it never sees the claim before the squash
	tw.squash(t, "main")
	a.syncOK(t)
	sendBefore(t, a, "mayor", 1)
	a.syncOK(t)
	putBackOverTheSquash(t, b, a)
	for _, h := range []*host{a, b} {
		if got := placesOf(t, h, id); len(got) != 1 || got[0] != "state/mail/witness/"+id+".json" {
			t.Errorf("%s: the claimed item is at %v, want only in witness's mailbox", h.name, got)
		}
	}
}

// A send still in its sender's outbox when its home deletes it — the
// entry pending because a compaction cut the history it waited on — and
// then a person's commit removing the tombstones: the sender's next
// syncs find the message neither on disk nor in what they push, and no
// tombstone; the home's sync that removed it is in the history they
// build on, and the no-loss gate takes that as the home's word, not a
// loss. Found by TestTownOnThreeHosts (beta: "would lose 2 message files"
// after a compaction and a tidy-up of state/gone). Since the compaction
// names beta's sync that took the send, alpha's outbox acks it at its
// first sync after the compaction; TestASendWhoseTombstoneItsHomeForgotIsNoLoss
// keeps the gate's own check of such an entry tested.
func TestASendItsHomeDeletedIsNoLossWithoutItsTombstone(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "m"})
	must(t, err)
	p := "state/mail/witness/" + ms[0].ID + ".json"
	a.syncOK(t) // in alpha's outbox until a sync of beta's descends from this push
	b.sync.Compact = true
	b.syncOK(t) // beta holds it, and compacts: alpha's push is in no history now
	b.sync.Compact = false
	must(t, b.store.Delete(agent("witness"), ms[0].ID))
	b.syncOK(t)
	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(clone), "clone", "-q", tw.remote, clone)
	gitRun(t, clone, "rm", "-q", "-r", "state/gone")
	gitRun(t, clone, "commit", "-q", "-m", "tidy up")
	gitRun(t, clone, "push", "-q", "origin", "HEAD:main")
	for range 3 { // alpha at work meanwhile: each sync pushes a commit of its own
		sendBefore(t, a, "mayor", 1)
		a.syncOK(t)
	}
	b.syncOK(t)
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		if _, ok := stateFiles(t, h.store)[p]; ok {
			t.Errorf("%s: the deleted send is back", h.name)
		}
	}
}

// An outbox entry waiting on a commit that a compaction replaced (issue
// 59, "outbox re-pointing at compaction"): the entry is re-pointed at the
// compaction, whose tree holds the send, and is dropped only once its
// home has the send — by its sync since the compaction, or by one the
// compaction names as newer than the push on the line it replaced, which
// the sender never fetched — and until then it still puts the send back
// on a rewrite that lost it.
func TestAnOutboxEntryOutlivesACompactionUntilItsHomeHasIt(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "beta", "gamma")
	a, b, c := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	must(t, a.store.ClaimHome(agent("mayor")))
	must(t, b.store.ClaimHome(agent("witness")))
	for _, h := range []*host{a, b, c, a} {
		h.syncOK(t)
	}
	outbox := filepath.Join(a.store.Dir(), ".git", "mailfs-outbox.json")
	pending := func(id string) bool {
		t.Helper()
		data, err := os.ReadFile(outbox)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		must(t, err)
		return strings.Contains(string(data), id)
	}
	compact := func() {
		t.Helper()
		c.sync.Compact = true
		defer func() { c.sync.Compact = false }()
		if rep := c.syncOK(t); rep.Compacted == 0 {
			t.Fatal("gamma compacted nothing")
		}
	}

	// The home's sync after the compaction, before the sender's.
	id1 := sendBefore(t, a, "witness", 1)[0]
	a.syncOK(t)
	compact()
	b.syncOK(t)
	a.syncOK(t)
	if pending(id1) {
		t.Errorf("the send beta's sync after the compaction took is still in alpha's outbox")
	}

	// The home's sync before the compaction, which alpha never fetched.
	id2 := sendBefore(t, a, "witness", 1)[0]
	a.syncOK(t)
	b.syncOK(t)
	compact()
	a.syncOK(t)
	if pending(id2) {
		t.Errorf("the send beta's sync took before the compaction is still in alpha's outbox")
	}

	// No sync of the home's since the push: it stays, and still proves
	// the send when a person's rewrite drops it.
	id3 := sendBefore(t, a, "witness", 1)[0]
	a.syncOK(t)
	compact()
	a.syncOK(t)
	if !pending(id3) {
		t.Fatal("a send no sync of its home's has seen left alpha's outbox")
	}
	clone := filepath.Join(t.TempDir(), "clone")
	gitRun(t, filepath.Dir(clone), "clone", "-q", tw.remote, clone)
	gitRun(t, clone, "rm", "-q", "state/mail/witness/"+id3+".json")
	tree := strings.TrimSpace(gitRun(t, clone, "write-tree"))
	rewrite := strings.TrimSpace(gitRun(t, clone, "commit-tree", tree, "-m", "rewritten"))
	gitRun(t, clone, "push", "-q", "--force", "origin", rewrite+":refs/heads/main")
	if _, err := a.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrRewritten) {
		t.Fatalf("alpha's sync after the rewrite = %v; want refused", err)
	}
	a.adoptOK(t) // puts the send back from its outbox
	if !pending(id3) {
		t.Error("the adopt dropped the send from alpha's outbox")
	}
	b.adoptOK(t)
	a.syncOK(t)
	if pending(id3) {
		t.Errorf("the send beta's sync took is still in alpha's outbox")
	}
	for _, h := range []*host{a, b} {
		for _, id := range []string{id1, id2, id3} {
			if got := placesOf(t, h, id); len(got) != 1 {
				t.Errorf("%s: %s is at %v; want it in witness's mailbox", h.name, id, got)
			}
		}
	}
}

// The gate's own check of a send already gone from the sender's disk,
// when its outbox entry outlived every record its home left but its
// delete. An entry is acked by the home's first sync after the sender's
// push, so this takes an entry whose commit the sender's repository does
// not hold (an outbox restored with a backup of .git, or a commit
// pruned), written here by hand: no home's sync acks it. Its home deleted
// the send and forgot the tombstone 90 days later (a delete of the
// tombstone file by the home's own sync, no cut). The sender's next sync
// finds the send nowhere and no tombstone: the home's sync that deleted
// it, in the whole history the sender builds on, is the home's word, not
// a loss (TestASendItsHomeDeletedIsNoLossWithoutItsTombstone met this
// while a compaction left entries pending; they are acked since the
// compaction names the homes' syncs).
func TestASendWhoseTombstoneItsHomeForgotIsNoLoss(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "m"})
	must(t, err)
	p := "state/mail/witness/" + ms[0].ID + ".json"
	a.syncOK(t)
	outbox := filepath.Join(a.store.Dir(), ".git", "mailfs-outbox.json")
	saved, err := os.ReadFile(outbox)
	must(t, err)
	b.syncOK(t)
	must(t, b.store.Delete(agent("witness"), ms[0].ID))
	b.syncOK(t)
	a.syncOK(t) // lands the delete; beta's syncs ack the send
	later := func() time.Time { return time.Now().Add(GoneForAndTwoDays) }
	a.sync.Now, b.sync.Now = later, later
	sendBefore(t, a, "mayor", 1)
	a.syncOK(t) // the town's clock is 92 days on
	b.syncOK(t) // forgets the tombstone
	if files := stateFiles(t, b.store); len(gone(files, ms[0].ID)) > 0 {
		t.Fatalf("beta's tombstone of the delete stands: %v", gone(files, ms[0].ID))
	}
	stale := regexp.MustCompile(`"commit":"[0-9a-f]+"`).ReplaceAll(saved, []byte(`"commit":"`+strings.Repeat("7", 40)+`"`))
	must(t, os.WriteFile(outbox, stale, 0o600))
	a.syncOK(t)
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		if _, ok := stateFiles(t, h.store)[p]; ok {
			t.Errorf("%s: the deleted send is back", h.name)
		}
	}
}

// GoneForAndTwoDays is past the life of a tombstone laid today.
const GoneForAndTwoDays = gitsync.GoneFor + 2*24*time.Hour
