package gitsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// A killed sync's push that the remote took only after this host had
// moved on (the town soak, seed 112: an item in the queue and in a
// polecat's mailbox at once, claimed and merged twice). Sync A committed
// C2 (an item queued) and landed it; its push reached the server, which
// had the whole pack and moved the branch after the host was killed, so
// the host never recorded it. Meanwhile the host's next sync, B, saw the
// remote still at C1 and built C3 on it from a tree in which the item
// was claimed; its push was refused. Sync C finds C2 on the remote. C2
// is this host's own older state, not another host's change: the item
// must not come back into the queue beside the claimed copy, nor a file
// this host has changed since come back as it was.
func TestAKilledSyncsLatePushIsNotTakenForAnotherHostsChange(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	a.syncOK(t)
	rev := func() string { return strings.TrimSpace(gitRun(t, tw.remote, "rev-parse", "main")) }
	c1 := rev()
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
	must(t, err)
	mine, err := a.store.Send(&maildir.Message{From: "witness", To: "mayor", Subject: "unread when A synced"})
	must(t, err)
	a.syncOK(t) // A
	c2 := rev()
	// A was killed before it recorded its push, and the server moved
	// the branch only later.
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", c1)
	gitRun(t, a.store.Dir(), "update-ref", "refs/remotes/origin/main", c1)

	// B: the item claimed, the mail read; the push refused.
	got, err := a.store.Claim(work, agent("mayor"))
	must(t, err)
	if got.ID != ms[0].ID {
		t.Fatalf("claimed %s, want %s", got.ID, ms[0].ID)
	}
	_, err = a.store.MarkRead(agent("mayor"), mine[0].ID)
	must(t, err)
	hook := filepath.Join(tw.remote, "hooks", "pre-receive")
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\nexit 1\n"), 0o700))
	if _, err := a.sync.Sync(context.Background()); !errors.Is(err, gitsync.ErrPushRefused) {
		t.Fatalf("sync B = %v, want the push refused", err)
	}
	must(t, os.Remove(hook))
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", c2) // the late push lands

	a.syncOK(t) // C
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		if _, err := os.Stat(filepath.Join(h.store.Dir(), "state", "queue", "work", ms[0].ID+".json")); err == nil {
			t.Errorf("%s: the claimed item is back in the queue", h.name)
		}
		m, err := h.store.Get(agent("mayor"), ms[0].ID)
		if err != nil {
			t.Errorf("%s: the claimed item is not in mayor's mailbox: %v", h.name, err)
		}
		_ = m
		r, err := h.store.Get(agent("mayor"), mine[0].ID)
		if err != nil || !r.Read {
			t.Errorf("%s: the mail read after A is %v (err %v), want read", h.name, r, err)
		}
	}
	if out := gitRun(t, tw.remote, "ls-tree", "-r", "--name-only", "main", "--", "state/mail/mayor", "state/queue/work"); strings.Count(out, ms[0].ID) != 1 || strings.Count(out, mine[0].ID) != 1 {
		t.Errorf("the remote holds the item or the mail other than once:\n%s", out)
	}
}
