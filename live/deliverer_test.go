package live_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/hook"
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
	rung   chan string
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
	return nil
}

func (d *fakeDoor) Session() (live.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return live.Info{}, live.ErrGone
	}
	return live.Info{Runtime: "fake", Process: live.Self(), Status: d.status}, nil
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
}

func start(t *testing.T, every time.Duration, before func(*maildir.Store), opts ...func(*live.Deliverer)) *fixture {
	t.Helper()
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
	// A session named by pid, not our ancestor, gets the record's token.
	door, err = live.FindQwen(home, self.PID, 0, "childtoken")
	if err != nil {
		t.Fatal(err)
	}
	door.Ring(context.Background(), "x")
	if got := <-lines; got[0]["token"] != strings.Repeat("ab", 32) {
		t.Fatalf("auth with the record's token: %v", got[0])
	}
	os.Remove(filepath.Join(home, "sessions", itoa(self.PID)+".json"))
	if _, err := door.Session(); !errors.Is(err, live.ErrGone) {
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

// A sender's receipt: delivered once a live session was rung, none for an
// agent without one.
func TestWaitDelivered(t *testing.T) {
	f := start(t, time.Hour, nil)
	sent, err := f.s.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nobody"}, Subject: "urgent", Body: "b", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := live.WaitDelivered(ctx, f.s, sent)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Live != live.Delivered || rs[0].At.IsZero() || rs[1].Agent != "nobody" || rs[1].Live != live.NoSession {
		t.Fatalf("receipts: %+v", rs)
	}
	// Under do not disturb a normal message stays held: the wait ends
	// with the timeout, saying why.
	hook.SetDND(f.s, "toast", true, time.Now())
	sent, _ = f.s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "normal", Body: "b"})
	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	rs, err = live.WaitDelivered(ctx, f.s, sent)
	if !errors.Is(err, context.DeadlineExceeded) || rs[0].Live != live.Held {
		t.Fatalf("under dnd: %+v %v", rs, err)
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
