package nudgeq_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// TestMain lets the test binary double as a drainer process.
func TestMain(m *testing.M) {
	switch os.Getenv("NUDGEQ_TEST_CHILD") {
	case "drain":
		childDrain(false)
	case "claim-and-hang":
		childDrain(true)
	case "enqueue":
		childEnqueue()
	default:
		os.Exit(m.Run())
	}
}

// childDrain drains $AGENT in $ROOT, printing each nudge's id once it is
// claimed. With hang, it then waits to be killed instead of committing.
func childDrain(hang bool) {
	q, err := nudgeq.Open(os.Getenv("ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, err := q.Claim(os.Getenv("AGENT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, n := range b.Nudges {
		fmt.Println(n.ID)
	}
	if hang {
		fmt.Println("claimed")
		select {}
	}
	if err := b.Commit(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	dir   string
	q     *nudgeq.Queue
	clock time.Time
	mu    sync.Mutex
	warns []error
}

func newFixture(t testing.TB, opts ...durable.Option) *fixture {
	t.Helper()
	leakcheck.Check(t)
	f := &fixture{dir: filepath.Join(t.TempDir(), ".chipset"), clock: t0}
	f.reopen(t, opts...)
	return f
}

// reopen opens the queues again, with durable's test seams opts.
func (f *fixture) reopen(t testing.TB, opts ...durable.Option) {
	t.Helper()
	q, err := nudgeq.OpenWith(f.dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	q.Now = func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.clock }
	q.Warn = func(err error) { f.mu.Lock(); f.warns = append(f.warns, err); f.mu.Unlock() }
	t.Cleanup(func() { q.Close() })
	f.q = q
}

func (f *fixture) advance(d time.Duration) { f.mu.Lock(); f.clock = f.clock.Add(d); f.mu.Unlock() }

func (f *fixture) set(t time.Time) { f.mu.Lock(); f.clock = t; f.mu.Unlock() }

func (f *fixture) box(agent string) string { return filepath.Join(f.dir, "runtime", "nudge", agent) }

func (f *fixture) enqueue(t testing.TB, agent, msg string) *nudgeq.Nudge {
	t.Helper()
	n, err := f.q.Enqueue(agent, nudgeq.Nudge{Sender: "mayor", Message: msg}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func messages(ns []*nudgeq.Nudge) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Message)
	}
	return out
}

func files(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestEnqueueWritesTheSpecFileAndDrainIsFIFO(t *testing.T) {
	f := newFixture(t)
	first := f.enqueue(t, "Toast", "check your mail")
	f.advance(time.Second)
	f.enqueue(t, "toast", "status?")
	names := files(t, f.box("toast"))
	if len(names) != 2 || !regexp.MustCompile(`^\d{19}-[0-9a-f]{8}\.json$`).MatchString(names[0]) {
		t.Fatalf("queue holds %q", names)
	}
	if names[0] != first.ID+".json" || !strings.HasPrefix(names[0], fmt.Sprintf("%019d-", t0.UnixNano())) {
		t.Fatalf("first file %q, id %q", names[0], first.ID)
	}
	data, _ := os.ReadFile(filepath.Join(f.box("toast"), names[0]))
	want := `{
  "expires_at": "2026-06-01T12:30:00Z",
  "message": "check your mail",
  "priority": "normal",
  "sender": "mayor",
  "timestamp": "2026-06-01T12:00:00Z"
}
`
	if string(data) != want {
		t.Fatalf("file:\n%s\nwant:\n%s", data, want)
	}
	if n, _ := f.q.Len("toast"); n != 2 {
		t.Fatalf("Len = %d", n)
	}
	peeked, _ := f.q.Peek("toast")
	if n, _ := f.q.Len("toast"); n != 2 || len(peeked) != 2 {
		t.Fatal("Peek claimed something")
	}
	b, err := f.q.Drain("toast")
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(b.Nudges); !slices.Equal(got, []string{"check your mail", "status?"}) {
		t.Fatalf("drained %q", got)
	}
	if left := files(t, f.box("toast")); len(left) != 0 {
		t.Fatalf("left behind %q", left)
	}
	if b, _ := f.q.Drain("toast"); len(b.Nudges) != 0 {
		t.Fatal("a nudge was delivered twice")
	}
}

func TestTTLAndExpiry(t *testing.T) {
	f := newFixture(t)
	normal := f.enqueue(t, "a", "normal")
	urgent, _ := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "urgent", Priority: nudgeq.Urgent}, 0)
	custom, _ := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "custom"}, time.Minute)
	if normal.ExpiresAt.Sub(normal.Timestamp) != 30*time.Minute || urgent.ExpiresAt.Sub(urgent.Timestamp) != 2*time.Hour ||
		custom.ExpiresAt.Sub(custom.Timestamp) != time.Minute {
		t.Fatalf("TTLs: %v %v %v", normal.ExpiresAt, urgent.ExpiresAt, custom.ExpiresAt)
	}
	// One nanosecond before its expiry a nudge is live; at it, it is dropped.
	f.set(custom.ExpiresAt.Add(-time.Nanosecond))
	if p, _ := f.q.Peek("a"); len(p) != 3 {
		t.Fatalf("%d live before expiry", len(p))
	}
	f.set(custom.ExpiresAt)
	b, err := f.q.Drain("a")
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(b.Nudges); !slices.Equal(got, []string{"normal", "urgent"}) {
		t.Fatalf("at the custom expiry drained %q", got)
	}
	if left := files(t, f.box("a")); len(left) != 0 {
		t.Fatalf("the expired nudge was not dropped: %q", left)
	}
	// All expire eventually and are never delivered.
	f.enqueue(t, "a", "late")
	f.advance(31 * time.Minute)
	if b, _ := f.q.Drain("a"); len(b.Nudges) != 0 {
		t.Fatalf("delivered expired %q", messages(b.Nudges))
	}
	// A drainer whose clock is behind the sender's still delivers.
	f.enqueue(t, "a", "from the future")
	f.advance(-24 * time.Hour)
	if b, _ := f.q.Drain("a"); !slices.Equal(messages(b.Nudges), []string{"from the future"}) {
		t.Fatalf("clock in the past drained %q", messages(b.Nudges))
	}
}

func TestQueueFullIsRefusedAndReported(t *testing.T) {
	f := newFixture(t)
	f.q.MaxDepth = 3
	for i := range 3 {
		f.enqueue(t, "a", fmt.Sprint(i))
	}
	for _, sender := range []string{"witness", "refinery"} {
		f.advance(time.Second)
		_, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: sender, Message: "one too many"}, 0)
		var full *nudgeq.FullError
		if !errors.Is(err, nudgeq.ErrFull) || !errors.As(err, &full) || full.Agent != "a" || full.Max != 3 {
			t.Fatalf("got %v, want a FullError for a", err)
		}
	}
	if n, _ := f.q.Len("a"); n != 3 {
		t.Fatalf("a refused nudge was queued: %d", n)
	}
	b, err := f.q.Drain("a")
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Refused; r == nil || r.Count != 2 || r.Sender != "refinery" || !r.At.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("refusals %+v", r)
	}
	if b, _ := f.q.Drain("a"); b.Refused != nil {
		t.Fatal("the refusal note was shown twice")
	}
}

func TestCapHoldsUnderConcurrentEnqueuers(t *testing.T) {
	f := newFixture(t)
	f.q.MaxDepth = 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for range 16 {
		wg.Go(func() {
			for range 10 {
				_, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "x"}, 0)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, nudgeq.ErrFull):
					refused++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	n, _ := f.q.Len("a")
	if n > 50 || n != ok || ok+refused != 160 {
		t.Fatalf("%d queued, %d accepted, %d refused: the cap is 50 and every refusal must be reported", n, ok, refused)
	}
}

func TestBadInputIsRefused(t *testing.T) {
	f := newFixture(t)
	for name, tc := range map[string]struct {
		agent string
		n     nudgeq.Nudge
		want  error
	}{
		"bad agent":     {"../x", nudgeq.Nudge{Sender: "m", Message: "x"}, maildir.ErrInvalidAddress},
		"bad sender":    {"a", nudgeq.Nudge{Sender: "m/../..", Message: "x"}, maildir.ErrInvalidAddress},
		"no sender":     {"a", nudgeq.Nudge{Message: "x"}, nudgeq.ErrInvalid},
		"empty":         {"a", nudgeq.Nudge{Sender: "m"}, nudgeq.ErrInvalid},
		"over 2 KiB":    {"a", nudgeq.Nudge{Sender: "m", Message: strings.Repeat("x", nudgeq.MaxMessage+1)}, nudgeq.ErrInvalid},
		"priority":      {"a", nudgeq.Nudge{Sender: "m", Message: "x", Priority: "high"}, nudgeq.ErrInvalid},
		"invalid UTF-8": {"a", nudgeq.Nudge{Sender: "m", Message: "\xff"}, nudgeq.ErrInvalid},
		"bad mail id":   {"a", nudgeq.Nudge{Sender: "m", Message: "x", MailID: "../../y"}, maildir.ErrInvalidID},
		"exactly 2 KiB": {"a", nudgeq.Nudge{Sender: "m", Message: strings.Repeat("x", nudgeq.MaxMessage)}, nil},
	} {
		if _, err := f.q.Enqueue(tc.agent, tc.n, 0); !errors.Is(err, tc.want) || tc.want == nil && err != nil {
			t.Errorf("%s: got %v, want %v", name, err, tc.want)
		}
	}
	if _, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "x"}, -time.Second); !errors.Is(err, nudgeq.ErrInvalid) {
		t.Errorf("negative ttl: %v", err)
	}
	if n, _ := f.q.Len("a"); n != 1 {
		t.Fatalf("%d queued, want only the 2 KiB one", n)
	}
}

func TestForeignFilesAreSkippedAndKept(t *testing.T) {
	f := newFixture(t)
	f.enqueue(t, "a", "real")
	box := f.box("a")
	junk := map[string]string{
		"0000000000000000001-deadbeef.json":             `{"message": "no sender"}`,
		"0000000000000000002-deadbeef.json":             ``,
		"0000000000000000003-deadbeef.json":             `not json`,
		"notes.txt":                                     `hello`,
		"0000000000000000004-deadbeef.json.claimed.xyz": `{}`,
	}
	for name, content := range junk {
		os.WriteFile(filepath.Join(box, name), []byte(content), 0o600)
	}
	f.advance(time.Hour * 1000) // any orphan of ours would be returned by now
	f.q.OrphanAfter = time.Nanosecond
	b, err := f.q.Drain("a")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Nudges) != 0 {
		t.Fatalf("delivered %q; the real one had expired and the rest are junk", messages(b.Nudges))
	}
	for name, content := range junk {
		got, err := os.ReadFile(filepath.Join(box, name))
		if err != nil || string(got) != content {
			t.Errorf("%s was changed or removed", name)
		}
	}
	if len(f.warns) != len(junk) {
		t.Errorf("%d warnings for %d junk files: %v", len(f.warns), len(junk), f.warns)
	}
}

func TestStaleMailNudgesAreDropped(t *testing.T) {
	f := newFixture(t)
	s, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f.q.Mail = s
	var ids []string
	for _, subj := range []string{"unread", "read", "deleted", "archived unread"} {
		m, err := s.Send(&maildir.Message{From: "m", To: "a", Subject: subj})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m[0].ID)
		if _, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "mail: " + subj, MailID: m[0].ID}, 0); err != nil {
			t.Fatal(err)
		}
	}
	s.MarkRead(mbox("a"), ids[1])
	s.Delete(mbox("a"), ids[2])
	s.Archive(mbox("a"), ids[3:4])
	b, err := f.q.Drain("a")
	if err != nil {
		t.Fatal(err)
	}
	if got := messages(b.Nudges); !slices.Equal(got, []string{"mail: unread"}) {
		t.Fatalf("drained %q", got)
	}
	if left := files(t, f.box("a")); len(left) != 0 {
		t.Fatalf("stale nudges left: %q", left)
	}
}

func TestOrphanedClaimsReturnOnlyAfterTheTimeout(t *testing.T) {
	f := newFixture(t)
	f.enqueue(t, "a", "one")
	b, err := f.q.Claim("a")
	if err != nil || len(b.Nudges) != 1 {
		t.Fatal(b, err)
	}
	b.Close() // the drainer dies without committing
	// The nudge was queued long ago, but claimed just now: not an orphan.
	f.advance(4 * time.Minute)
	if b, _ := f.q.Drain("a"); len(b.Nudges) != 0 {
		t.Fatal("a fresh claim was taken for an orphan")
	}
	f.advance(time.Minute)
	b, err = f.q.Drain("a")
	if err != nil || !slices.Equal(messages(b.Nudges), []string{"one"}) {
		t.Fatalf("after the timeout drained %v, %v", messages(b.Nudges), err)
	}
	if b, _ := f.q.Drain("a"); len(b.Nudges) != 0 {
		t.Fatal("redelivered twice")
	}
}

func TestReleaseReturnsClaims(t *testing.T) {
	f := newFixture(t)
	f.enqueue(t, "a", "one")
	b, _ := f.q.Claim("a")
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if b, _ := f.q.Drain("a"); len(b.Nudges) != 1 {
		t.Fatal("a released nudge did not come back at once")
	}
}

// putNudges lays out n nudges for agent as another program could, in the
// format of SPEC §6, messages "0" to "n-1", and returns their ids. (Queuing
// 5,000 through Enqueue would count the queue 5,000 times; the tests that
// use this are about drainers.)
func putNudges(t testing.TB, f *fixture, agent string, n int, at time.Time) map[string]string {
	t.Helper()
	box := f.box(agent)
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("%019d-%08x", at.UnixNano()+int64(i), i)
		data := fmt.Sprintf("{\n  \"expires_at\": %q,\n  \"message\": \"%d\",\n  \"priority\": \"normal\",\n  \"sender\": \"mayor\",\n  \"timestamp\": %q\n}\n",
			at.Add(time.Hour).Format(time.RFC3339Nano), i, at.Format(time.RFC3339Nano))
		if err := os.WriteFile(filepath.Join(box, id+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		ids[id] = fmt.Sprint(i)
	}
	return ids
}

func TestConcurrentDrainersGoroutines(t *testing.T) {
	t.Run("renameat2", func(t *testing.T) { concurrentDrainers(t, newFixture(t)) })
	t.Run("fallback", func(t *testing.T) {
		f := newFixture(t, durable.WithFallback()) // link and unlink, as where renameat2's flags are refused
		concurrentDrainers(t, f)
	})
}

func concurrentDrainers(t *testing.T, f *fixture) {
	putNudges(t, f, "a", 5000, t0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]int{}
	for range 8 {
		wg.Go(func() {
			for {
				b, err := f.q.Drain("a")
				if err != nil {
					t.Error(err)
					return
				}
				if len(b.Nudges) == 0 {
					if n, _ := f.q.Len("a"); n == 0 {
						return
					}
				}
				mu.Lock()
				for _, n := range b.Nudges {
					seen[n.Message]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	checkOnce(t, seen, 5000)
}

func checkOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	for i := range n {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("nudge %d delivered %d times", i, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct nudges delivered, want %d", len(seen), n)
	}
}

func drainer(t *testing.T, f *fixture, mode string) (*exec.Cmd, io.Reader) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NUDGEQ_TEST_CHILD="+mode, "ROOT="+f.dir, "AGENT=a", "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

func TestConcurrentDrainerProcesses(t *testing.T) {
	f := newFixture(t)
	byID := putNudges(t, f, "a", 5000, time.Now()) // the children drain with the real clock
	seen := map[string]int{}
	for round := 0; ; round++ {
		var cmds []*exec.Cmd
		var outs []io.Reader
		for range 4 {
			cmd, out := drainer(t, f, "drain")
			cmds, outs = append(cmds, cmd), append(outs, out)
		}
		got := 0
		for i, cmd := range cmds {
			b, _ := io.ReadAll(outs[i])
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			for _, id := range strings.Fields(string(b)) {
				seen[byID[id]]++
				got++
			}
		}
		if got == 0 || round > 20 {
			break
		}
	}
	checkOnce(t, seen, 5000)
}

// A drainer killed after claiming: its claims come back after the orphan
// timeout and are delivered once more; none is lost.
func TestKilledDrainerLosesNothing(t *testing.T) {
	f := newFixture(t)
	f.set(time.Now()) // the child drains with the real clock
	for i := range 20 {
		f.enqueue(t, "a", fmt.Sprint(i))
	}
	cmd, out := drainer(t, f, "claim-and-hang")
	r := bufio.NewScanner(out)
	claimed := 0
	for r.Scan() && r.Text() != "claimed" {
		claimed++
	}
	if claimed != 20 {
		t.Fatalf("the child claimed %d of 20", claimed)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if b, _ := f.q.Drain("a"); len(b.Nudges) != 0 {
		t.Fatal("claims were taken back before the orphan timeout")
	}
	f.q.OrphanAfter = time.Millisecond
	f.advance(time.Second)
	b, err := f.q.Drain("a")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, n := range b.Nudges {
		seen[n.Message]++
	}
	checkOnce(t, seen, 20)
	if left := files(t, f.box("a")); len(left) != 0 {
		t.Fatalf("left behind: %q", left)
	}
}

// Announce nudges the recipient of each delivered copy, urgent for urgent
// mail, naming the message; a queue's copy has no one to nudge.
func TestAnnounce(t *testing.T) {
	f := newFixture(t)
	s, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.CreateQueue("work")
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"queue:work"}, Subject: "WORK gt-1", Priority: maildir.Urgent})
	if err != nil || len(sent) != 2 {
		t.Fatalf("send: %v, %v", sent, err)
	}
	if errs := f.q.Announce(sent); len(errs) != 0 {
		t.Fatal(errs)
	}
	b, err := f.q.Drain("toast")
	if err != nil || len(b.Nudges) != 1 {
		t.Fatalf("drained %v, %v; want one nudge", b, err)
	}
	n := b.Nudges[0]
	if n.Priority != nudgeq.Urgent || n.MailID != sent[0].ID || n.Sender != "mayor" || !strings.Contains(n.Message, "WORK gt-1") {
		t.Fatalf("nudge %+v", n)
	}
	if names, _ := os.ReadDir(filepath.Join(f.dir, "runtime", "nudge")); len(names) != 1 {
		t.Fatalf("nudge queues %v: only toast's should exist", names)
	}
}
