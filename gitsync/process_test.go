package gitsync_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// The test binary is also a sync in a process of its own, so tests can
// kill -9 a sync at any git step (see gitWrapper).
func TestMain(m *testing.M) {
	switch os.Getenv("GITSYNC_TEST_ROLE") {
	case "sync":
		os.Exit(syncProcess())
	}
	os.Exit(m.Run())
}

// syncProcess is one sync of GITSYNC_ROOT as host GITSYNC_HOST, with git
// run through GITSYNC_GIT.
func syncProcess() int {
	s, err := maildir.Open(os.Getenv("GITSYNC_ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s.Host = os.Getenv("GITSYNC_HOST")
	sy := &gitsync.Syncer{Store: s, Remote: os.Getenv("GITSYNC_REMOTE"), Git: os.Getenv("GITSYNC_GIT")}
	if _, err := sy.Sync(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

// gitWrapper writes a stand-in for git, a shell script: it runs the real
// git ($GITSYNC_REAL_GIT) and, when its subcommand is the one
// $GITSYNC_KILL names ("add:during"), kills its whole process group —
// the sync and every git under it — with SIGKILL: before git starts,
// while it works, or after it finished but before the sync hears of it.
func gitWrapper(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "git")
	const script = `#!/bin/sh
sub=
skip=
for a in "$@"; do
	if [ -n "$skip" ]; then skip=; continue; fi
	case "$a" in
	-C|-c) skip=1 ;;
	-*) ;;
	*) sub=$a; break ;;
	esac
done
[ -n "$GITSYNC_LOG" ] && echo "$sub" >> "$GITSYNC_LOG"
at=${GITSYNC_KILL%%:*}
mode=${GITSYNC_KILL#*:}
[ -n "$GITSYNC_KILL" ] && [ "$sub" = "$at" ] || exec "$GITSYNC_REAL_GIT" "$@"
[ "$mode" = before ] && kill -9 0
"$GITSYNC_REAL_GIT" "$@" &
pid=$!
if [ "$mode" = during ]; then
	sleep 0.00$(( $$ % 3 ))
	kill -9 0
fi
wait $pid
rc=$?
kill -9 0
exit $rc
`
	if err := os.WriteFile(p, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// syncIn runs one sync of h in a process of its own, through the git
// stand-in wrapper, killed at kill ("" for never). It reports whether the
// process was killed, and fails the test if an unkilled sync failed.
func (h *host) syncIn(t testing.TB, remote, wrapper, kill, log string) (killed bool, err error) {
	t.Helper()
	realGit, lerr := exec.LookPath("git")
	if lerr != nil {
		t.Fatal(lerr)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "GITSYNC_TEST_ROLE=sync", "GITSYNC_ROOT="+h.store.Dir(), "GITSYNC_HOST="+h.name,
		"GITSYNC_REMOTE="+remote, "GITSYNC_GIT="+wrapper, "GITSYNC_REAL_GIT="+realGit, "GITSYNC_KILL="+kill, "GITSYNC_LOG="+log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("sync of %s (kill %q): %v\n%s", h.name, kill, err, out)
	}
	return false, nil
}

// gitSteps are the git subcommands a sync runs: a kill at any of them
// must leave nothing that the next sync cannot recover.
// The test fails when a sync runs one not listed, or when one listed is
// never reached.
var gitSteps = []string{"config", "fetch", "for-each-ref", "merge-base", "update-ref",
	"add", "diff-index", "write-tree", "diff-tree", "read-tree", "update-index", "cat-file", "commit-tree", "reset", "push",
	"log", "ls-tree"}

// A sync killed with SIGKILL at each git step (before git starts, while
// it works, after it finished) loses nothing: the next sync on that host
// succeeds at once, says what it recovered, and afterwards both hosts
// hold the same tree with every acknowledged send, mark, archive and
// delete of both in it. One town per way of killing takes every step in
// turn, each kill followed by its recovery.
func TestKilledSyncRecovers(t *testing.T) {
	t.Parallel()
	needGit(t)
	wrapper := gitWrapper(t)
	var mu sync.Mutex
	ran := map[string]bool{}    // every git subcommand the killed syncs ran
	killed := map[string]bool{} // every step a kill reached
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for sub := range ran {
			if !slices.Contains(gitSteps, sub) {
				t.Errorf("a sync runs git %s, which no kill reaches: add it to gitSteps", sub)
			}
		}
		for _, step := range gitSteps {
			if !killed[step] {
				t.Errorf("no sync ran git %s, so no kill reached it: drop it from gitSteps", step)
			}
		}
	})
	for _, mode := range []string{"before", "during", "after"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			tw, a, b := twoHosts(t)
			l := newLedger()
			log := filepath.Join(t.TempDir(), "git.log")
			for _, step := range gitSteps {
				// Work on both hosts, alpha's pushed first, so that beta's
				// killed sync has something to fetch, apply and push.
				l.work(t, a, "mayor", "witness", 1)
				a.syncOK(t)
				l.work(t, b, "witness", "mayor", 1)
				k, err := b.syncIn(t, tw.remote, wrapper, step+":"+mode, log)
				if err != nil {
					t.Fatalf("%s %s: %v", mode, step, err)
				}
				l.work(t, b, "witness", "mayor", 1) // agents go on
				rep := b.syncOK(t)
				if k {
					t.Logf("killed at %s %s; recovered: %v", mode, step, rep.Recovered)
					mu.Lock()
					killed[step] = true
					mu.Unlock()
				}
				for _, leftover := range []string{"rebase-merge", "rebase-apply", "index.lock"} {
					if _, err := os.Stat(filepath.Join(b.store.Dir(), ".git", leftover)); err == nil {
						t.Errorf("%s: after the recovery from a kill %s %s, .git/%s is left behind", b.name, mode, step, leftover)
					}
				}
			}
			a.syncOK(t)
			b.syncOK(t)
			l.check(t, a, b)
			data, _ := os.ReadFile(log)
			mu.Lock()
			defer mu.Unlock()
			for sub := range strings.FieldsSeq(string(data)) {
				ran[sub] = true
			}
		})
	}
}

// A ledger is what the agents were told was done: where each message
// must be, read or not, or that it is gone.
type ledger struct {
	want  map[string]want // as the sender knows it
	homed map[string]want // as the mailbox's home left it (liveOp)
}

type want struct {
	box      maildir.Address
	archived bool
	read     bool
	deleted  bool
}

func newLedger() *ledger { return &ledger{want: map[string]want{}} }

// work has host h's agent me do n rounds of work: send to other, mark
// read, archive, delete, restore its own mail, and a script's drop.
func (l *ledger) work(t testing.TB, h *host, me, other string, n int) {
	t.Helper()
	for i := range n {
		for _, to := range []string{other, me} {
			ms, err := h.store.Send(&maildir.Message{From: me, To: to, Subject: fmt.Sprintf("%s round %d", h.name, i)})
			must(t, err)
			l.want[ms[0].ID] = want{box: agent(to)}
		}
		drop := time.Now().UTC().Format("2006-01-02T15-04-05.000000000Z") + "-script.json"
		write(t, h, "state/mail/"+me+"/"+drop, `{"from":"script","subject":"drop"}`+"\n")
		l.want[drop[:len(drop)-5]] = want{box: agent(me)}
		l.act(t, h, me)
	}
}

// act has me mark, archive, restore and delete some of its own mail.
func (l *ledger) act(t testing.TB, h *host, me string) {
	t.Helper()
	ms, err := h.store.List(agent(me), maildir.ListOptions{All: true})
	must(t, err)
	slices.SortFunc(ms, func(a, b *maildir.Message) int { return rand.IntN(3) - 1 })
	for i, m := range ms {
		w, ok := l.want[m.ID]
		if !ok {
			w = want{box: agent(me)}
		}
		switch i {
		case 0:
			_, err = h.store.MarkRead(agent(me), m.ID)
			w.read = true
		case 1:
			_, err = h.store.Archive(agent(me), []string{m.ID})
			w.archived = true
		case 2:
			err = h.store.Delete(agent(me), m.ID)
			w.deleted = true
		default:
			l.want[m.ID] = w
			continue
		}
		must(t, err)
		l.want[m.ID] = w
	}
}

// check holds every host to the ledger, and to the same tree.
func (l *ledger) check(t testing.TB, hosts ...*host) {
	t.Helper()
	first := stateFiles(t, hosts[0].store)
	for _, h := range hosts {
		got := stateFiles(t, h.store)
		if h != hosts[0] {
			for p := range first {
				if got[p] != first[p] {
					t.Errorf("%s and %s differ at %s", hosts[0].name, h.name, p)
				}
			}
			for p := range got {
				if _, ok := first[p]; !ok {
					t.Errorf("%s has %s, %s does not", h.name, p, hosts[0].name)
				}
			}
		}
		for id, w := range l.want {
			m, err := h.store.Get(w.box, id)
			switch {
			case w.deleted:
				if err == nil {
					t.Errorf("%s: %s was deleted and is back (%s)", h.name, id, m.Path)
				}
			case err != nil:
				t.Errorf("%s: %s lost: %v", h.name, id, err)
			case m.Archived != w.archived:
				t.Errorf("%s: %s archived %v, want %v", h.name, id, m.Archived, w.archived)
			case m.Read != w.read:
				t.Errorf("%s: %s read %v, want %v", h.name, id, m.Read, w.read)
			}
		}
	}
}
