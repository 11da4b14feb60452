package maildir_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/internal/durable"

	"github.com/mailfs/mailfs/maildir"
)

// The largest message Send accepts can be claimed (by an agent with a long
// name, through a queue with a long name), marked, released and read for
// ever after; a little more is refused, with nothing written.
func TestWhatSendAcceptsStaysReadable(t *testing.T) {
	ts := newStore(t)
	queue := "q" + strings.Repeat("u", 60)
	agent := strings.Repeat("a", 31) + "." + strings.Repeat("b", 32) // the longest name
	ts.CreateQueue(queue)
	// Find the largest body that fits, by the error's own arithmetic.
	body := strings.Repeat("x", maildir.MaxSize)
	var sent []*maildir.Message
	var err error
	for range 5 {
		if sent, err = ts.Send(&maildir.Message{From: "mayor", To: "queue:" + queue, Subject: "big", Body: body}); !errors.Is(err, maildir.ErrTooLarge) {
			break
		}
		if n := countFiles(t, ts.path("state/queue/"+queue)); n != 0 {
			t.Fatalf("a refused send left %d files", n)
		}
		var size int
		fmt.Sscanf(err.Error()[strings.Index(err.Error(), "would be ")+len("would be "):], "%d", &size)
		body = body[:len(body)-(size-(maildir.MaxSize-maildir.EditRoom))]
	}
	if err != nil {
		t.Fatalf("the largest body: %v", err)
	}
	// The send time's digits vary the file by a few bytes (RFC 3339 drops
	// trailing zeros); 64 more bytes are past the limit whatever the time.
	if _, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:" + queue, Subject: "big", Body: body + strings.Repeat("x", 64)}); !errors.Is(err, maildir.ErrTooLarge) {
		t.Fatalf("64 bytes past the limit: %v, want ErrTooLarge", err)
	}
	id := sent[0].ID
	box := mbox(agent)
	for i := range 3 {
		m, err := ts.Claim(mbox("queue:"+queue), box)
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		for _, op := range []func(maildir.Address, string) (*maildir.Message, error){ts.MarkRead, ts.MarkUnread, ts.MarkRead} {
			if _, err := op(box, m.ID); err != nil {
				t.Fatalf("mark: %v", err)
			}
		}
		got, err := ts.Get(box, id)
		if err != nil || got.Body != body || got.Claim == nil {
			t.Fatalf("the claimed item cannot be read whole: %v", err)
		}
		if _, err := ts.Release(box, id); err != nil {
			t.Fatalf("release %d: %v", i, err)
		}
	}
	if got, err := ts.Get(mbox("queue:"+queue), id); err != nil || got.Body != body {
		t.Fatalf("the released item cannot be read whole: %v", err)
	}
}

// A script's compact file near the limit, with many fields, would pass
// MaxSize once indented: a mark writes it compact instead, and it stays
// readable and marked.
func TestAnEditNeverPushesAFilePastTheLimit(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "mayor", "bob", "first") // makes the mailbox
	var b strings.Builder
	b.WriteString(`{"body":"x","from":"s","priority":"normal","read":false,"subject":"many fields","timestamp":"2026-11-25T10:00:00Z","to":"bob","type":"message"`)
	for i := 0; b.Len() < maildir.MaxSize-200; i++ {
		fmt.Fprintf(&b, `,"k%06d":%d`, i, i)
	}
	b.WriteString("}")
	const id = "2026-11-25T10-00-00Z-s"
	ts.write(t, "state/mail/bob/"+id+".json", b.String())
	for _, op := range []func(maildir.Address, string) (*maildir.Message, error){ts.MarkRead, ts.MarkUnread, ts.MarkRead} {
		if _, err := op(mbox("bob"), id); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(ts.path("state/mail/bob/" + id + ".json"))
		if err != nil || st.Size() > maildir.MaxSize {
			t.Fatalf("the marked file is %d bytes, past %d: %v", st.Size(), maildir.MaxSize, err)
		}
	}
	got, err := ts.Get(mbox("bob"), id)
	if err != nil || !got.Read || got.Subject != "many fields" {
		t.Fatalf("after the marks: %+v, %v", got, err)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			n++
		}
	}
	return n
}

// For random sizes up to the send limit, every message Send accepted stays
// readable, whole, and within MaxSize after every verb that rewrites it:
// claim (by agents of every name length), mark read and unread, release.
func TestEveryAcceptedSizeSurvivesEveryRewrite(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ts := newStore(t)
	ts.CreateQueue("work")
	q := mbox("queue:work")
	for i := range 24 {
		var size int
		switch i % 3 {
		case 0: // near the limit, where it matters
			size = maildir.MaxSize - maildir.EditRoom - 400 - rng.IntN(2000)
		case 1:
			size = rng.IntN(maildir.MaxSize)
		default:
			size = rng.IntN(4096)
		}
		// Bodies that JSON escapes grow: quotes, backslashes, control
		// characters, non-ASCII.
		pieces := []string{"x", `"`, `\`, "\n", "é", "\u2028", "<"}
		var b strings.Builder
		for b.Len() < size {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		sent, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: fmt.Sprint("item ", i), Body: b.String()})
		if errors.Is(err, maildir.ErrTooLarge) {
			continue // refused whole: nothing to keep readable
		}
		if err != nil {
			t.Fatal(err)
		}
		id, body := sent[0].ID, sent[0].Body
		agent := mbox(strings.Repeat("a", 1+rng.IntN(64)))
		check := func(box maildir.Address, after string) {
			t.Helper()
			got, err := ts.Get(box, id)
			if err != nil || got.Body != body {
				t.Fatalf("item %d (%d bytes of body) after %s: unreadable or changed: %v", i, len(body), after, err)
			}
			if st, err := os.Stat(ts.path(got.Path)); err != nil || st.Size() > maildir.MaxSize {
				t.Fatalf("item %d after %s: the file is past MaxSize: %v", i, after, err)
			}
		}
		m, err := ts.Claim(q, agent)
		if err != nil || m.ID != id {
			t.Fatalf("claim of item %d: %v", i, err)
		}
		check(agent, "claim")
		for _, step := range []struct {
			name string
			op   func(maildir.Address, string) (*maildir.Message, error)
		}{{"mark-read", ts.MarkRead}, {"mark-unread", ts.MarkUnread}, {"mark-read", ts.MarkRead}} {
			if _, err := step.op(agent, id); err != nil {
				t.Fatalf("%s of item %d: %v", step.name, i, err)
			}
			check(agent, step.name)
		}
		if _, err := ts.Release(agent, id); err != nil {
			t.Fatalf("release of item %d: %v", i, err)
		}
		check(q, "release")
		// Claimed again, for good: the queue is left empty for the next.
		if _, err := ts.Claim(q, agent); err != nil {
			t.Fatalf("second claim of item %d: %v", i, err)
		}
		check(agent, "a second claim")
	}
}

// thread KEY for a key that is no message's id (a thread a sender named)
// follows the thread index as an id does: once the indexes are built, it
// lists no folder, however many there are; a prefix is resolved only when
// no message belongs to such a thread.
func TestThreadByKeyListsNoFolder(t *testing.T) {
	var listed atomic.Int64
	dir := filepath.Join(t.TempDir(), ".chipset")
	ts := openStore(t, dir, durable.WithListHook(func(string) { listed.Add(1) }))
	maildir.SetRacyWindow(ts.Store, -1) // trust a fresh index on its stamp
	for i := range 40 {
		agent := fmt.Sprintf("polecat-%02d", i)
		for j := range 3 {
			if _, err := ts.Send(&maildir.Message{From: "mayor", To: agent, Subject: fmt.Sprint("work ", j), Body: "b"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, to := range []string{"polecat-03", "polecat-17", "polecat-31"} {
		if _, err := ts.Send(&maildir.Message{From: "mayor", To: to, Subject: "the plan", Body: "b", Thread: "convoy-7"}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ts.Thread("convoy-7"); err != nil || len(got) != 3 {
		t.Fatalf("thread convoy-7: %d messages, %v; want 3", len(got), err)
	}
	listed.Store(0)
	got, err := ts.Thread("convoy-7")
	if err != nil || len(got) != 3 {
		t.Fatalf("thread convoy-7 again: %d messages, %v; want 3", len(got), err)
	}
	// The list of mailboxes, queues and channels: 3; never one per folder.
	if n := listed.Load(); n > 3 {
		t.Fatalf("thread KEY listed %d folders with every index fresh; want the 3 lists of folders", n)
	}
	// A prefix of an id still resolves, when no thread has that key.
	first := got[0].ID
	if th, err := ts.Thread(first[:len(first)-3]); err != nil || len(th) != 3 {
		t.Fatalf("thread by a prefix of %s: %d, %v", first, len(th), err)
	}
}

// On a file system without renameat2's flags, an older copy a cut-short
// rewrite left aside (.mailfs-swap.NAME) makes a claim pass that item over,
// with a warning naming it, instead of failing every claim on the queue;
// after fsck --repair the item is claimed, once.
func TestFallbackSwapLeftoverIsPassedOver(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	ts := openStore(t, dir, durable.WithFallback())
	ts.CreateQueue("work")
	first := ts.send(t, "mayor", "queue:work", "first")
	second := ts.send(t, "mayor", "queue:work", "second")
	item := ts.path("state/queue/work/" + first.ID + ".json")
	data, _ := os.ReadFile(item)
	if err := os.WriteFile(ts.path("state/queue/work/"+durable.SwapPrefix+first.ID+".json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := ts.Claim(mbox("queue:work"), mbox("toast"))
	if err != nil || m.ID != second.ID {
		t.Fatalf("claim with a leftover aside: %v (%v); want the next item", err, m)
	}
	if w := ts.warnings(); !slices.ContainsFunc(w, func(e error) bool {
		return strings.Contains(e.Error(), first.ID) && errors.Is(e, maildir.ErrUnfinishedMove)
	}) {
		t.Fatalf("the passed-over item was not named: %v", w)
	}
	if _, err := fsck.Check(context.Background(), dir, fsck.Options{Repair: true}); err != nil {
		t.Fatal(err)
	}
	if m, err := ts.Claim(mbox("queue:work"), mbox("toast")); err != nil || m.ID != first.ID {
		t.Fatalf("claim after fsck --repair: %v (%v)", err, m)
	}
	if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("a third claim: %v, want ErrQueueEmpty", err)
	}
}

// A claim holds the queue's claim lock from its listing to the cursor it
// leaves: a release that comes while a claim is moving its item waits for
// the claim, so the stamp the claim leaves never hides the released item,
// and the next claim takes it (it is the oldest).
func TestClaimHoldsTheQueueLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	var armed atomic.Bool
	var once sync.Once
	released := make(chan error, 1)
	var other *maildir.Store
	var back string
	ts := openStore(t, dir, durable.WithFault(func(step durable.Step, path string) error {
		if step == durable.StepSyncDir && strings.HasSuffix(path, "state/mail/toast") && armed.Load() {
			once.Do(func() {
				// The claim has moved its item and not yet left its
				// cursor: a release now must wait for it.
				go func() { _, err := other.Release(mbox("nux"), back); released <- err }()
				select {
				case err := <-released:
					released <- err // it landed inside the claim: the lock is gone
				case <-time.After(300 * time.Millisecond):
				}
			})
		}
		return nil
	}))
	maildir.SetRacyWindow(ts.Store, -1)
	if fine, err := maildir.FineClock(ts.Store); err != nil || !fine {
		t.Skipf("this file system's clock does not give every change a new ctime (%v): claims list every time, and there is no cursor to hide an item", err)
	}
	var err error
	if other, err = maildir.Open(dir); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ts.CreateQueue("work")
	for i := range 40 {
		ts.send(t, "mayor", "queue:work", fmt.Sprint("item ", i))
	}
	first, err := ts.Claim(mbox("queue:work"), mbox("nux"))
	if err != nil {
		t.Fatal(err)
	}
	back = first.ID
	armed.Store(true)
	if _, err := ts.Claim(mbox("queue:work"), mbox("toast")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-released:
		if err != nil {
			t.Fatalf("release: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the release never finished")
	}
	next, err := ts.Claim(mbox("queue:work"), mbox("toast"))
	if err != nil {
		t.Fatal(err)
	}
	if next.ID != back {
		t.Fatalf("the claim after a release took %s (%q); want the released item %s, the oldest", next.ID, next.Subject, back)
	}
}

// A send to a queue killed (SIGKILL) at every fault point of its write, on
// a file system without renameat2's flags (so one kill lands between the
// rename's link and its unlink, leaving the item under its name and its
// temp's): fsck --repair, then claims, hand out what was written exactly
// once, the temp's second name never making the item unclaimable.
func TestFallbackSendKilledAtEveryStepIsClaimableOnce(t *testing.T) {
	points := 0
	{
		ts := newStore(t)
		ts.CreateQueue("work")
		counted := ts.reopen(t, durable.WithFallback(), durable.WithFault(func(durable.Step, string) error { points++; return nil }))
		if err := claimOps["send"].run(counted.Store, ""); err != nil {
			t.Fatal(err)
		}
	}
	linked := 0
	for n := 1; n <= points; n++ {
		ts := newStore(t)
		ts.CreateQueue("work")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=nth", "ROOT="+ts.dir, "OP=send", "N="+strconv.Itoa(n), "FALLBACK=1", "GORACE=atexit_sleep_ms=0")
		out, err := cmd.Output()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("point %d: the child was not killed: %v %s", n, err, out)
		}
		entries, _ := os.ReadDir(ts.path("state/queue/work"))
		items := 0
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") {
				items++
				if info, _ := e.Info(); info != nil && info.Sys().(*syscall.Stat_t).Nlink > 1 {
					linked++
				}
			}
		}
		if _, err := fsck.Check(context.Background(), ts.dir, fsck.Options{Repair: true}); err != nil {
			t.Fatal(err)
		}
		for i := range items {
			if _, err := ts.Claim(mbox("queue:work"), mbox("toast")); err != nil {
				t.Fatalf("point %d: claim %d of %d after the repair: %v", n, i+1, items, err)
			}
		}
		if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); !errors.Is(err, maildir.ErrQueueEmpty) {
			t.Fatalf("point %d: a claim past the %d written: %v", n, items, err)
		}
	}
	if linked == 0 {
		t.Fatal("no kill left the item under two names: the link step was never hit")
	}
}
