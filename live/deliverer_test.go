package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// fakeDoor records what it is rung with; fail makes the next rings fail.
type fakeDoor struct {
	mu     sync.Mutex
	rings  []string
	fail   error
	gone   bool
	status string // what the runtime says: busy, idle
	id     string // the session's conversation id, as the runtime says
	rung   chan string
	onRing func(text string) // the session taking a doorbell in: its prompt hook, say
}

func newFakeDoor() *fakeDoor { return &fakeDoor{rung: make(chan string, 100)} }

func (d *fakeDoor) Ring(_ context.Context, text string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return live.ErrGone
	}
	if d.fail != nil {
		return d.fail
	}
	d.rings = append(d.rings, text)
	d.rung <- text
	if d.onRing != nil {
		go d.onRing(text) // as a session does: after the write, in its own time
	}
	return nil
}

func (d *fakeDoor) Session(context.Context) (live.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return live.Info{}, live.ErrGone
	}
	return live.Info{Runtime: "fake", Process: live.Self(), Status: d.status, ID: d.id}, nil
}

func (d *fakeDoor) set(f func(d *fakeDoor)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f(d)
}

type fixture struct {
	s    *maildir.Store
	q    *nudgeq.Queue
	door *fakeDoor
	done chan error
	d    *live.Deliverer
}

func start(t *testing.T, every time.Duration, before func(*maildir.Store), opts ...func(*live.Deliverer)) *fixture {
	t.Helper()
	leakcheck.Check(t)
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	q, err := nudgeq.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(s)
	}
	f := &fixture{s: s, q: q, door: newFakeDoor(), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	d := &live.Deliverer{Store: s, Nudges: q, Agent: "toast", Door: f.door, Every: every, Check: 20 * time.Millisecond, Spacing: 50 * time.Millisecond,
		Hooks: &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q}, StateDir: t.TempDir()}}
	for _, o := range opts {
		o(d)
	}
	f.d = d
	go func() { f.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	// Ready when the record is published.
	until(t, "the deliverer's record", 10*time.Second, func() bool {
		recs, _ := live.Records(s, "toast")
		return len(recs) == 1
	})
	return f
}

func send(t *testing.T, s *maildir.Store, subject string, p maildir.Priority) *maildir.Message {
	t.Helper()
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: subject, Body: "b", Priority: p})
	if err != nil {
		t.Fatal(err)
	}
	return sent[0]
}

func (f *fixture) next(t *testing.T, what string) string {
	t.Helper()
	select {
	case s := <-f.door.rung:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("no doorbell: %s", what)
		return ""
	}
}

// noRing asserts no doorbell rings before the deliverer has certainly
// looked: a later urgent message rings, and it must be the first.
func (f *fixture) firstRingNames(t *testing.T, want string, not ...string) {
	t.Helper()
	got := f.next(t, "the urgent message")
	if !strings.Contains(got, want) {
		t.Fatalf("the first doorbell does not name %s:\n%s", want, got)
	}
	for _, n := range not {
		if strings.Contains(got, n) {
			t.Fatalf("the doorbell names %s, which should not ring:\n%s", n, got)
		}
	}
}

// Unread mail already there when the session started is not rung (the
// session-start hook showed it); mail that lands is, once.
func TestStartIsQuietAndEachMessageRingsOnce(t *testing.T) {
	var old *maildir.Message
	f := start(t, time.Hour, func(s *maildir.Store) { old = send(t, s, "OLD", maildir.Urgent) })
	m := send(t, f.s, "NEW urgent", maildir.Urgent)
	f.firstRingNames(t, m.ID, old.ID)
	m2 := send(t, f.s, "NEXT urgent", maildir.Urgent)
	f.firstRingNames(t, m2.ID, m.ID)
	until(t, "the record of both rings", 10*time.Second, func() bool {
		recs, _ := live.Records(f.s, "toast")
		return len(recs) == 1 && !recs[0].Rung[m.ID].IsZero() && !recs[0].Rung[m2.ID].IsZero() && recs[0].Rings == 2
	})
}

// The first scan tells what the session start showed from what landed
// since by the file's arrival on this machine, not by the sender's
// stamp: a sender an hour ahead whose message was there at the start is
// not rung; a sender an hour behind whose message lands after the start,
// before the watcher's first scan, is. (Each send waits for the kernel's
// file clock to tick past the time before it, so neither lands in the
// start's own tick, where the stamp decides.)
func TestFirstScanGoesByArrivalNotTheSendersClock(t *testing.T) {
	// skewed sends as another host's writer would, its clock off by by,
	// once the file clock has ticked past after.
	skewed := func(s *maildir.Store, after time.Time, by time.Duration, subject string) (*maildir.Message, error) {
		if err := tickPast(filepath.Dir(s.Dir()), after); err != nil {
			return nil, err
		}
		other, err := maildir.Open(s.Dir())
		if err != nil {
			return nil, err
		}
		defer other.Close()
		other.Now = func() time.Time { return time.Now().Add(by) }
		sent, err := other.Send(&maildir.Message{From: "mayor", To: "toast", Subject: subject, Body: "b", Priority: maildir.Urgent})
		if err != nil {
			return nil, err
		}
		return sent[0], nil
	}
	var ahead, behind *maildir.Message
	var behindErr error
	landed := make(chan struct{})
	f := start(t, time.Hour,
		func(s *maildir.Store) {
			var err error
			if ahead, err = skewed(s, time.Time{}, time.Hour, "AHEAD, there at the start"); err != nil {
				t.Fatal(err)
			}
			at, err := s.Arrived(ahead)
			if err != nil {
				t.Fatal(err)
			}
			if err := tickPast(filepath.Dir(s.Dir()), at); err != nil { // so it is not of the start's tick
				t.Fatal(err)
			}
		},
		func(d *live.Deliverer) {
			live.OnStarted(d, func(mark time.Time) { // on the deliverer's goroutine
				defer close(landed)
				behind, behindErr = skewed(d.Store, mark, -time.Hour, "BEHIND, landed since")
			})
		})
	<-landed
	if behindErr != nil {
		t.Fatal(behindErr)
	}
	if !ahead.Timestamp.After(time.Now()) || !behind.Timestamp.Before(time.Now().Add(-30*time.Minute)) {
		t.Fatalf("the senders' clocks are not skewed: %v, %v", ahead.Timestamp, behind.Timestamp)
	}
	// The first doorbell names the message that landed after the start,
	// and not the one the start showed.
	f.firstRingNames(t, behind.ID, ahead.ID)
	now := send(t, f.s, "NOW urgent", maildir.Urgent)
	f.firstRingNames(t, now.ID, ahead.ID)
}

// tickPast waits until a file changed in dir has an inode change time
// after at: the kernel's file clock has ticked past it.
func tickPast(dir string, at time.Time) error {
	probe := filepath.Join(dir, ".tick-probe")
	defer os.Remove(probe)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if err := os.WriteFile(probe, []byte(time.Now().String()), 0o600); err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(probe, &st); err != nil {
			return err
		}
		if time.Unix(st.Ctim.Unix()).After(at) {
			return nil
		}
	}
	return errors.New("the file clock did not tick past " + at.String())
}

// A burst sent as a shell loop sends (a message every 30 ms, every
// priority) rings a handful of doorbells, not one per urgent message, and
// names each message exactly once; the first urgent one still rings at
// once.
func TestABurstRingsAFewDoorbellsEachMessageNamedOnce(t *testing.T) {
	f := start(t, 500*time.Millisecond, nil, func(d *live.Deliverer) { d.Spacing = live.DefaultSpacing })
	prios := []maildir.Priority{maildir.Urgent, maildir.High, maildir.Normal, maildir.Low}
	var ids []string
	for i := range 100 {
		ids = append(ids, send(t, f.s, fmt.Sprint("burst ", i), prios[i%len(prios)]).ID)
		time.Sleep(30 * time.Millisecond) // the pace of a shell loop of sends, not a wait for anything
	}
	if first := f.next(t, "the burst's first urgent message"); !strings.Contains(first, ids[0]) {
		t.Fatalf("the first doorbell does not name the first urgent message:\n%s", first)
	}
	named := func() (all []string) {
		f.door.mu.Lock()
		defer f.door.mu.Unlock()
		return slices.Clone(f.door.rings)
	}
	until(t, "every message of the burst named", 60*time.Second, func() bool {
		text := strings.Join(named(), "\n")
		for _, id := range ids {
			if !strings.Contains(text, id) {
				return false
			}
		}
		return true
	})
	rings := named()
	text := strings.Join(rings, "\n")
	for _, id := range ids {
		if n := strings.Count(text, id); n != 1 {
			t.Errorf("%s named %d times", id, n)
		}
	}
	if len(rings) > 10 {
		t.Fatalf("100 messages rang %d doorbells, want at most 10", len(rings))
	}
	t.Logf("100 messages, %d doorbells", len(rings))
}

// Urgent mail dropped in one go (two files renamed in, as a script drops
// them) rings one doorbell naming both: the first waits the coalescing
// window for the rest.
func TestMailSentTogetherRingsOnce(t *testing.T) {
	f := start(t, time.Hour, nil)
	if _, err := f.s.AddAgent("toast"); err != nil {
		t.Fatal(err)
	}
	box := filepath.Join(f.s.Dir(), filepath.FromSlash(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}.Dir(false)))
	var ids []string
	var files [][2]string
	for i := range 2 {
		at := time.Now().Add(time.Duration(i))
		m := &maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("TOGETHER ", i), Body: "b", Priority: maildir.Urgent, Timestamp: at}
		id := maildir.NewID(at, "mayor")
		tmp := filepath.Join(box, "."+id+".tmp")
		if err := os.WriteFile(tmp, m.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		ids, files = append(ids, id), append(files, [2]string{tmp, filepath.Join(box, id+".json")})
	}
	for _, f := range files { // both land within microseconds
		if err := os.Rename(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	got := f.next(t, "the two urgent messages")
	if !strings.Contains(got, ids[0]) || !strings.Contains(got, ids[1]) {
		t.Fatalf("two urgent messages landing together rang apart; the first doorbell:\n%s", got)
	}
}

// Normal mail waits for the batch interval; urgent mail rings at once and
// takes the waiting normal mail with it.
func TestNormalMailIsBatchedUrgentRingsAtOnce(t *testing.T) {
	f := start(t, time.Hour, nil)
	first := send(t, f.s, "first normal", maildir.Normal)
	f.firstRingNames(t, first.ID) // the first normal mail after a quiet spell rings
	n := send(t, f.s, "batched normal", maildir.Normal)
	until(t, "the normal message to be held as batched", 10*time.Second, func() bool {
		recs, _ := live.Records(f.s, "toast")
		return len(recs) == 1 && recs[0].Held[n.ID] == "batched"
	})
	u := send(t, f.s, "URGENT", maildir.Urgent)
	got := f.next(t, "urgent")
	if !strings.Contains(got, u.ID) || !strings.Contains(got, n.ID) || strings.Index(got, u.ID) > strings.Index(got, n.ID) {
		t.Fatalf("the urgent doorbell should name the urgent message first, then the batched one:\n%s", got)
	}
}

// Do not disturb holds everything but urgent mail; mail read before its
// doorbell is never rung.
func TestDNDAndReadMail(t *testing.T) {
	f := start(t, time.Hour, nil)
	if err := hook.SetDND(f.s, "toast", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := send(t, f.s, "high under dnd", maildir.High)
	until(t, "the high message to be held for dnd", 10*time.Second, func() bool {
		recs, _ := live.Records(f.s, "toast")
		return len(recs) == 1 && recs[0].Held[h.ID] == "dnd"
	})
	u := send(t, f.s, "urgent under dnd", maildir.Urgent)
	f.firstRingNames(t, u.ID, h.ID)
	// Read before dnd ends: it never rings.
	if _, err := f.s.MarkRead(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, h.ID); err != nil {
		t.Fatal(err)
	}
	hook.SetDND(f.s, "toast", false, time.Now())
	u2 := send(t, f.s, "urgent after dnd", maildir.Urgent)
	f.firstRingNames(t, u2.ID, h.ID)
}

// A push that fails is retried until it gets through; nothing is lost.
func TestFailedPushIsRetried(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.door.set(func(d *fakeDoor) { d.fail = errors.New("connection refused") })
	u := send(t, f.s, "urgent while the socket is down", maildir.Urgent)
	until(t, "the message to be held for a retry", 10*time.Second, func() bool {
		recs, _ := live.Records(f.s, "toast")
		return len(recs) == 1 && recs[0].Held[u.ID] == "retrying"
	})
	f.door.set(func(d *fakeDoor) { d.fail = nil })
	f.firstRingNames(t, u.ID)
}

// Urgent nudges ring at once, with their text, and leave the queue.
func TestUrgentNudgeRings(t *testing.T) {
	f := start(t, time.Hour, nil)
	if _, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "witness", Message: "status? now", Priority: nudgeq.Urgent}, time.Hour); err != nil {
		t.Fatal(err)
	}
	got := f.next(t, "the urgent nudge")
	if !strings.Contains(got, "[URGENT] [from witness] status? now") {
		t.Fatalf("doorbell: %s", got)
	}
	until(t, "the nudge to leave the queue", 10*time.Second, func() bool { n, _ := f.q.Len("toast"); return n == 0 })
}

// When the session ends the deliverer ends, and removes its record.
// The record follows the session's status as the runtime reports it, so
// live list says what the session is doing now.
func TestRecordFollowsTheSessionsStatus(t *testing.T) {
	f := start(t, time.Hour, nil)
	for _, status := range []string{"busy", "idle", "busy"} {
		f.door.set(func(d *fakeDoor) { d.status = status })
		until(t, "the record to say "+status, 10*time.Second, func() bool {
			recs, _ := live.Records(f.s, "toast")
			return len(recs) == 1 && recs[0].Session.Status == status
		})
	}
}

// Close stops a running deliverer and returns only once its Run has
// returned (and, with it, every goroutine and lock it held: the leak check
// start sets up says so at the test's end).
func TestCloseStopsARunAndWaits(t *testing.T) {
	f := start(t, time.Hour, nil)
	if err := f.d.Close(); err != nil {
		t.Fatal(err)
	}
	// Close returns once Run's work has ended: its record and lock are
	// gone at that moment, not some time later. (Run's caller, the
	// goroutine below, may see its return value a moment after Close
	// returns; that hand-off is not the deliverer's.)
	left, err := os.ReadDir(filepath.Join(f.s.Dir(), live.Dir, "toast"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("Close returned with %s still there", e.Name())
	}
	select {
	case err := <-f.done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
		f.done <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Close")
	}
	f.d.Close() // a second Close does nothing
}

func TestDelivererEndsWithItsSession(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.door.set(func(d *fakeDoor) { d.gone = true })
	select {
	case err := <-f.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		f.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("the deliverer outlived its session")
	}
	if recs, _ := live.Records(f.s, "toast"); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
	// Nothing at all is left: no record, no lock file.
	left, err := os.ReadDir(filepath.Join(f.s.Dir(), live.Dir, "toast"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("the session left %s behind", e.Name())
	}
}

// The doorbell is bounded: at most MaxLines messages and MaxBytes bytes,
// subjects cut and neutralised.
func TestDoorbellIsBounded(t *testing.T) {
	var mail []*maildir.Message
	for range 30 {
		mail = append(mail, &maildir.Message{ID: "id", From: "mayor", Subject: strings.Repeat("<x>", 500), Priority: maildir.Urgent})
	}
	b := live.Doorbell{Agent: "toast", Mail: mail}
	left, _ := b.Fit()
	text := b.Text()
	if len(b.Mail) > live.MaxLines || len(text) > live.MaxBytes || len(left)+len(b.Mail) != 30 {
		t.Fatalf("%d named, %d left, %d bytes", len(b.Mail), len(left), len(text))
	}
	if strings.Contains(text, "<x>") {
		t.Fatalf("message text not neutralised: %.200s", text)
	}
}

// The Qwen Code door speaks the published protocol to a socket that
// follows it: an auth line with the child token, then a user frame with
// a fresh msgId addressed to the record's sessionId (re-read each time).
func TestQwenDoorFollowsTheProtocol(t *testing.T) {
	home := t.TempDir()
	sock := filepath.Join(t.TempDir(), "q.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan []map[string]any, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			var got []map[string]any
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				var v map[string]any
				json.Unmarshal(sc.Bytes(), &v)
				got = append(got, v)
			}
			c.Close()
			lines <- got
		}
	}()
	self := live.Self()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	procStart := ""
	if len(boot) > 0 {
		procStart = strings.TrimSpace(string(boot)) + ":" + self.Start
	}
	write := func(session string) {
		rec, _ := json.Marshal(map[string]any{"schemaVersion": 1, "pid": self.PID, "procStart": nilIfEmpty(procStart), "sessionId": session, "ipcPath": sock, "ipcToken": strings.Repeat("ab", 32), "kind": "tui"})
		os.MkdirAll(filepath.Join(home, "sessions"), 0o700)
		os.WriteFile(filepath.Join(home, "sessions", itoa(self.PID)+".json"), rec, 0o600)
	}
	write("s-1")
	door, err := live.FindQwen(home, 0, self.PID, "childtoken")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[any]bool{}
	for _, session := range []string{"s-1", "s-2"} { // /clear swaps the id
		write(session)
		if err := door.Ring(context.Background(), "mailfs doorbell for toast: hi"); err != nil {
			t.Fatal(err)
		}
		got := <-lines
		if len(got) != 2 || got[0]["type"] != "auth" || got[0]["token"] != "childtoken" || got[0]["msgV"] != 1.0 {
			t.Fatalf("auth line: %v", got)
		}
		f := got[1]
		msg, _ := f["message"].(map[string]any)
		if f["type"] != "user" || f["msgV"] != 1.0 || f["toSessionId"] != session || msg["role"] != "user" || msg["content"] != "mailfs doorbell for toast: hi" || ids[f["msgId"]] {
			t.Fatalf("user frame: %v", f)
		}
		ids[f["msgId"]] = true
	}
	// A session named by pid, not our ancestor, presents the record's
	// token, which Qwen Code holds for review unless the user accepts
	// peers: held, and nothing written, until the setting says accept.
	door, err = live.FindQwen(home, self.PID, 0, "childtoken")
	if err != nil {
		t.Fatal(err)
	}
	settings := func(v string) {
		os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"agents": {"crossSessionInbound": "`+v+`"}}`), 0o600)
	}
	for _, c := range []struct {
		setting string
		want    error
	}{{"", live.ErrHeld}, {"hold", live.ErrHeld}, {"refuse", live.ErrRefused}, {"sometimes", live.ErrHeld}} {
		settings(c.setting)
		if err := door.Ring(context.Background(), "x"); !errors.Is(err, c.want) {
			t.Fatalf("agents.crossSessionInbound %q, the record's token: %v, want %v", c.setting, err, c.want)
		}
	}
	settings("accept")
	if err := door.Ring(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if got := <-lines; got[0]["token"] != strings.Repeat("ab", 32) {
		t.Fatalf("auth with the record's token: %v (a held ring wrote something)", got[0])
	}
	// Its own process too is refused or held when the user says so.
	door, _ = live.FindQwen(home, 0, self.PID, "childtoken")
	settings("refuse")
	if err := door.Ring(context.Background(), "x"); !errors.Is(err, live.ErrRefused) {
		t.Fatalf("the child token under refuse: %v", err)
	}
	select {
	case got := <-lines:
		t.Fatalf("a refused ring wrote %v", got)
	default:
	}
	os.Remove(filepath.Join(home, "sessions", itoa(self.PID)+".json"))
	if _, err := door.Session(context.Background()); !errors.Is(err, live.ErrGone) {
		t.Fatalf("a session whose record is gone: %v", err)
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonNum(n)) }

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

// promptHook makes f's session a hooked one: each doorbell it takes
// becomes a prompt that its prompt hook (the real hook.Handler, as "mailfs
// hook prompt-submit" runs it) sees.
// promptHook makes the fake session run its prompt hook on each doorbell
// (evidence it took the doorbell in: submitted) and, with answer, its
// model answer the turn (reported as a runtime's plugin reports it, see
// live.Answered: delivered).
func (f *fixture) promptHook(t *testing.T, answer ...bool) {
	h := &hook.Handler{Collector: hook.Collector{Store: f.s, Nudges: f.q}, StateDir: t.TempDir(),
		Doorbells: func(agent string, nonces []string) error { return hook.Confirm(f.s, agent, nonces) }}
	// A ring's hook may still be listing the mailbox when the test
	// ends (its receipt is written part-way through): the test's
	// clean-up waits for it before the root is removed, and later rings
	// find the hook closed.
	var (
		mu     sync.RWMutex
		closed bool
	)
	t.Cleanup(func() { mu.Lock(); closed = true; mu.Unlock() })
	f.door.set(func(d *fakeDoor) {
		d.onRing = func(text string) {
			mu.RLock()
			defer mu.RUnlock()
			if closed {
				return
			}
			if a := h.Handle(context.Background(), agentrt.Claude, hook.PromptSubmit, "toast", hook.Input{Prompt: text}); len(a.Errs) > 0 {
				t.Errorf("the prompt hook: %v", a.Errs)
			}
			if len(answer) > 0 && answer[0] {
				if err := hook.Answered(f.s, "toast", hook.RingNonces("toast", text)); err != nil {
					t.Errorf("the model's answer: %v", err)
				}
			}
		}
	})
}

func waitReceipts(t *testing.T, s *maildir.Store, sent []*maildir.Message, d time.Duration) ([]live.Receipt, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return live.WaitDelivered(ctx, s, sent)
}

// A sender's receipt says delivered only on the evidence rule: the model
// answered a turn whose input held the doorbell. The session's prompt
// hook seeing the doorbell alone is submitted, never delivered (the model
// may never be called). A doorbell written and never taken in is "rung";
// an agent with no session is "none".
func TestWaitDelivered(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.promptHook(t, true)
	sent, err := f.s.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nobody"}, Subject: "urgent", Body: "b", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := waitReceipts(t, f.s, sent, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Live != live.Delivered || rs[0].At.IsZero() || !rs[0].Final || rs[1].Agent != "nobody" || rs[1].Live != live.NoSession || !rs[1].Final {
		t.Fatalf("receipts: %+v", rs)
	}
	if r := liveRecord(f.s, ""); r == nil || len(r.Bells) != 0 || r.Confirmed[sent[0].ID].IsZero() {
		t.Fatalf("the record after the evidence: %+v", r)
	}
	if left, _ := filepath.Glob(filepath.Join(f.s.Dir(), "runtime/live/toast/*.*ed")); len(left) != 0 {
		t.Fatalf("the evidence files were not taken in: %v", left)
	}
	// The prompt hook sees the doorbell; the model never answers (its
	// endpoint is down): submitted, not final, never delivered.
	f.promptHook(t)
	m := send(t, f.s, "submitted only", maildir.Urgent)
	rs, err = waitReceipts(t, f.s, []*maildir.Message{m}, time.Second)
	if !errors.Is(err, context.DeadlineExceeded) || rs[0].Live != live.Submitted || rs[0].Final {
		t.Fatalf("a doorbell the hook saw and the model never answered: %+v %v", rs, err)
	}
	// The session takes the doorbell and its hook never sees it (a
	// runtime that drops it): rung, never delivered.
	f.door.set(func(d *fakeDoor) { d.onRing = nil })
	m = send(t, f.s, "dropped", maildir.Urgent)
	rs, err = waitReceipts(t, f.s, []*maildir.Message{m}, 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || rs[0].Live != live.Rung || rs[0].Final {
		t.Fatalf("an unconfirmed doorbell: %+v %v", rs, err)
	}
	// Under do not disturb a normal message stays held: the wait ends
	// with the timeout, saying why.
	hook.SetDND(f.s, "toast", true, time.Now())
	sent, _ = f.s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "normal", Body: "b"})
	rs, err = waitReceipts(t, f.s, sent, 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) || rs[0].Live != live.Held || rs[0].Why != "dnd" {
		t.Fatalf("under dnd: %+v %v", rs, err)
	}
}

// A doorbell with no evidence is rung again after ConfirmWait with a
// fresh nonce, naming the same message, at most MaxRings doorbells in
// all; then the receipt is final: rung, given up. Evidence for an earlier
// doorbell that arrives late still confirms.
func TestAnUnconfirmedDoorbellRingsAgainABoundedNumberOfTimes(t *testing.T) {
	f := start(t, time.Hour, nil, func(d *live.Deliverer) { d.ConfirmWait, d.MaxRings = 100*time.Millisecond, 3 })
	m := send(t, f.s, "never seen", maildir.Normal) // normal mail: the re-ring does not wait for Every
	f.door.set(func(d *fakeDoor) { d.status = "idle" })
	var nonces []string
	for i := range 3 {
		got := f.next(t, fmt.Sprintf("doorbell %d", i+1))
		if !strings.Contains(got, m.ID) {
			t.Fatalf("doorbell %d does not name the message:\n%s", i+1, got)
		}
		n := hook.RingNonces("toast", got)
		if len(n) != 1 || slices.Contains(nonces, n[0]) {
			t.Fatalf("doorbell %d's nonce %v, earlier %v: want one, fresh", i+1, n, nonces)
		}
		nonces = append(nonces, n[0])
	}
	rs, err := waitReceipts(t, f.s, []*maildir.Message{m}, 10*time.Second)
	if err != nil || rs[0].Live != live.Rung || !rs[0].Final || !strings.Contains(rs[0].Why, "given up") {
		t.Fatalf("after %d unconfirmed doorbells: %+v %v", len(nonces), rs, err)
	}
	select {
	case extra := <-f.door.rung:
		t.Fatalf("a fourth doorbell rang:\n%s", extra)
	case <-time.After(300 * time.Millisecond): // three ConfirmWaits: a fourth would have rung
	}
	// The first doorbell's evidence, late: delivered after all.
	if err := hook.Answered(f.s, "toast", nonces[:1]); err != nil {
		t.Fatal(err)
	}
	until(t, "the late evidence to confirm the message", 10*time.Second, func() bool {
		rs, _ = waitReceipts(t, f.s, []*maildir.Message{m}, 0)
		return rs[0].Live == live.Delivered
	})
}

// A doorbell the runtime shows queued (Claude Code's transcript), or one
// in a session that is busy, is not rung again: the runtime will pass it
// on after the running tool call.
func TestAQueuedDoorbellOrABusySessionIsNotRungAgain(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status string
		queued bool
	}{{"queued", "idle", true}, {"busy", "busy", false}} {
		t.Run(tc.name, func(t *testing.T) {
			door := &confirmingDoor{fakeDoor: newFakeDoor(), queued: tc.queued}
			door.status = tc.status
			f := start(t, time.Hour, nil, func(d *live.Deliverer) { d.ConfirmWait, d.Door = 50*time.Millisecond, door })
			f.door = door.fakeDoor
			m := send(t, f.s, "queued", maildir.Urgent)
			got := f.next(t, "the doorbell")
			select {
			case extra := <-f.door.rung:
				t.Fatalf("rung again while %s:\n%s", tc.name, extra)
			case <-time.After(500 * time.Millisecond): // ten ConfirmWaits
			}
			rs, _ := waitReceipts(t, f.s, []*maildir.Message{m}, 0)
			if want := map[bool]string{true: live.Submitted, false: live.Rung}[tc.queued]; rs[0].Live != want || rs[0].Final {
				t.Fatalf("while %s: %+v, want %s, not final", tc.name, rs, want)
			}
			// The runtime's own record shows it went to the model.
			door.see(hook.RingNonces("toast", got)[0])
			rs, err := waitReceipts(t, f.s, []*maildir.Message{m}, 10*time.Second)
			if err != nil || rs[0].Live != live.Delivered {
				t.Fatalf("after the runtime's evidence: %+v %v", rs, err)
			}
		})
	}
}

// confirmingDoor is a door with records of its own (a Confirmer), as
// Claude Code's transcript is.
type confirmingDoor struct {
	*fakeDoor
	queued bool
	seen   map[string]time.Time
}

func (d *confirmingDoor) see(nonce string) {
	d.set(func(*fakeDoor) {
		if d.seen == nil {
			d.seen = map[string]time.Time{}
		}
		d.seen[nonce] = time.Now()
	})
}

func (d *confirmingDoor) Evidence(_ context.Context, nonces []string) (live.Evidence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ev := live.Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	for _, n := range nonces {
		if at, ok := d.seen[n]; ok {
			ev.Seen[n] = at
		} else if d.queued {
			ev.Queued[n] = true
		}
	}
	return ev, nil
}

// A session that refuses messages from other processes gets no doorbell,
// and the receipt says refused — not final while the session runs: its
// setting is looked at again at each try, and once it allows, the
// doorbell rings and the copy is delivered. Once the session ends,
// refused is final.
func TestARefusingSessionIsReportedRefused(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.door.set(func(d *fakeDoor) { d.fail = fmt.Errorf("%w: crossSessionInbound is \"refuse\"", live.ErrRefused) })
	m := send(t, f.s, "refused", maildir.Urgent)
	var rs []live.Receipt
	until(t, "the receipt to say refused", 10*time.Second, func() bool {
		rs, _ = waitReceipts(t, f.s, []*maildir.Message{m}, 0)
		return rs[0].Live == live.Refused
	})
	if rs[0].Final {
		t.Fatalf("refused is final while the session runs: %+v", rs)
	}
	f.promptHook(t, true)
	f.door.set(func(d *fakeDoor) { d.fail = nil })
	rs, err := waitReceipts(t, f.s, []*maildir.Message{m}, 10*time.Second)
	if err != nil || rs[0].Live != live.Delivered || !rs[0].Final {
		t.Fatalf("after the session allowed it: %+v %v", rs, err)
	}
	f.door.set(func(d *fakeDoor) { d.fail = fmt.Errorf("%w: crossSessionInbound is \"refuse\"", live.ErrRefused) })
	m = send(t, f.s, "refused to the end", maildir.Urgent)
	until(t, "the receipt to say refused", 10*time.Second, func() bool {
		rs, _ = waitReceipts(t, f.s, []*maildir.Message{m}, 0)
		return rs[0].Live == live.Refused
	})
	f.door.set(func(d *fakeDoor) { d.gone = true })
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	f.done <- nil // for the cleanup
	if rs, err := waitReceipts(t, f.s, []*maildir.Message{m}, 10*time.Second); err != nil || rs[0].Live != live.Refused || !rs[0].Final {
		t.Fatalf("refused once the session ended: %+v %v", rs, err)
	}
}

// A second SessionStart of the same session (/clear, /resume, compaction
// start the hook again) finds the first deliverer serving it and leaves at
// once; the first goes on ringing, once per message.
func TestASecondDelivererOfOneSessionLeaves(t *testing.T) {
	f := start(t, time.Hour, nil)
	second := &live.Deliverer{Store: f.s, Nudges: f.q, Agent: "toast", Door: newFakeDoor(), Every: time.Hour,
		Hooks: &hook.Handler{Collector: hook.Collector{Store: f.s, Nudges: f.q}, StateDir: t.TempDir()}}
	done := make(chan error, 1)
	go func() { done <- second.Run(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, live.ErrRunning) {
			t.Fatalf("the second deliverer: %v, want ErrRunning", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second deliverer of one session did not leave")
	}
	m := send(t, f.s, "after the second start", maildir.Urgent)
	if got := f.next(t, "the doorbell"); !strings.Contains(got, m.ID) {
		t.Fatalf("the first deliverer rang %q", got)
	}
}

// When its session ends, a deliverer that rang keeps its record, marked
// ended, so a sender still waiting learns what the session was given: the
// confirmed copy is delivered, the unconfirmed one rung (final), and live
// list no longer shows the deliverer.
func TestAnEndedSessionKeepsItsReceipts(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.promptHook(t, true)
	seen := send(t, f.s, "seen", maildir.Urgent)
	if rs, err := waitReceipts(t, f.s, []*maildir.Message{seen}, 10*time.Second); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("%+v %v", rs, err)
	}
	f.door.set(func(d *fakeDoor) { d.onRing = nil })
	unseen := send(t, f.s, "unseen", maildir.Urgent)
	until(t, "the second doorbell", 10*time.Second, func() bool {
		r := liveRecord(f.s, "")
		return r != nil && !r.Rung[unseen.ID].IsZero()
	})
	f.door.set(func(d *fakeDoor) { d.gone = true })
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	f.done <- nil // for the cleanup
	recs, _ := live.Records(f.s, "toast")
	if len(recs) != 1 || recs[0].Ended.IsZero() || recs[0].Live() {
		t.Fatalf("the records after the session ended: %+v", recs)
	}
	rs, err := waitReceipts(t, f.s, []*maildir.Message{seen, unseen}, 10*time.Second)
	if err != nil || rs[0].Live != live.Delivered || rs[1].Live != live.Rung || !rs[1].Final {
		t.Fatalf("the receipts after the session ended: %+v %v", rs, err)
	}
}

// A deliverer whose session's process exits ends at once, though it would
// not look at the session for a minute: the end is watched (a pidfd on
// Linux), not polled.
func TestADelivererSeesItsSessionEndWithoutLooking(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the pidfd watch is Linux's")
	}
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	proc, err := live.ProcessOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), ".chipset")
	s, _ := maildir.Open(root)
	door := &procDoor{fakeDoor: newFakeDoor(), proc: proc}
	d := &live.Deliverer{Store: s, Agent: "toast", Door: door, Check: time.Minute}
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background()) }()
	until(t, "the deliverer's record", 10*time.Second, func() bool { recs, _ := live.Records(s, "toast"); return len(recs) == 1 })
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // well under the minute between looks
		t.Fatal("the deliverer did not see its session's process end")
	}
}

// procDoor is a session whose process is proc, and which never says it
// ended: only the watch can tell.
type procDoor struct {
	*fakeDoor
	proc live.Process
}

func (d *procDoor) Session(context.Context) (live.Info, error) {
	return live.Info{Runtime: "fake", Process: d.proc}, nil
}

// A long-running deliverer's memory stays flat however much mail passes
// through its session: rounds of urgent mail, each rung, confirmed by the
// session's prompt hook, read and removed. After the first tenth of the
// rounds, the heap (after a collection) may not grow past twice what it
// was plus 4 MB, and the deliverer's record stays small. CI feeds 1,000
// messages; MAILFS_SOAK_EVENTS=1000000 feeds a million (docs/
// performance.md has that run).
func TestDelivererMemoryIsFlat(t *testing.T) {
	events := 1000
	if n, err := strconv.Atoi(os.Getenv("MAILFS_SOAK_EVENTS")); err == nil && n > 0 {
		events = n
	}
	const batch = 50
	f := start(t, time.Hour, nil, func(d *live.Deliverer) { d.Spacing, d.PerMinute = time.Millisecond, 1<<30 })
	f.promptHook(t)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	box := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	var early uint64
	var biggest int
	began := time.Now()
	for r := range events / batch {
		if r == events/batch/10 {
			early = heap()
		}
		waiting := map[string]bool{}
		for i := range batch {
			m := send(t, f.s, "urgent "+strconv.Itoa(r*batch+i), maildir.Urgent)
			waiting[m.ID] = true
		}
		for len(waiting) > 0 {
			got := f.next(t, "round "+strconv.Itoa(r))
			for id := range waiting {
				if strings.Contains(got, id) {
					delete(waiting, id)
				}
			}
		}
		f.door.set(func(d *fakeDoor) { d.rings = nil }) // the fake's own log, not the deliverer's
		msgs, err := f.s.List(box, maildir.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if err := f.s.Delete(box, m.ID); err != nil {
				t.Fatal(err)
			}
		}
		if recs, _ := filepath.Glob(filepath.Join(f.s.Dir(), "runtime/live/toast/*.json")); len(recs) == 1 {
			if st, err := os.Stat(recs[0]); err == nil && int(st.Size()) > biggest {
				biggest = int(st.Size())
			}
		}
	}
	late := heap()
	t.Logf("%d messages in %v: heap %d KB after a tenth, %d KB at the end; the record at most %d KB",
		events, time.Since(began).Round(time.Millisecond), early>>10, late>>10, biggest>>10)
	if late > 2*early+4<<20 {
		t.Errorf("the heap grew from %d KB to %d KB over %d messages", early>>10, late>>10, events)
	}
	if biggest > 512<<10 {
		t.Errorf("the deliverer's record grew to %d KB", biggest>>10)
	}
}

// A deliverer killed before it could mark its end (a runtime that ends its
// children with SIGKILL, a machine under load) leaves its record as it
// last wrote it: what it recorded as confirmed is still delivered, what it
// rang unconfirmed is rung (final, saying the deliverer died), for keptFor
// after its last update; a record older than that answers nothing.
func TestAKilledDeliverersEvidenceStands(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nux"}, Subject: "s", Body: "b", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	toast, nux := sent[0], sent[1]
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	write := func(agent string, updated time.Time, r live.Record) {
		r.Agent, r.Deliverer, r.Updated, r.Started = agent, live.Process{PID: dead.Process.Pid}, updated, updated.Add(-time.Minute)
		r.Session.Runtime, r.Session.Process.PID = "pi", 4242
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "runtime/live", agent)
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, "pi-4242.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC()
	write("toast", now.Add(-time.Minute), live.Record{Confirmed: map[string]time.Time{toast.ID: now.Add(-90 * time.Second)}, Rung: map[string]time.Time{toast.ID: now.Add(-2 * time.Minute)}})
	write("nux", now.Add(-time.Minute), live.Record{Rung: map[string]time.Time{nux.ID: now.Add(-2 * time.Minute)}})
	rs, err := waitReceipts(t, s, sent, 5*time.Second)
	if err != nil || rs[0].Live != live.Delivered || !rs[0].Final || rs[1].Live != live.Rung || !rs[1].Final || !strings.Contains(rs[1].Why, "ended") {
		t.Fatalf("a killed deliverer's receipts: %+v %v", rs, err)
	}
	write("toast", now.Add(-2*time.Hour), live.Record{Confirmed: map[string]time.Time{toast.ID: now.Add(-2 * time.Hour)}})
	if rs, err := waitReceipts(t, s, sent[:1], 5*time.Second); err != nil || rs[0].Live != live.NoSession {
		t.Fatalf("a record past keptFor: %+v %v", rs, err)
	}
}

// A session's deliverer stopped while the session runs (killed; a /clear
// that ends the hooks of the start before) leaves its record for the
// session's next deliverer, which goes on from it: every earlier receipt
// stands (delivered stays delivered, rung stays rung, never "held, not
// yet rung"), and the evidence of a doorbell the first one rang, arriving
// after the second took over, still confirms it.
func TestANewDelivererOfTheSessionKeepsEveryReceipt(t *testing.T) {
	f := start(t, time.Hour, nil)
	f.promptHook(t, true)
	delivered := send(t, f.s, "answered before the kill", maildir.Urgent)
	if rs, err := waitReceipts(t, f.s, []*maildir.Message{delivered}, 10*time.Second); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("%+v %v", rs, err)
	}
	f.door.set(func(d *fakeDoor) { d.onRing = nil })
	rung := send(t, f.s, "rung before the kill", maildir.Urgent)
	bell := f.next(t, "the second doorbell")
	for !strings.Contains(bell, rung.ID) {
		bell = f.next(t, "the second doorbell")
	}
	until(t, "the record to name the second doorbell", 10*time.Second, func() bool {
		r := liveRecord(f.s, "")
		return r != nil && !r.Rung[rung.ID].IsZero()
	})
	first := liveRecord(f.s, "").Started
	f.d.Close()
	<-f.done
	f.done <- nil // for the cleanup
	rs, _ := waitReceipts(t, f.s, []*maildir.Message{delivered, rung}, 0)
	if rs[0].Live != live.Delivered || rs[1].Live != live.Rung || rs[1].Final {
		t.Fatalf("the receipts with no deliverer, the session running: %+v", rs)
	}
	// The session's next deliverer, on the same session.
	second := &live.Deliverer{Store: f.s, Nudges: f.q, Agent: "toast", Door: f.door, Every: time.Hour, Check: 20 * time.Millisecond,
		Hooks: &hook.Handler{Collector: hook.Collector{Store: f.s, Nudges: f.q}, StateDir: t.TempDir()}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- second.Run(ctx) }()
	defer func() { cancel(); <-done }()
	until(t, "the second deliverer to take the record over", 10*time.Second, func() bool {
		r := liveRecord(f.s, "")
		return r != nil && r.Started.After(first) && !r.Rung[rung.ID].IsZero()
	})
	rs, _ = waitReceipts(t, f.s, []*maildir.Message{delivered, rung}, 0)
	if rs[0].Live != live.Delivered || !rs[0].Final || rs[1].Live != live.Rung {
		t.Fatalf("the receipts after the take-over: %+v", rs)
	}
	recs, _ := live.Records(f.s, "toast")
	if len(recs) != 1 {
		t.Fatalf("%d records of one session, want 1", len(recs))
	}
	// The model answers the doorbell the first deliverer rang.
	if err := hook.Answered(f.s, "toast", hook.RingNonces("toast", bell)); err != nil {
		t.Fatal(err)
	}
	if rs, err := waitReceipts(t, f.s, []*maildir.Message{rung}, 10*time.Second); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the first deliverer's doorbell answered after the take-over: %+v %v", rs, err)
	}
}

// A message sent while no session runs answers "none"; once a session
// starts, its deliverer names it in no doorbell (the session-start hook
// shows it), and the answer is final: it never turns into one that waits
// for a doorbell that will not ring.
func TestMailFromBeforeTheSessionAnswersOneFinalState(t *testing.T) {
	var early *maildir.Message
	f := start(t, time.Hour, func(s *maildir.Store) {
		early = send(t, s, "before any session", maildir.Normal)
		if rs, _ := waitReceipts(t, s, []*maildir.Message{early}, 0); rs[0].Live != live.NoSession || !rs[0].Final {
			t.Fatalf("with no session: %+v", rs)
		}
	})
	late := send(t, f.s, "after the start", maildir.Urgent)
	f.firstRingNames(t, late.ID, early.ID)
	rs, _ := waitReceipts(t, f.s, []*maildir.Message{early}, 0)
	if !rs[0].Final || rs[0].Live == live.Delivered {
		t.Fatalf("mail from before the session, with the session running: %+v, want a final answer", rs)
	}
}

// A busy session's hooks and its doorbells name each message once between
// them (#52, item 3): urgent mail the post-tool hook told of while the
// deliverer held it for the spacing is named by no doorbell (its receipt
// says so, final), and mail a doorbell named is not told again by the
// post-tool or stop hooks. Three urgent messages each followed by two
// normal ones, a post-tool hook after each urgent one, a stop at the end:
// nine messages, each named once.
func TestHooksAndDoorbellsNameEachMessageOnce(t *testing.T) {
	state := t.TempDir()
	var f *fixture
	f = start(t, time.Hour, nil, func(d *live.Deliverer) {
		d.Spacing = live.DefaultSpacing // the urgent mail after the first waits, while the hooks run
		d.Hooks.StateDir = state
	})
	// The session's hooks, sharing the deliverer's hook state.
	h := &hook.Handler{Collector: hook.Collector{Store: f.s, Nudges: f.q}, StateDir: state, PostToolEvery: time.Nanosecond,
		Doorbells: func(agent string, nonces []string) error { return hook.Confirm(f.s, agent, nonces) }}
	var (
		mu   sync.Mutex
		told []string // what reached the model: doorbells, and the hooks' notes
	)
	tell := func(s string) { mu.Lock(); told = append(told, s); mu.Unlock() }
	hookRun := func(ev hook.Event, in hook.Input) {
		a := h.Handle(context.Background(), agentrt.Claude, ev, "toast", in)
		if len(a.Errs) > 0 {
			t.Errorf("the %s hook: %v", ev, a.Errs)
		}
		tell(string(a.Output))
	}
	prompts := 0 // the doorbells' prompt hooks that have run
	f.door.set(func(d *fakeDoor) {
		d.onRing = func(text string) { // the doorbell becomes a prompt: its hook runs
			tell(text)
			hookRun(hook.PromptSubmit, hook.Input{Prompt: text})
			mu.Lock()
			prompts++
			mu.Unlock()
		}
	})
	var ids []string
	for i := range 3 {
		u := send(t, f.s, fmt.Sprint("urgent ", i), maildir.Urgent)
		ids = append(ids, u.ID)
		if i == 0 {
			f.firstRingNames(t, u.ID)
		}
		hookRun(hook.PostTool, hook.Input{}) // the busy session's next tool call
		for j := range 2 {
			ids = append(ids, send(t, f.s, fmt.Sprint("normal ", i, j), maildir.Normal).ID)
		}
	}
	text := func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(told, "\n") }
	until(t, "every message named", 30*time.Second, func() bool {
		all := text()
		return !slices.ContainsFunc(ids, func(id string) bool { return !strings.Contains(all, id) })
	})
	hookRun(hook.PostTool, hook.Input{})
	hookRun(hook.Stop, hook.Input{})
	// Every receipt is final or submitted before the session ends: no
	// message waits for a doorbell.
	until(t, "every message rung or told by the hooks", 10*time.Second, func() bool {
		rs, _ := waitReceipts(t, f.s, sentIDs(f.s, ids), 0)
		return !slices.ContainsFunc(rs, func(r live.Receipt) bool { return r.Live != live.Submitted && !r.Final })
	})
	f.door.set(func(d *fakeDoor) { d.gone = true })
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	f.done <- nil // for the cleanup
	until(t, "every doorbell's prompt hook", 10*time.Second, func() bool {
		f.door.mu.Lock()
		rung := len(f.door.rings)
		f.door.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		return prompts == rung
	})
	all := text()
	twice := 0
	for _, id := range ids {
		if n := strings.Count(all, id); n != 1 {
			t.Errorf("%s named %d times", id, n)
			twice += min(n, 2) - 1
		}
	}
	rs, err := waitReceipts(t, f.s, sentIDs(f.s, ids), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if !r.Final || r.Live != live.Submitted && r.Live != live.Held {
			t.Errorf("receipt after the session: %+v", r)
		}
	}
	t.Logf("9 messages: %d named twice; receipts %s", twice, live.Summary(rs))
}

// sentIDs is the agent toast's copies of ids.
func sentIDs(s *maildir.Store, ids []string) []*maildir.Message {
	var out []*maildir.Message
	for _, id := range ids {
		if m, err := s.Get(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, id); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// A conversation replaced in the same session (Codex's /new, Claude
// Code's /clear: the session's id changes): a doorbell the old
// conversation took in and never answered rings again, with a fresh
// nonce, into the new one, and is delivered there; a doorbell the old
// one answered stays delivered and is not rung again.
func TestANewConversationRingsAgainWhatTheOldOneNeverAnswered(t *testing.T) {
	door := &confirmingDoor{fakeDoor: newFakeDoor(), queued: true}
	door.id = "conversation-1"
	f := start(t, time.Hour, nil, func(d *live.Deliverer) { d.Door = door })
	f.door = door.fakeDoor
	answered := send(t, f.s, "answered in the old conversation", maildir.Urgent)
	door.see(hook.RingNonces("toast", f.next(t, "the first doorbell"))[0])
	if rs, err := waitReceipts(t, f.s, []*maildir.Message{answered}, 10*time.Second); err != nil || rs[0].Live != live.Delivered {
		t.Fatalf("the first receipt: %+v %v", rs, err)
	}
	taken := send(t, f.s, "taken in, never answered", maildir.Urgent)
	second := f.next(t, "the second doorbell")
	until(t, "the second doorbell taken in", 10*time.Second, func() bool {
		rs, _ := waitReceipts(t, f.s, []*maildir.Message{taken}, 0)
		return rs[0].Live == live.Submitted
	})
	door.set(func(d *fakeDoor) { d.id = "conversation-2" })
	third := f.next(t, "the doorbell into the new conversation")
	if !strings.Contains(third, taken.ID) || strings.Contains(third, answered.ID) {
		t.Fatalf("the doorbell into the new conversation, want %s only:\n%s", taken.ID, third)
	}
	nonce := hook.RingNonces("toast", third)[0]
	if nonce == hook.RingNonces("toast", second)[0] {
		t.Fatal("rung again with the old nonce")
	}
	door.see(nonce)
	rs, err := waitReceipts(t, f.s, []*maildir.Message{answered, taken}, 10*time.Second)
	if err != nil || rs[0].Live != live.Delivered || rs[1].Live != live.Delivered {
		t.Fatalf("the receipts after the new conversation answered: %+v %v", rs, err)
	}
}
