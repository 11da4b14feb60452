package maildir_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// The work-queue promises of SPEC §8: only what claim took can be
// released; claim and release, killed at any point, leave the item in
// exactly one place (the claimant's mailbox with its record, or waiting in
// the queue); and a move cut short in the link-and-unlink fallback is never
// handed out twice and is repaired by fsck.

func TestReleaseRefusesWhatWasNotClaimed(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateQueue("jobs"); err != nil {
		t.Fatal(err)
	}
	// One item for the queue and a CC copy for toast, as
	// "mailfs send queue:jobs toast" makes them.
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:jobs", CC: []string{"toast"}, Subject: "the job"})
	if err != nil || len(sent) != 2 {
		t.Fatalf("send: %v, %v", sent, err)
	}
	var cc *maildir.Message
	for _, m := range sent {
		if m.Box.String() == "toast" {
			cc = m
		}
	}
	if _, err := ts.Release(mbox("toast"), cc.ID); !errors.Is(err, maildir.ErrNotClaimed) {
		t.Fatalf("release of a CC copy: %v, want ErrNotClaimed", err)
	}
	if waiting, _, _ := ts.Entries(mbox("queue:jobs"), false); len(waiting) != 1 {
		t.Fatalf("%d items in the queue after a refused release, want 1", len(waiting))
	}
	if _, err := ts.Get(mbox("toast"), cc.ID); err != nil {
		t.Fatalf("the CC copy moved: %v", err)
	}
	// One claimant gets the one job; the second finds the queue empty.
	if _, err := ts.Claim(mbox("queue:jobs"), mbox("nux")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Claim(mbox("queue:jobs"), mbox("slit")); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("second claim: %v, want ErrQueueEmpty", err)
	}
}

func TestClaimRecordsAndReleaseClears(t *testing.T) {
	ts := newStore(t)
	ts.CreateQueue("work")
	item := sendTo(t, ts, "queue:work")[0]
	m, err := ts.Claim(mbox("queue:work"), mbox("toast"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Claim == nil || m.Claim.Agent != "toast" || m.Claim.Queue != "queue:work" || m.Claim.At.IsZero() {
		t.Fatalf("claim record %+v", m.Claim)
	}
	raw := ts.read(t, "state/mail/toast/"+item.ID+".json")
	if !strings.Contains(raw, `"claim": {`) || !strings.Contains(raw, `"agent": "toast"`) {
		t.Fatalf("the file does not show the claim:\n%s", raw)
	}
	if _, err := ts.MarkRead(mbox("toast"), item.ID); err != nil {
		t.Fatal(err)
	}
	back, err := ts.Release(mbox("toast"), item.ID)
	if err != nil {
		t.Fatal(err)
	}
	if back.Claim != nil || back.Read || back.Box.String() != "queue:work" {
		t.Fatalf("released %+v", back)
	}
	raw = ts.read(t, "state/queue/work/"+item.ID+".json")
	if strings.Contains(raw, `"claim"`) || !strings.Contains(raw, `"read": false`) {
		t.Fatalf("the released file still shows a claim, or is read:\n%s", raw)
	}
}

// claimOps are the operations the kill tests interrupt. Each setup leaves
// one item, queue:work's, where the operation starts from.
var claimOps = map[string]struct {
	setup func(t *testing.T, s *maildir.Store) string // returns the item's id
	run   func(s *maildir.Store, id string) error
}{
	"claim": {
		setup: func(t *testing.T, s *maildir.Store) string {
			s.CreateQueue("work")
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
			if err != nil {
				t.Fatal(err)
			}
			return sent[0].ID
		},
		run: func(s *maildir.Store, id string) error {
			_, err := s.Claim(mbox("queue:work"), mbox("toast"))
			return err
		},
	},
	"send": { // to queue:work, which the test made
		setup: func(t *testing.T, s *maildir.Store) string { return "" },
		run: func(s *maildir.Store, _ string) error {
			_, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
			return err
		},
	},
	"release": {
		setup: func(t *testing.T, s *maildir.Store) string {
			s.CreateQueue("work")
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(mbox("queue:work"), mbox("toast")); err != nil {
				t.Fatal(err)
			}
			if _, err := s.MarkRead(mbox("toast"), sent[0].ID); err != nil {
				t.Fatal(err)
			}
			return sent[0].ID
		},
		run: func(s *maildir.Store, id string) error {
			_, err := s.Release(mbox("toast"), id)
			return err
		},
	},
	"reassign": { // nux's claim, to toast
		setup: func(t *testing.T, s *maildir.Store) string {
			s.CreateQueue("work")
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Claim(mbox("queue:work"), mbox("nux")); err != nil {
				t.Fatal(err)
			}
			return sent[0].ID
		},
		run: func(s *maildir.Store, id string) error {
			_, err := s.Reassign(mbox("nux"), id, mbox("toast"))
			return err
		},
	},
}

// TestMain's "nth" child: run claim op $OP on item $ID in $ROOT, killing
// itself with SIGKILL at the $N-th fault point (every step of every
// durable write and move it reaches), in fallback mode if $FALLBACK is set.
func childNth() {
	n, _ := strconv.Atoi(os.Getenv("N"))
	calls := 0
	opts := []durable.Option{durable.WithFault(func(durable.Step, string) error {
		if calls++; calls == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return nil
	})}
	if os.Getenv("FALLBACK") != "" {
		opts = append(opts, durable.WithFallback())
	}
	s, err := maildir.OpenWith(os.Getenv("ROOT"), opts...)
	if err != nil {
		os.Exit(1)
	}
	if err := claimOps[os.Getenv("OP")].run(s, os.Getenv("ID")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("done")
	os.Exit(0)
}

func TestClaimAndReleaseKilledAtEveryStep(t *testing.T) {
	for _, mode := range []string{"renameat2", "fallback"} {
		for _, name := range []string{"claim", "release", "reassign"} {
			t.Run(mode+"/"+name, func(t *testing.T) { killEveryStep(t, name, mode == "fallback") })
		}
	}
}

func killEveryStep(t *testing.T, name string, fallback bool) {
	op := claimOps[name]
	// Count the fault points of one uninterrupted run.
	ts := newStore(t)
	id := op.setup(t, ts.Store)
	points := 0
	opts := []durable.Option{durable.WithFault(func(durable.Step, string) error { points++; return nil })}
	if fallback {
		opts = append(opts, durable.WithFallback())
	}
	if err := op.run(ts.reopen(t, opts...).Store, id); err != nil {
		t.Fatal(err)
	}
	if points < 3 {
		t.Fatalf("only %d fault points: the kills would test little", points)
	}
	linked := 0
	for n := 1; n <= points+1; n++ {
		ts := newStore(t)
		id := op.setup(t, ts.Store)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=nth", "ROOT="+ts.dir, "OP="+name, "ID="+id,
			"N="+strconv.Itoa(n), "GORACE=atexit_sleep_ms=0")
		if fallback {
			cmd.Env = append(cmd.Env, "FALLBACK=1")
		}
		out, err := cmd.Output()
		var exit *exec.ExitError
		killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
		if !killed && err != nil {
			t.Fatalf("point %d: child: %v", n, err)
		}
		acked := strings.TrimSpace(string(out)) == "done"
		if killed == acked || (n <= points) != killed {
			t.Fatalf("point %d of %d: killed %v, acknowledged %v", n, points, killed, acked)
		}
		if fallback {
			repairSwaps(t, ts, n)
		}
		if name == "reassign" {
			linked += checkReassigned(t, ts, id, n, acked)
		} else {
			linked += checkOnePlace(t, ts, name, id, n, acked)
		}
	}
	if fallback && linked == 0 {
		t.Fatal("no kill left the item under two names: the fallback's link step was never hit")
	}
}

// repairSwaps: a kill inside the fallback rewrite (after the file was
// linked to its swap name, or after the new content took the name) leaves
// a swap file, which claims pass over (a second name) or step around (an
// older copy) until fsck --repair removes or quarantines it. It runs the
// repair when there is one, and requires every swap file gone from the
// folders after it; the checks that follow see the item as the rewrite
// left it.
func repairSwaps(t *testing.T, ts *testStore, n int) {
	t.Helper()
	swaps := func() (out []string) {
		filepath.WalkDir(ts.path("state"), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() && e.Name() == maildir.QuarantineDir {
				return filepath.SkipDir
			}
			if err == nil && strings.HasPrefix(e.Name(), durable.SwapPrefix) {
				out = append(out, p)
			}
			return nil
		})
		return out
	}
	if len(swaps()) == 0 {
		return
	}
	found, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		if f.Kind == fsck.Swap && !f.Repaired {
			t.Fatalf("point %d: a swap left by the kill was not repaired: %v", n, f)
		}
	}
	if left := swaps(); len(left) != 0 {
		t.Fatalf("point %d: swap files left after fsck --repair: %v", n, left)
	}
	ts.warnings() // what claims said before the repair
}

// checkOnePlace checks the tree after claim or release of item id was killed
// at point n (or finished, if acked), and returns 1 if the kill left one
// file under two names, which only the fallback can.
func checkOnePlace(t *testing.T, ts *testStore, op, id string, n int, acked bool) int {
	t.Helper()
	name := id + ".json"
	inQueue, inBox := ts.exists(t, "state/queue/work/"+name), ts.exists(t, "state/mail/toast/"+name)
	if !inQueue && !inBox {
		t.Fatalf("point %d: the item is in neither place", n)
	}
	if acked && (op == "claim") != inBox {
		t.Fatalf("point %d: %s acknowledged, but the item is in the queue %v, the mailbox %v", n, op, inQueue, inBox)
	}
	if inQueue && inBox {
		qs, _ := os.Stat(ts.path("state/queue/work/" + name))
		bs, _ := os.Stat(ts.path("state/mail/toast/" + name))
		if !os.SameFile(qs, bs) {
			t.Fatalf("point %d: two different files for one item", n)
		}
		// Never handed out twice: a claim passes it over.
		if m, err := ts.Claim(mbox("queue:work"), mbox("nux")); !errors.Is(err, maildir.ErrQueueEmpty) {
			t.Fatalf("point %d: an item under two names was claimed again: %+v, %v", n, m, err)
		}
		if w := ts.warnings(); len(w) != 1 || !errors.Is(w[0], maildir.ErrUnfinishedMove) {
			t.Fatalf("point %d: warnings %v, want one ErrUnfinishedMove", n, w)
		}
		found, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[0].Kind != fsck.Duplicate || !found[0].Repaired {
			t.Fatalf("point %d: fsck found %v, want one repaired duplicate", n, found)
		}
		if ts.exists(t, "state/queue/work/"+name) || !ts.exists(t, "state/mail/toast/"+name) {
			t.Fatalf("point %d: the repair did not leave the item with its claimant alone", n)
		}
		return 1
	}
	if inBox {
		// Still (or now) claimed: with its record, as the claimant saw it.
		m, err := ts.Get(mbox("agent:toast"), id)
		if err != nil || m.Claim == nil || m.Claim.Agent != "toast" {
			t.Fatalf("point %d: the item in the mailbox has no claim record: %+v, %v", n, m, err)
		}
		if op == "release" && !m.Read {
			t.Fatalf("point %d: a release cut short changed the claimed item: it is unread now", n)
		}
		return 0
	}
	// Waiting in the queue: listed as waiting, and the next claimant gets
	// it unread, with its own record.
	if waiting, err := ts.List(mbox("queue:work"), maildir.ListOptions{}); err != nil || len(waiting) != 1 {
		t.Fatalf("point %d: the queue lists %d items, %v", n, len(waiting), err)
	}
	m, err := ts.Claim(mbox("queue:work"), mbox("nux"))
	if err != nil || m.ID != id || m.Read || m.Claim == nil || m.Claim.Agent != "nux" {
		t.Fatalf("point %d: the next claim got %+v, %v", n, m, err)
	}
	return 0
}

// checkReassigned checks the tree after a reassign of item id from nux to
// toast was killed at point n (or finished, if acked): the item is in
// nux's mailbox claimed by nux, waiting in the queue, or in toast's
// mailbox claimed by toast — one of them, or (the fallback's link step
// only) one file under two of those names, which no claim hands out. It
// returns 1 for the latter.
func checkReassigned(t *testing.T, ts *testStore, id string, n int, acked bool) int {
	t.Helper()
	name := id + ".json"
	places := map[string]string{"nux": "state/mail/nux/" + name, "queue": "state/queue/work/" + name, "toast": "state/mail/toast/" + name}
	var in []string
	for _, p := range []string{"nux", "queue", "toast"} {
		if ts.exists(t, places[p]) {
			in = append(in, p)
		}
	}
	switch {
	case len(in) == 0:
		t.Fatalf("point %d: the item is nowhere", n)
	case acked && (len(in) != 1 || in[0] != "toast"):
		t.Fatalf("point %d: reassign acknowledged, but the item is in %v", n, in)
	case len(in) == 2:
		a, _ := os.Stat(ts.path(places[in[0]]))
		b, _ := os.Stat(ts.path(places[in[1]]))
		if !os.SameFile(a, b) {
			t.Fatalf("point %d: two different files for one item, in %v", n, in)
		}
		if m, err := ts.Claim(mbox("queue:work"), mbox("crew")); !errors.Is(err, maildir.ErrQueueEmpty) {
			t.Fatalf("point %d: an item under two names was claimed again: %+v, %v", n, m, err)
		}
		return 1
	case len(in) > 2:
		t.Fatalf("point %d: the item is in %v", n, in)
	}
	switch in[0] {
	case "queue":
		m, err := ts.Claim(mbox("queue:work"), mbox("crew"))
		if err != nil || m.ID != id || m.Read || m.Claim == nil || m.Claim.Agent != "crew" {
			t.Fatalf("point %d: the next claim got %+v, %v", n, m, err)
		}
	default:
		m, err := ts.Get(mbox(in[0]), id)
		if err != nil || m.Claim == nil || m.Claim.Agent != in[0] || m.Read {
			t.Fatalf("point %d: the item in %s's mailbox: %+v, %v", n, in[0], m, err)
		}
	}
	return 0
}

func (ts *testStore) exists(t *testing.T, rel string) bool {
	t.Helper()
	_, err := os.Lstat(ts.path(rel))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return err == nil
}

// An item removed between its claim record and its move into the mailbox
// (a script's rm, a racing tool) is skipped as gone: the claim takes the
// next item instead of failing.
func TestClaimSkipsAnItemRemovedMidClaim(t *testing.T) {
	ts := newStore(t)
	ts.CreateQueue("work")
	first := sendTo(t, ts, "queue:work")[0]
	second := sendTo(t, ts, "queue:work")[0]
	removed := false
	faulty := ts.reopen(t, durable.WithFault(func(s durable.Step, path string) error {
		if s == durable.StepRename && strings.HasPrefix(path, "state/mail/toast/") && !removed {
			removed = true
			// The item vanishes just before the move: the rename's error.
			os.Remove(ts.path("state/queues/work/" + first.ID + ".json"))
			return syscall.ENOENT
		}
		return nil
	}))
	m, err := faulty.Claim(mbox("queue:work"), mbox("toast"))
	if err != nil || !removed || m.ID != second.ID {
		t.Fatalf("claim = %v, %v (removed %v); want the second item", m, err, removed)
	}
}

// Reassign moves a claimed item to another agent with that agent's claim
// record, and refuses what Release refuses, the same agent, and an item
// whose id the new claimant already holds.
func TestReassign(t *testing.T) {
	ts := newStore(t)
	ts.CreateQueue("work")
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
	if err != nil {
		t.Fatal(err)
	}
	id := sent[0].ID
	if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Reassign(mbox("nux"), id, mbox("nux")); !errors.Is(err, maildir.ErrSameClaimant) {
		t.Errorf("to the same agent: %v", err)
	}
	m, err := ts.Reassign(mbox("nux"), id, mbox("toast"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Box != mbox("toast") || m.Claim == nil || m.Claim.Agent != "toast" || m.Claim.Queue != "queue:work" || m.Read {
		t.Fatalf("reassigned: %+v (claim %+v)", m, m.Claim)
	}
	if ts.exists(t, "state/mail/nux/"+id+".json") || ts.exists(t, "state/queue/work/"+id+".json") {
		t.Fatal("the item is still with nux or in the queue")
	}
	if _, err := ts.Reassign(mbox("nux"), id, mbox("toast")); !errors.Is(err, maildir.ErrNotFound) {
		t.Errorf("from the old claimant again: %v", err)
	}
	direct, err := ts.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "not a claim"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Reassign(mbox("toast"), direct[0].ID, mbox("nux")); !errors.Is(err, maildir.ErrNotClaimed) {
		t.Errorf("a message sent directly: %v", err)
	}
	if _, err := ts.Reassign(mbox("toast"), id, mbox("queue:work")); !errors.Is(err, maildir.ErrWrongKind) {
		t.Errorf("to a queue: %v", err)
	}
}
