package gitsync_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// A late push: a sync killed after its git push sent the whole pack, with
// the remote moving its branch to that sync's commit after the client
// died (a remote's receive-pack finishes what it was sent). The host's
// next syncs meet its own commit on the remote, one that its branch may
// not hold; they must take it as this host's own, never as another host's
// news: what this host's agents deleted, archived or read since comes
// back by no path, and nothing is lost.
//
// The remote's branch moves (git update-ref, as receive-pack does, from
// the commit the killed push saw) at three moments: before the next sync,
// between that sync's fetch and its push, and after a next sync whose push
// failed (the remote unreachable), before the one after it.
func TestALatePushIsThisHostsOwn(t *testing.T) {
	needGit(t)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"before the next sync", "between its fetch and push", "after a sync that could not push"} {
		t.Run(strings.ReplaceAll(when, " ", "-"), func(t *testing.T) {
			tw, a, b := twoHosts(t)
			dir := t.TempDir()
			killedGit, late, old, land := latePush(t, tw, dir)

			l := newLedger()
			send := func(to string) string {
				ms, err := b.store.Send(&maildir.Message{From: "witness", To: to, Subject: "before the killed sync"})
				must(t, err)
				l.want[ms[0].ID] = want{box: agent(to)}
				return ms[0].ID
			}
			deleted, archived, read := send("witness"), send("witness"), send("witness")
			send("mayor")
			killed, err := b.syncIn(t, tw.remote, killedGit, "", "")
			if err != nil || !killed {
				t.Fatalf("the sync to kill: killed %v, %v", killed, err)
			}
			if _, err := os.Stat(late); err != nil {
				t.Fatal("the killed sync never pushed")
			}
			// Beta's agent goes on with the mail the killed sync committed.
			must(t, b.store.Delete(agent("witness"), deleted))
			l.want[deleted] = want{box: agent("witness"), deleted: true}
			_, err = b.store.Archive(agent("witness"), []string{archived})
			must(t, err)
			l.want[archived] = want{box: agent("witness"), archived: true}
			_, err = b.store.MarkRead(agent("witness"), read)
			must(t, err)
			l.want[read] = want{box: agent("witness"), read: true}
			send("witness")

			switch when {
			case "before the next sync":
				land(t)
			case "between its fetch and push":
				// The next sync's git: before its first push, the remote
				// moves (its fetch saw the remote as the killed push did).
				marker := filepath.Join(dir, "landed")
				between := filepath.Join(dir, "git-between")
				script := `#!/bin/sh
if [ "$1" = push ] && [ ! -e ` + marker + ` ]; then
	: > ` + marker + `
	"$GITSYNC_REAL_GIT" -C ` + tw.remote + ` update-ref refs/heads/main "$(cat ` + late + `)" "$(cat ` + old + `)" || exit 3
fi
exec "$GITSYNC_REAL_GIT" "$@"
`
				must(t, os.WriteFile(between, []byte(script), 0o700))
				t.Setenv("GITSYNC_REAL_GIT", realGit)
				b.sync.Git = between
				b.syncOK(t)
				b.sync.Git = ""
				if _, err := os.Stat(marker); err != nil {
					t.Fatal("the sync never pushed")
				}
				gitRun(t, tw.remote, "update-ref", "-d", "refs/late/main")
			case "after a sync that could not push":
				unreachable := filepath.Join(dir, "git-unreachable")
				script := `#!/bin/sh
if [ "$1" = push ]; then
	echo "fatal: unable to access the remote: Could not resolve host" >&2
	exit 128
fi
exec "$GITSYNC_REAL_GIT" "$@"
`
				must(t, os.WriteFile(unreachable, []byte(script), 0o700))
				t.Setenv("GITSYNC_REAL_GIT", realGit)
				b.sync.Git = unreachable
				if _, err := b.sync.Sync(t.Context()); err == nil {
					t.Fatal("a sync whose push failed succeeded")
				}
				b.sync.Git = ""
				land(t)
			}
			b.syncOK(t)
			a.syncOK(t)
			b.syncOK(t)
			a.syncOK(t)
			l.check(t, a, b)
		})
	}
}

// The same, where what the killed sync committed was all undone before
// the next sync (its one message deleted): that sync's tree is the
// remote's, and it must still keep the killed sync's commit under its
// own, or the late push brings the message back from the remote as
// another host's news.
func TestALatePushOfWhatWasUndone(t *testing.T) {
	needGit(t)
	tw, a, b := twoHosts(t)
	dir := t.TempDir()
	killedGit, _, _, land := latePush(t, tw, dir)
	ms, err := b.store.Send(&maildir.Message{From: "witness", To: "witness", Subject: "sent, then deleted"})
	must(t, err)
	if killed, err := b.syncIn(t, tw.remote, killedGit, "", ""); err != nil || !killed {
		t.Fatalf("the sync to kill: killed %v, %v", killed, err)
	}
	must(t, b.store.Delete(agent("witness"), ms[0].ID))
	// The next sync, with the remote out of reach: its push (if it has
	// one) fails, and the remote stays where the killed push saw it.
	unreachable := filepath.Join(dir, "git-unreachable")
	must(t, os.WriteFile(unreachable, []byte(`#!/bin/sh
if [ "$1" = push ]; then
	echo "fatal: unable to access the remote: Could not resolve host" >&2
	exit 128
fi
exec "$GITSYNC_REAL_GIT" "$@"
`), 0o700))
	realGit, err := exec.LookPath("git")
	must(t, err)
	t.Setenv("GITSYNC_REAL_GIT", realGit)
	b.sync.Git = unreachable
	b.sync.Sync(t.Context()) // fails when it has something to push
	b.sync.Git = ""
	land(t)
	b.syncOK(t)
	a.syncOK(t)
	b.syncOK(t)
	l := newLedger()
	l.want[ms[0].ID] = want{box: agent("witness"), deleted: true}
	l.check(t, a, b)
}

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

// latePush writes, in dir, the git of a sync to kill at its push
// (killedGit): the push sends the pack (to a side ref: the objects are on
// the remote, its branch unmoved) and notes its commit in file late and
// the remote's branch as it saw it in file old, then the whole sync dies.
// land does what the remote does late: it moves its branch to that
// commit, as receive-pack would, only from where the push saw it.
func latePush(t *testing.T, tw *town, dir string) (killedGit, late, old string, land func(*testing.T)) {
	t.Helper()
	late, old = filepath.Join(dir, "late"), filepath.Join(dir, "old")
	killedGit = filepath.Join(dir, "git-killed")
	script := `#!/bin/sh
if [ "$1" = push ]; then
	for a in "$@"; do spec=$a; done
	sha=${spec%%:*}
	"$GITSYNC_REAL_GIT" push -q "$3" "$sha:refs/late/main" || exit 1
	echo "$sha" > ` + late + `
	"$GITSYNC_REAL_GIT" -C ` + tw.remote + ` rev-parse refs/heads/main > ` + old + `
	kill -9 0
fi
exec "$GITSYNC_REAL_GIT" "$@"
`
	must(t, os.WriteFile(killedGit, []byte(script), 0o700))
	land = func(t *testing.T) {
		t.Helper()
		sha, _ := os.ReadFile(late)
		was, _ := os.ReadFile(old)
		gitRun(t, tw.remote, "update-ref", "refs/heads/main", strings.TrimSpace(string(sha)), strings.TrimSpace(string(was)))
		gitRun(t, tw.remote, "update-ref", "-d", "refs/late/main")
	}
	return killedGit, late, old, land
}
