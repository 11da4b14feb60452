package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

func TestMain(m *testing.M) {
	if os.Getenv("WATCH_TEST_CHILD") == "watch" {
		childWatch()
		return
	}
	os.Exit(m.Run())
}

// childWatch watches $AGENT in $ROOT, printing "ready", then one line per
// event (its id), and "overflow" on stderr when the kernel queue overflowed.
func childWatch() {
	s, err := maildir.Open(os.Getenv("ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := &watch.Watcher{Store: s, Boxes: []maildir.Address{mbox(os.Getenv("AGENT"))}, Warn: func(err error) {
		if strings.Contains(err.Error(), "overflowed") {
			fmt.Fprintln(os.Stderr, "overflow")
		}
	}}
	ch, err := w.Watch(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ready")
	for ev := range ch {
		fmt.Println(ev.ID)
	}
}

// A watcher stopped (SIGSTOP) while more events happen than the kernel
// queues: when it continues, it gets an overflow, rescans, and reports every
// message exactly once.
func TestKernelQueueOverflowLosesNothing(t *testing.T) {
	raw, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skip("no inotify here to overflow")
	}
	limit, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	f := newFixture(t)
	f.send(t, "toast", "make the mailbox")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "WATCH_TEST_CHILD=watch", "ROOT="+f.dir, "AGENT=toast", "GORACE=atexit_sleep_ms=0")
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer // read only after Wait
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the watcher process ended")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no event from the watcher within 10s")
		}
		return ""
	}
	if l := next(); l != "ready" {
		t.Fatalf("child said %q", l)
	}
	next() // the first message, unread at start

	cmd.Process.Signal(syscall.SIGSTOP)
	// Noise the watcher ignores (dot-files), alternating two files so the
	// kernel cannot merge the events, well past the queue's size...
	box := filepath.Join(f.dir, "state/mail/toast")
	noise := [2]*os.File{}
	for i := range noise {
		noise[i], _ = os.Create(filepath.Join(box, fmt.Sprintf(".noise-%d", i)))
		defer noise[i].Close()
	}
	for i := range limit + limit/2 {
		noise[i%2].Write([]byte{'x'})
	}
	// ...and real mail, whose events are lost in the overflow.
	sent := map[string]int{}
	for i := range 100 {
		sent[f.send(t, "toast", fmt.Sprint(i)).ID] = 0
	}
	cmd.Process.Signal(syscall.SIGCONT)

	for range sent {
		id := next()
		if _, ok := sent[id]; !ok {
			t.Fatalf("unexpected event %s", id)
		}
		sent[id]++
	}
	for id, n := range sent {
		if n != 1 {
			t.Errorf("%s reported %d times", id, n)
		}
	}
	m := f.send(t, "toast", "sentinel")
	if id := next(); id != m.ID {
		t.Fatalf("after the rescan got %s, want the sentinel", id)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !strings.Contains(stderr.String(), "overflow") {
		t.Fatalf("the watcher never saw an overflow, so this test proved nothing; stderr: %q", stderr.String())
	}
}
