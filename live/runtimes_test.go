package live_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// What the tests against real agent runtimes share: each works as the
// agent toast, with mail from mayor.

var toast = maildir.Address{Kind: maildir.KindAgent, Name: "toast"}

// sendToast sends toast a message from mayor.
func sendToast(t testing.TB, s *maildir.Store, subject string, p maildir.Priority) *maildir.Message {
	t.Helper()
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: subject, Body: "see " + subject, Priority: p})
	if err != nil {
		t.Fatal(err)
	}
	return sent[0]
}

// stillUnread fails the test unless message id is in toast's mailbox,
// unread: the doorbell is never the copy.
func stillUnread(t testing.TB, s *maildir.Store, id string) {
	t.Helper()
	if got, err := s.Get(toast, id); err != nil || got.Read {
		t.Fatalf("%s is not in the mailbox, unread: %v", id, err)
	}
}

// liveRecord returns the record of toast's running deliverer of runtime
// rt ("" for any), or nil.
func liveRecord(s *maildir.Store, rt string) *live.Record {
	recs, _ := live.Records(s, "toast")
	for _, r := range recs {
		if r.Live() && (rt == "" || r.Session.Runtime == rt) {
			return r
		}
	}
	return nil
}

// endProcessesIn ends, once the session that started them is gone, every
// process still working in dir (its working directory there): a
// runtime's helper processes (Qwen Code's, say) can outlive the tmux
// server for a moment and write into the test's home while the test
// removes it. They get SIGTERM, then SIGKILL after a grace; it returns
// the command lines of those there were. Linux only (it reads /proc);
// elsewhere none.
func endProcessesIn(dir string) []string {
	found := func() []int {
		ents, _ := os.ReadDir("/proc")
		var pids []int
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
			if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	var first []string
	for _, pid := range found() {
		cmd, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		first = append(first, strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	for i, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		pids := found()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(time.Duration(5-4*i) * time.Second)
		for time.Now().Before(deadline) && len(found()) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return first
}

// receiptsOf waits up to d for the copies' receipts (0: looks once); a
// wait that ran out is not an error here, the receipts say where they are.
func receiptsOf(t testing.TB, s *maildir.Store, d time.Duration, sent ...*maildir.Message) []live.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	rs, err := live.WaitDelivered(ctx, s, sent)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	return rs
}

// interactiveCLI returns the path of an agent runtime's CLI for a test
// that runs it interactively in tmux, with mailfs built beside it, or
// skips the test, saying what to install (pkg, from npm).
func interactiveCLI(t testing.TB, name, pkg string) (cli, mailfs string) {
	t.Helper()
	cli, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not on $PATH: install %s (npm) to test mailfs with it", name, pkg)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not on $PATH: install it (apt-get install tmux) to run an interactive session")
	}
	mailfs, err = buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	return cli, mailfs
}
