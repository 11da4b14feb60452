package maildir_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// A fallback move (link, then unlink, under the source folder's lock)
// paused between its link and its unlink while fsck --repair runs: the
// scan sees one file under two names, exactly like a move cut short, and
// its rule keeps the archive's name. Only the folder locks fsck's repairs
// take keep it from removing the mailbox's name while the restore's
// unlink of the archive's is still to come (Why 10: removing every lock
// from fsck's repairs passed the fsck package). The test lets the move
// go on once fsck has finished or is waiting for the lock, as the
// kernel's list of locks shows; then the message must be in the mailbox,
// under one name.
func TestFsckBesideAFallbackMovePausedBetweenLinkAndUnlink(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("needs /proc/locks to see fsck wait for the lock")
	}
	ts := newStore(t)
	id := ts.send(t, "mayor", "toast", "restored while fsck runs").ID
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if errs, err := ts.Archive(toast, []string{id}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	linked, goOn := make(chan struct{}), make(chan struct{})
	mover := ts.reopen(t, durable.WithFallback(), durable.WithFault(func(st durable.Step, path string) error {
		if st == durable.StepLinked && strings.HasSuffix(path, "state/mail/toast/"+id+".json") {
			close(linked)
			<-goOn
		}
		return nil
	}))
	restored := make(chan error, 1)
	go func() {
		errs, err := mover.Restore(toast, []string{id})
		if err == nil {
			err = errs[0]
		}
		restored <- err
	}()
	<-linked
	archive, err := os.Stat(ts.path("state/mail/toast/archive"))
	if err != nil {
		t.Fatal(err)
	}
	ino := archive.Sys().(*syscall.Stat_t).Ino
	checked := make(chan error, 1)
	go func() {
		_, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true})
		checked <- err
	}()
	var fsckErr error
	fsckDone := false
	deadline := time.Now().Add(time.Minute)
	for !fsckDone && !waitsForLock(t, ino) {
		select {
		case fsckErr = <-checked:
			fsckDone = true
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			close(goOn)
			t.Fatal("fsck neither finished nor waited for the folder's lock within a minute")
		}
	}
	close(goOn)
	if err := <-restored; err != nil {
		t.Errorf("the restore: %v", err)
	}
	if !fsckDone {
		fsckErr = <-checked
	}
	if fsckErr != nil {
		t.Fatal(fsckErr)
	}
	var names []string
	for _, rel := range []string{"state/mail/toast/", "state/mail/toast/archive/"} {
		if _, err := os.Lstat(ts.path(rel + id + ".json")); err == nil {
			names = append(names, rel+id+".json")
		}
	}
	if want := fmt.Sprintf("[state/mail/toast/%s.json]", id); fmt.Sprint(names) != want {
		t.Fatalf("the message after the restore and fsck: %v, want %s", names, want)
	}
}

// waitsForLock reports whether some process waits for an flock on the
// inode ino, as /proc/locks lists it ("-> FLOCK ... maj:min:ino").
func waitsForLock(t *testing.T, ino uint64) bool {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 7 && f[1] == "->" && f[2] == "FLOCK" && strings.HasSuffix(f[6], fmt.Sprintf(":%d", ino)) {
			return true
		}
	}
	return false
}

// cutStore is ts reopened on the rename fallbacks with every write that
// reaches step at a path containing part cut there, as a crash would.
func cutStore(t *testing.T, ts *testStore, step durable.Step, part string) *testStore {
	return ts.reopen(t, durable.WithFallback(), durable.WithFault(func(st durable.Step, path string) error {
		if st == step && strings.Contains(path, part) {
			return syscall.EIO
		}
		return nil
	}))
}

// namesOf lists where the message id has a name in toast's mailbox, its
// archive and its quarantine.
func namesOf(ts *testStore, id string) []string {
	var out []string
	for _, rel := range []string{"state/mail/toast/", "state/mail/toast/archive/", "state/mail/toast/" + durable.SwapPrefix, "state/mail/toast/quarantine/" + durable.SwapPrefix} {
		if _, err := os.Lstat(ts.path(rel + id + ".json")); err == nil {
			out = append(out, rel+id+".json")
		}
	}
	return out
}

func repair(t *testing.T, ts *testStore) {
	t.Helper()
	if _, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true}); err != nil {
		t.Fatal(err)
	}
}

// On the fallback path nothing comes back and no acknowledged verb is
// undone (Why 5): a mark cut after its new content took the name leaves
// the old content aside; once the message is deleted or archived, fsck
// quarantines the old copy instead of putting it back. A move cut between
// link and unlink leaves one file under two names; a later delete removes
// both, a later restore or archive settles them its way, and fsck then
// has nothing to finish.
func TestFallbackCutsNeverResurrectNorUndo(t *testing.T) {
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	for _, tc := range []struct {
		name string
		cut  func(ts *testStore, id string) error // on a store cut at a step
		verb func(ts *testStore, id string) error // acknowledged afterwards
		want string                               // where the message ends, "" for nowhere
	}{
		{"a mark cut after the new content, then a delete",
			func(ts *testStore, id string) error { _, err := ts.MarkRead(toast, id); return err },
			func(ts *testStore, id string) error { return ts.Delete(toast, id) },
			""},
		{"a mark cut after the new content, then an archive",
			func(ts *testStore, id string) error { _, err := ts.MarkRead(toast, id); return err },
			func(ts *testStore, id string) error { return first(ts.Archive(toast, []string{id})) },
			"state/mail/toast/archive/%s.json"},
		{"an archive cut between link and unlink, then a delete",
			func(ts *testStore, id string) error { return first(ts.Archive(toast, []string{id})) },
			func(ts *testStore, id string) error { return ts.Delete(toast, id) },
			""},
		{"an archive cut between link and unlink, then a restore",
			func(ts *testStore, id string) error { return first(ts.Archive(toast, []string{id})) },
			func(ts *testStore, id string) error { return first(ts.Restore(toast, []string{id})) },
			"state/mail/toast/%s.json"},
		{"an archive cut between link and unlink, then an archive",
			func(ts *testStore, id string) error { return first(ts.Archive(toast, []string{id})) },
			func(ts *testStore, id string) error { return first(ts.Archive(toast, []string{id})) },
			"state/mail/toast/archive/%s.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newStore(t)
			id := ts.send(t, "mayor", "toast", "work").ID
			step, part := durable.StepLinked, "/archive/"+id
			if strings.HasPrefix(tc.name, "a mark") {
				step, part = durable.StepAside, durable.SwapPrefix+id
			}
			if err := tc.cut(cutStore(t, ts, step, part), id); err == nil {
				t.Fatal("the cut verb succeeded")
			}
			if err := tc.verb(ts, id); err != nil {
				t.Fatalf("the verb after the cut: %v", err)
			}
			repair(t, ts)
			repair(t, ts)
			var live []string
			for _, n := range namesOf(ts, id) {
				if !strings.Contains(n, "/quarantine/") {
					live = append(live, n)
				}
			}
			want := []string{}
			if tc.want != "" {
				want = []string{fmt.Sprintf(tc.want, id)}
			}
			if fmt.Sprint(live) != fmt.Sprint(want) {
				t.Fatalf("after the verb and fsck --repair: %v, want %v", live, want)
			}
		})
	}
}

// A release paused between moving the item back into its queue and
// dropping its claim record there: a scan passing then sees an item
// waiting with a claim record, which looks like a release cut short. fsck
// confirms it under the claimants' lock, which the release holds, and so
// reports nothing once the release is done (Why 8: files that moved during
// a scan beside live agents were findings, exit 1).
func TestFsckBesideAReleaseInProgressFindsNothing(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("needs /proc/locks to see fsck wait for the lock")
	}
	ts := newStore(t)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the item"})
	if err != nil {
		t.Fatal(err)
	}
	id := sent[0].ID
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if _, err := ts.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, toast); err != nil {
		t.Fatal(err)
	}
	// Claimed long ago: past fsck's grace for a queue item with a record.
	old := time.Now().Add(-time.Hour)
	os.Chtimes(ts.path("state/mail/toast/"+id+".json"), old, old)
	inQueue, goOn := make(chan struct{}), make(chan struct{})
	releaser := ts.reopen(t, durable.WithFault(func(st durable.Step, path string) error {
		if st == durable.StepCreateTemp && path == "state/queue/work/"+id+".json" {
			close(inQueue) // moved back, its record not yet dropped
			<-goOn
		}
		return nil
	}))
	released := make(chan error, 1)
	go func() { _, err := releaser.Release(toast, id); released <- err }()
	<-inQueue
	queues, err := os.Stat(ts.path("state/queue"))
	if err != nil {
		t.Fatal(err)
	}
	ino := queues.Sys().(*syscall.Stat_t).Ino
	type result struct {
		found []*fsck.Finding
		err   error
	}
	checked := make(chan result, 1)
	go func() {
		found, err := fsck.Check(context.Background(), ts.dir, fsck.Options{})
		checked <- result{found, err}
	}()
	var res result
	done := false
	deadline := time.Now().Add(time.Minute)
	for !done && !waitsForLock(t, ino) {
		select {
		case res = <-checked:
			done = true
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			close(goOn)
			t.Fatal("fsck neither finished nor waited for the claimants' lock within a minute")
		}
	}
	close(goOn)
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if !done {
		res = <-checked
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	for _, f := range res.found {
		t.Errorf("a finding beside a release in progress: %v", f)
	}
}

// A claim cut between its link and its unlink leaves the item in the
// queue and the claimant's mailbox under one file. A mark of it then is
// refused until fsck --repair finishes the move: rewriting one name would
// leave the queue's as an older copy with the same id, which the next
// claim would hand out again (a second name undoing what the claim did).
func TestAMarkNeverSplitsACutClaim(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the item"})
	if err != nil {
		t.Fatal(err)
	}
	id := sent[0].ID
	queue := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if _, err := cutStore(t, ts, durable.StepLinked, "state/mail/toast/"+id).Claim(queue, toast); err == nil {
		t.Fatal("the cut claim succeeded")
	}
	if _, err := ts.MarkRead(toast, id); !errors.Is(err, maildir.ErrUnfinishedMove) {
		t.Fatalf("a mark of an item under two names: %v, want ErrUnfinishedMove", err)
	}
	repair(t, ts)
	if _, err := ts.MarkRead(toast, id); err != nil {
		t.Fatalf("a mark after fsck --repair: %v", err)
	}
	if m, err := ts.Claim(queue, maildir.Address{Kind: maildir.KindAgent, Name: "nux"}); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("the item was claimed a second time: %+v, %v", m, err)
	}
}
