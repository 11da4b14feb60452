package gitsync_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// A sync that takes a person's squash, lands it and is killed before it
// records the new history as the remote it last saw (its tracking ref)
// leaves this host on the new history with the old one as "known". The
// next sync meets the squash again; the home has meanwhile changed, in
// the new history, mail this host sent it (marked it read, then
// archived it, as the town's witness and sweep do). That sync must build
// on what this host landed, not on the old history it shares nothing
// with: from there, the home's archive is the only change to the message,
// and nothing conflicts (the town soak's "one failure in six short runs",
// docs/guarantees.md: beta's final sync refused, "changed on this host
// and on another", on two messages it had sent to the witness).
func TestASquashLandedButNotRecordedTakesTheHomesLaterChange(t *testing.T) {
	t.Parallel()
	needGit(t)
	wrapper := gitWrapper(t)
	tw, a, b := twoHosts(t) // beta homes the witness; alpha sends to it
	sent, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "POLECAT_DONE w-1"})
	must(t, err)
	id := sent[0].ID
	a.syncOK(t)
	b.syncOK(t) // the home has it, unread
	a.syncOK(t) // alpha last saw the remote as the home left it
	tw.squash(t, "main")

	_, err = b.store.MarkRead(agent("witness"), id)
	must(t, err)
	b.syncOK(t) // the home takes the squash, and pushes the mark on it

	// Alpha takes the squash and lands it (the mark arrives), and is
	// killed before it moves its tracking ref to the new history.
	if _, err := a.syncIn(t, tw.remote, wrapper, "update-ref:before", ""); err != nil {
		t.Fatal(err)
	}
	if m, err := a.store.Get(agent("witness"), id); err != nil || !m.Read {
		t.Fatalf("alpha did not land the squash before the kill: %v %+v", err, m)
	}
	head := strings.TrimSpace(gitRun(t, a.store.Dir(), "rev-parse", "HEAD"))
	if known := strings.TrimSpace(gitRun(t, a.store.Dir(), "rev-parse", "refs/remotes/origin/main")); known == head {
		t.Fatal("the kill came after alpha recorded the new history")
	}

	// The home's sweep archives what its witness read, and pushes that.
	if errs, err := b.store.Archive(agent("witness"), []string{id}); err != nil || errs[0] != nil {
		t.Fatalf("archive: %v %v", err, errs)
	}
	b.syncOK(t)

	rep, err := a.sync.Sync(context.Background())
	if err != nil {
		t.Fatalf("alpha's sync after the landing it never recorded: %v", err)
	}
	if len(rep.Renamed) > 0 || len(rep.Duplicates) > 0 {
		t.Errorf("alpha renamed %v, duplicates %v", rep.Renamed, rep.Duplicates)
	}
	if !strings.Contains(strings.Join(rep.Recovered, " "), "never recorded it") {
		t.Errorf("recovered %q; want the unrecorded landing named", rep.Recovered)
	}
	b.syncOK(t)
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		m, err := h.store.Get(agent("witness"), id)
		switch {
		case err != nil:
			t.Errorf("%s lost the message: %v", h.name, err)
		case !m.Archived || !m.Read:
			t.Errorf("%s holds it archived %v, read %v; want the home's archive of it read", h.name, m.Archived, m.Read)
		}
	}
	l := newLedger()
	l.check(t, a, b)
}

// The same with the send's own sync unrecorded: alpha's sync pushed its
// send and was stopped before it moved its tracking ref (a kill inside
// git push, after the remote took it); the home marks the message read,
// a person squashes, and alpha's next syncs (with --adopt, as the
// refusal says) must neither conflict, nor keep a second, unread copy.
func TestASendPushedButNotRecordedThenASquash(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	known := strings.TrimSpace(gitRun(t, a.store.Dir(), "rev-parse", "refs/remotes/origin/main"))
	sent, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "POLECAT_DONE w-1"})
	must(t, err)
	id := sent[0].ID
	a.syncOK(t)
	gitRun(t, a.store.Dir(), "update-ref", "refs/remotes/origin/main", known)
	b.syncOK(t)
	_, err = b.store.MarkRead(agent("witness"), id)
	must(t, err)
	b.syncOK(t)
	tw.squash(t, "main")
	b.syncOK(t)
	syncOrAdopt(t, a)
	if errs, err := b.store.Archive(agent("witness"), []string{id}); err != nil || errs[0] != nil {
		t.Fatalf("archive: %v %v", err, errs)
	}
	b.syncOK(t)
	syncOrAdopt(t, a)
	b.syncOK(t)
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		m, err := h.store.Get(agent("witness"), id)
		switch {
		case err != nil:
			t.Errorf("%s lost the message: %v", h.name, err)
		case !m.Archived || !m.Read:
			t.Errorf("%s holds it archived %v, read %v; want the home's archive of it read", h.name, m.Archived, m.Read)
		}
	}
	newLedger().check(t, a, b)
}
