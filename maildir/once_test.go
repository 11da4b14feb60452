package maildir_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

func onceMessage(from string) *maildir.Message {
	return &maildir.Message{From: from, To: "toast", CC: []string{"nux"}, Subject: "deliver once"}
}

// A second send of the same message with the same key delivers nothing
// and returns the first send's copies; the same key for a different
// message (another sender, another subject) is a conflict and sends
// nothing; a key past the window is a new send; a bad key is refused
// before anything is written.
func TestSendOnce(t *testing.T) {
	ts := newStore(t)
	first, again, err := ts.SendOnce(onceMessage("mayor"), "task 42")
	if err != nil || again || len(first) != 2 {
		t.Fatalf("first send: %v %v %d copies", err, again, len(first))
	}
	second, again, err := ts.SendOnce(onceMessage("mayor"), "task 42")
	if err != nil || !again || len(second) != 2 || second[0].ID != first[0].ID || second[1].ID != first[1].ID {
		t.Fatalf("second send: %v again=%v %v, want the first's copies", err, again, second)
	}
	checkMailbox(t, ts, "toast", []string{first[0].ID}, 1)
	checkMailbox(t, ts, "nux", []string{first[1].ID}, 1)

	// Keys are per store: another sender's message, or another subject,
	// under the same key is a conflict (#54 item 2).
	changed := onceMessage("mayor")
	changed.Subject = "another message"
	for _, m := range []*maildir.Message{onceMessage("witness"), changed} {
		if sent, _, err := ts.SendOnce(m, "task 42"); !errors.Is(err, maildir.ErrKeyConflict) || len(sent) != 0 {
			t.Fatalf("the key reused for %+v: %v %v, want ErrKeyConflict", m, sent, err)
		}
	}

	// Past the window, the same key is a new send.
	ts.Now = func() time.Time { return time.Now().Add(maildir.OnceWindow + time.Hour) }
	later, again, err := ts.SendOnce(onceMessage("mayor"), "task 42")
	ts.Now = nil
	if err != nil || again || later[0].ID == first[0].ID {
		t.Fatalf("past the window: %v again=%v", err, again)
	}

	for _, bad := range []string{"", strings.Repeat("k", maildir.MaxKeyLen+1), "tab\there", " lead", "\xff"} {
		if _, _, err := ts.SendOnce(onceMessage("mayor"), bad); !errors.Is(err, maildir.ErrBadKey) {
			t.Errorf("key %q: %v, want ErrBadKey", bad, err)
		}
	}
	checkMailbox(t, ts, "toast", nil, 2)
}

// Records go by one rule: a finished send's record is removed once it is
// past the window, by PruneOnce (which the sweep runs); a pending one, or
// one within the window, stays.
func TestPruneOnce(t *testing.T) {
	ts := newStore(t)
	if _, _, err := ts.SendOnce(onceMessage("mayor"), "old"); err != nil {
		t.Fatal(err)
	}
	if n, err := ts.PruneOnce(); n != 0 || err != nil {
		t.Fatalf("within the window: pruned %d, %v", n, err)
	}
	ts.Now = func() time.Time { return time.Now().Add(maildir.OnceWindow + time.Hour) }
	if _, _, err := ts.SendOnce(onceMessage("mayor"), "new"); err != nil {
		t.Fatal(err)
	}
	if n, err := ts.PruneOnce(); n != 1 || err != nil {
		t.Fatalf("past the window: pruned %d, %v, want 1", n, err)
	}
	if _, err := os.Lstat(ts.path(maildir.OnceDir + "/" + maildir.OnceName("old"))); err == nil {
		t.Error("the old record is still there")
	}
	if _, err := os.Lstat(ts.path(maildir.OnceDir + "/" + maildir.OnceName("new"))); err != nil {
		t.Errorf("the new record went: %v", err)
	}
}

// A record that cannot be read — empty (a power cut before its data
// reached the disk), garbled, a FIFO, a link, too large — is "pending,
// unknown": the retry sends nothing and says why, rather than perhaps
// sending twice, and never blocks (Why 1).
func TestSendOnceUnreadableRecordRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
	}{
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"garbled", func(p string) error { return os.WriteFile(p, []byte(`{"key":"k","stamp":`), 0o600) }},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"link", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"too large", func(p string) error { return os.WriteFile(p, make([]byte, maildir.MaxOnceRecord+1), 0o600) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := newStore(t)
			ts.Init()
			os.MkdirAll(ts.path(maildir.OnceDir), 0o700)
			if err := c.make(ts.path(maildir.OnceDir + "/" + maildir.OnceName("k"))); err != nil {
				t.Fatal(err)
			}
			sent, _, err := ts.SendOnce(onceMessage("mayor"), "k")
			if !errors.Is(err, maildir.ErrOnceUnknown) || len(sent) != 0 {
				t.Fatalf("%v %v, want ErrOnceUnknown", sent, err)
			}
			if _, err := os.Stat(ts.path("state/mail/toast")); err == nil {
				t.Error("a copy was delivered")
			}
		})
	}
}

// Both of a keyed send's records, the pending one and the done one, are
// made durable through the one durable write: the file fsynced before its
// rename, the folder after (Why 1: the done record was written without
// fsync, and a power cut left it empty).
func TestSendOnceRecordsAreDurable(t *testing.T) {
	ts := newStore(t)
	rec := maildir.OnceDir + "/" + maildir.OnceName("k")
	var synced, dirSynced int
	s := ts.reopen(t, durable.WithFault(func(st durable.Step, path string) error {
		switch {
		case st == durable.StepSync && path == rec:
			synced++
		case st == durable.StepSyncDir && path == maildir.OnceDir:
			dirSynced++
		}
		return nil
	}))
	if _, _, err := s.SendOnce(onceMessage("mayor"), "k"); err != nil {
		t.Fatal(err)
	}
	if synced != 2 || dirSynced < 2 {
		t.Fatalf("the record was fsynced %d times, its folder %d: want both records durable (2, 2)", synced, dirSynced)
	}
}

// A keyed send to a queue cut before its record said done, whose queue
// copy a worker claimed meanwhile: the retry counts the claimed copy as
// delivered and never puts it back in the queue (Why 2: one id then ended
// claimed by two agents).
func TestSendOnceRetryNeverRequeuesAClaimedCopy(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	m := &maildir.Message{From: "mayor", To: "queue:work", CC: []string{"toast"}, Subject: "do it"}
	fail := ts.reopen(t, durable.WithFault(func(st durable.Step, path string) error {
		if st == durable.StepDone && strings.Contains(path, "state/mail/toast/") {
			return syscall.EIO // the second copy fails: the record stays pending
		}
		return nil
	}))
	if _, _, err := fail.SendOnce(m, "job-1"); err == nil {
		t.Fatal("the faulted send succeeded")
	}
	queue := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	claimed, err := ts.Claim(queue, maildir.Address{Kind: maildir.KindAgent, Name: "nux"})
	if err != nil {
		t.Fatal(err)
	}
	sent, again, err := ts.SendOnce(m, "job-1")
	if err != nil || again || len(sent) != 2 {
		t.Fatalf("the retry: %v again=%v %d copies", err, again, len(sent))
	}
	if sent[0].ID != claimed.ID || sent[0].Box.Name != "nux" {
		t.Errorf("the retry reports the queue copy at %s, want %s claimed by nux", sent[0].Path, claimed.ID)
	}
	if _, err := ts.Claim(queue, maildir.Address{Kind: maildir.KindAgent, Name: "slit"}); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("the queue after the retry: %v, want it empty (the claimed copy was queued again)", err)
	}
}

// A keyed send that failed after a copy was delivered, before its record
// said done, is finished by the retry with the same key: the copy is not
// delivered twice.
func TestSendOnceFinishesWhatFailed(t *testing.T) {
	ts := newStore(t)
	fail := ts.reopen(t, durable.WithFault(func(st durable.Step, path string) error {
		if st == durable.StepDone && strings.Contains(path, "state/mail/nux/") {
			return syscall.EIO // the second copy's write fails at its end
		}
		return nil
	}))
	if _, _, err := fail.SendOnce(onceMessage("mayor"), "task-7"); err == nil {
		t.Fatal("the faulted send succeeded")
	}
	sent, again, err := ts.SendOnce(onceMessage("mayor"), "task-7")
	if err != nil || again || len(sent) != 2 {
		t.Fatalf("the retry: %v again=%v %d copies", err, again, len(sent))
	}
	checkMailbox(t, ts, "toast", []string{sent[0].ID}, 1)
	checkMailbox(t, ts, "nux", []string{sent[1].ID}, 1)
	if _, again, _ := ts.SendOnce(onceMessage("mayor"), "task-7"); !again {
		t.Fatal("a third send delivered again")
	}
}

// TestMain's "once" child: a keyed send of $KEY on $ROOT, printing its
// first copy's id; with $KILL set it kills itself with SIGKILL right after
// the first copy is delivered (its folder fsynced), before the send's
// record says done.
func childOnce() {
	var opts []durable.Option
	if os.Getenv("KILL") != "" {
		opts = append(opts, durable.WithFault(func(st durable.Step, path string) error {
			if st == durable.StepSyncDir && strings.HasPrefix(path, "state/mail/toast") {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		}))
	}
	s, err := maildir.OpenWith(os.Getenv("ROOT"), opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sent, _, err := s.SendOnce(onceMessage("mayor"), os.Getenv("KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(sent[0].ID)
	os.Exit(0)
}

func onceProcess(root, key string, kill bool) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=once", "ROOT="+root, "KEY="+key, "GORACE=atexit_sleep_ms=0")
	if kill {
		cmd.Env = append(cmd.Env, "KILL=1")
	}
	cmd.Stderr = os.Stderr
	return cmd
}

// Retries racing each other — 8 processes sending with one key at once —
// deliver exactly once, and every one of them prints that send's id.
func TestSendOnceRacingProcesses(t *testing.T) {
	ts := newStore(t)
	var mu sync.Mutex
	ids := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			out, err := onceProcess(ts.dir, "race", false).Output()
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[strings.TrimSpace(string(out))]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 1 {
		t.Fatalf("the 8 processes printed %v, want one id", ids)
	}
	for id := range ids {
		checkMailbox(t, ts, "toast", []string{id}, 1)
		checkMailbox(t, ts, "nux", nil, 1)
	}
}

// A keyed send killed (SIGKILL) after its first copy was delivered and
// before its record said done: the retry with the same key delivers no
// second copy of what was there, and finishes the rest.
func TestSendOnceKilledThenRetried(t *testing.T) {
	ts := newStore(t)
	err := onceProcess(ts.dir, "killed", true).Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed: %v", err)
	}
	names, _ := visible(t, ts, "state/mail/toast")
	if len(names) != 1 {
		t.Fatalf("before the retry toast holds %v, want the one copy delivered", names)
	}
	out, err := onceProcess(ts.dir, "killed", false).Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(string(out))
	checkMailbox(t, ts, "toast", []string{id}, 1)
	checkMailbox(t, ts, "nux", nil, 1)
	if filepath.Base(names[0]) != id+".json" {
		t.Fatalf("the retry printed %s, not the copy the killed send delivered (%s)", id, names[0])
	}
}
