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

// A second send with the same key from the same sender delivers nothing
// and returns the first send's copies; another sender's key is its own;
// a key past the window is a new send; a bad key is refused before
// anything is written.
func TestSendOnce(t *testing.T) {
	ts := newStore(t)
	first, again, err := ts.SendOnce(onceMessage("mayor"), "task-42")
	if err != nil || again || len(first) != 2 {
		t.Fatalf("first send: %v %v %d copies", err, again, len(first))
	}
	second, again, err := ts.SendOnce(onceMessage("mayor"), "task-42")
	if err != nil || !again || len(second) != 2 || second[0].ID != first[0].ID || second[1].ID != first[1].ID {
		t.Fatalf("second send: %v again=%v %v, want the first's copies", err, again, second)
	}
	checkMailbox(t, ts, "toast", []string{first[0].ID}, 1)
	checkMailbox(t, ts, "nux", []string{first[1].ID}, 1)

	other, again, err := ts.SendOnce(onceMessage("witness"), "task-42")
	if err != nil || again || other[0].ID == first[0].ID {
		t.Fatalf("another sender's key: %v again=%v", err, again)
	}

	// Past the window, the same key is a new send.
	ents, _ := os.ReadDir(ts.path(maildir.OnceDir + "/mayor"))
	for _, e := range ents {
		old := time.Now().Add(-maildir.OnceWindow - time.Hour)
		os.Chtimes(ts.path(maildir.OnceDir+"/mayor/"+e.Name()), old, old)
	}
	later, again, err := ts.SendOnce(onceMessage("mayor"), "task-42")
	if err != nil || again || later[0].ID == first[0].ID {
		t.Fatalf("past the window: %v again=%v", err, again)
	}

	for _, bad := range []string{"", strings.Repeat("k", maildir.MaxKeyLen+1), "tab\there", " lead", "\xff"} {
		if _, _, err := ts.SendOnce(onceMessage("mayor"), bad); !errors.Is(err, maildir.ErrBadKey) {
			t.Errorf("key %q: %v, want ErrBadKey", bad, err)
		}
	}
	checkMailbox(t, ts, "toast", nil, 3)
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
