package maildir_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// TestMain lets the test binary double as a sending or claiming process for
// the multi-process and crash tests.
func TestMain(m *testing.M) {
	switch os.Getenv("MAILDIR_TEST_CHILD") {
	case "send":
		childSend()
	case "claim":
		childClaim()
	case "fault":
		childFault()
	case "nth":
		childNth()
	case "torture":
		childTorture()
	case "once":
		childOnce()
	default:
		os.Exit(m.Run())
	}
}

// childSend sends $COUNT messages (forever if 0) from $FROM to $TO in
// $ROOT, printing each id once Send has returned it.
func childSend() {
	s, err := maildir.Open(os.Getenv("ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	n, _ := strconv.Atoi(os.Getenv("COUNT"))
	for i := 0; n == 0 || i < n; i++ {
		sent, err := s.Send(&maildir.Message{From: os.Getenv("FROM"), To: os.Getenv("TO"),
			Subject: fmt.Sprintf("%s #%d", os.Getenv("FROM"), i), Body: strings.Repeat("b", 200)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(sent[0].ID)
	}
	os.Exit(0)
}

func sendProcess(t *testing.T, root, from, to string, count int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=send", "ROOT="+root, "FROM="+from, "TO="+to, "COUNT="+strconv.Itoa(count),
		"GORACE=atexit_sleep_ms=0") // a race-instrumented child would sleep a second at exit
	cmd.Stderr = os.Stderr
	return cmd
}

// checkMailbox asserts that every non-dot entry of the mailbox is a message
// that parses, that want ids are all there, and that there are exactly n
// messages (n < 0: any number). It returns the leftover dot-files.
func checkMailbox(t *testing.T, ts *testStore, agent string, want []string, n int) (temps []string) {
	t.Helper()
	dir := ts.path("state/mail/" + agent)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			temps = append(temps, e.Name())
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := maildir.Parse(data); err != nil {
			t.Errorf("%s does not parse: %v", e.Name(), err)
		}
		have[strings.TrimSuffix(e.Name(), ".json")] = true
	}
	if n >= 0 && len(have) != n {
		t.Errorf("%d messages in %s, want %d", len(have), agent, n)
	}
	for _, id := range want {
		if !have[id] {
			t.Errorf("%s was acknowledged but is missing", id)
		}
	}
	if w := ts.warnings(); len(w) > 0 {
		t.Errorf("warnings: %v", w)
	}
	return temps
}

// renameModes runs test with renameat2's flags, then with the fallbacks
// of file systems that refuse them (link and unlink, the three-rename swap).
func renameModes(t *testing.T, test func(t *testing.T, ts *testStore)) {
	t.Run("renameat2", func(t *testing.T) { test(t, newStore(t)) })
	t.Run("fallback", func(t *testing.T) {
		test(t, newStore(t, durable.WithFallback()))
	})
}

func TestConcurrentSendersGoroutines(t *testing.T) { renameModes(t, concurrentSenders) }

func concurrentSenders(t *testing.T, ts *testStore) {
	const senders, each = 8, 500
	var (
		mu  sync.Mutex
		got []string
		wg  sync.WaitGroup
	)
	for g := range senders {
		wg.Go(func() {
			for i := range each {
				// One Store, one sender: ids cannot clash (Store.stamp makes
				// them unique), so this is about concurrent writers in one
				// folder; TestSameNanosecondSendersNeverOverwrite makes ids
				// clash on purpose.
				sent, err := ts.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprintf("%d/%d", g, i)})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got = append(got, sent[0].ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if temps := checkMailbox(t, ts, "toast", got, senders*each); len(temps) > 0 {
		t.Errorf("temps left behind: %v", temps)
	}
}

func TestConcurrentSenderProcesses(t *testing.T) {
	ts := newStore(t)
	const procs, each = 4, 500
	var (
		cmds []*exec.Cmd
		outs []io.Reader
	)
	for p := range procs {
		cmd := sendProcess(t, ts.dir, "mayor", "toast", each)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_ = p
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	var acked []string
	for i, cmd := range cmds {
		b, _ := io.ReadAll(outs[i])
		if err := cmd.Wait(); err != nil {
			t.Fatalf("sender %d: %v", i, err)
		}
		acked = append(acked, strings.Fields(string(b))...)
	}
	if len(acked) != procs*each {
		t.Fatalf("%d ids acknowledged, want %d", len(acked), procs*each)
	}
	if temps := checkMailbox(t, ts, "toast", acked, procs*each); len(temps) > 0 {
		t.Errorf("temps left behind: %v", temps)
	}
}

// Two senders whose clocks agree to the nanosecond pick the same name;
// neither may overwrite the other.
func TestSameNanosecondSendersNeverOverwrite(t *testing.T) {
	ts := newStore(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const senders, each = 4, 25
	var wg sync.WaitGroup
	for g := range senders {
		s, err := maildir.Open(ts.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Now = func() time.Time { return at }
		wg.Go(func() {
			for i := range each {
				if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprintf("%d/%d", g, i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	msgs, err := ts.List(mbox("toast"), maildir.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	subjects := map[string]bool{}
	suffixed := 0
	for _, m := range msgs {
		subjects[m.Subject] = true
		if strings.HasSuffix(m.ID, "-mayor-2") {
			suffixed++
		}
	}
	if len(subjects) != senders*each {
		t.Fatalf("%d distinct messages survive, want %d", len(subjects), senders*each)
	}
	if suffixed == 0 {
		t.Fatal("no id clash happened: the test did not force one")
	}
}

func TestCrashDuringSend(t *testing.T) {
	ts := newStore(t)
	const kills = 50
	var acked []string
	for k := range kills {
		cmd := sendProcess(t, ts.dir, "mayor", "toast", 0)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(out)
		// Let it deliver a few, then kill it somewhere inside a later send.
		for range 1 + rand.IntN(5) {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("kill %d: %v", k, err)
			}
			acked = append(acked, strings.TrimSpace(line))
		}
		// The child sends in a tight loop: having reported a send, it is now
		// inside the next one, at whatever step the scheduler left it.
		cmd.Process.Signal(syscall.SIGKILL)
		// Whatever it reported completely before dying was acknowledged.
		rest, _ := io.ReadAll(r)
		lines := strings.Split(string(rest), "\n")
		acked = append(acked, lines[:len(lines)-1]...)
		cmd.Wait()
	}
	temps := checkMailbox(t, ts, "toast", acked, -1)
	for _, name := range temps {
		if !strings.HasPrefix(name, ".mailfs-") {
			t.Errorf("leftover %q is not a mailfs temp", name)
		}
	}
	t.Logf("%d acknowledged messages all present; %d temps left by %d kills", len(acked), len(temps), kills)
}

// A mark racing a delete of the same message: once the delete has happened
// the message never comes back.
func TestMarkReadRacingDelete(t *testing.T) { renameModes(t, markRacingDelete) }

func markRacingDelete(t *testing.T, ts *testStore) {
	const rounds, workers = 1000, 4
	var wg sync.WaitGroup
	for w := range workers {
		agent := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			for range rounds / workers {
				m, err := ts.Send(&maildir.Message{From: "a", To: agent, Subject: "race"})
				if err != nil {
					t.Error(err)
					return
				}
				id := m[0].ID
				var markErr, delErr error
				var race sync.WaitGroup
				race.Go(func() { _, markErr = ts.MarkRead(mbox(agent), id) })
				race.Go(func() { delErr = ts.Delete(mbox(agent), id) })
				race.Wait()
				if delErr != nil {
					t.Errorf("delete: %v", delErr)
				}
				if markErr != nil && !errors.Is(markErr, maildir.ErrNotFound) {
					t.Errorf("mark: %v", markErr)
				}
				if _, err := os.Lstat(ts.path(m[0].Path)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s reappeared after its delete", id)
					return
				}
			}
		})
	}
	wg.Wait()
	for w := range workers {
		if ents, _ := os.ReadDir(ts.path(fmt.Sprintf("state/mail/w%d", w))); len(ents) != 0 {
			t.Errorf("w%d holds %d entries after all deletes", w, len(ents))
		}
	}
}

// A mark racing the archive move of the same message: it ends in exactly
// one place, read.
func TestMarkReadRacingArchiveMove(t *testing.T) {
	renameModes(t, func(t *testing.T, ts *testStore) {
		for range 300 {
			m := ts.send(t, "a", "b", "s")
			var wg sync.WaitGroup
			var markErr, archErr error
			wg.Go(func() { _, markErr = ts.MarkRead(mbox("b"), m.ID) })
			wg.Go(func() {
				errs, err := ts.Archive(mbox("b"), []string{m.ID})
				archErr = errors.Join(append(errs, err)...)
			})
			wg.Wait()
			if markErr != nil || archErr != nil {
				t.Fatalf("mark %v, archive %v", markErr, archErr)
			}
			_, inBox := os.Lstat(ts.path(m.Path))
			got, err := ts.Get(mbox("b"), m.ID)
			if inBox == nil || err != nil || !got.Archived || !got.Read {
				t.Fatalf("%s: still in the mailbox %v, got %+v, %v", m.ID, inBox == nil, got, err)
			}
		}
		if _, dots := visible(t, ts, "state/mail/b"); len(dots) != 0 {
			t.Errorf("left %q", dots)
		}
		if _, dots := visible(t, ts, "state/mail/b/archive"); len(dots) != 0 {
			t.Errorf("left %q in the archive", dots)
		}
	})
}
