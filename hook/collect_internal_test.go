package hook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

func newTown(t *testing.T) (*maildir.Store, *nudgeq.Queue) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	q, err := nudgeq.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close(); s.Close() })
	return s, q
}

// A hook whose budget runs out after the nudges were claimed, but before
// they could be shown, gives them back at once: the next check sees every
// one of them, urgent first, without waiting for the orphan timeout.
func TestNudgesClaimedPastTheBudgetGoBack(t *testing.T) {
	s, q := newTown(t)
	for _, p := range []nudgeq.Priority{nudgeq.Normal, nudgeq.Urgent, nudgeq.Normal} {
		if _, err := q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "ping " + string(p), Priority: p}, 0); err != nil {
			t.Fatal(err)
		}
	}
	claimedAll := make(chan struct{})
	c := &Collector{Store: s, Nudges: q, Budget: 20 * time.Millisecond,
		// The claim takes everything, then is slow: it returns only once
		// the budget is spent.
		claim: func(ctx context.Context, agent string) (*nudgeq.Batch, error) {
			b, err := q.ClaimContext(context.Background(), agent)
			close(claimedAll)
			<-ctx.Done()
			return b, err
		}}
	res := c.Collect(context.Background(), "toast")
	<-claimedAll
	if res.Reminder.Partial == "" || len(res.Reminder.Nudges) != 0 {
		t.Fatalf("partial %q, %d nudges shown; want a partial reminder without nudges", res.Reminder.Partial, len(res.Reminder.Nudges))
	}
	if err := res.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Len("toast"); err != nil || n != 3 {
		t.Fatalf("%d nudges back in the queue (%v), want all 3", n, err)
	}
	// The next hook, with time to spare, shows all three.
	res = (&Collector{Store: s, Nudges: q}).Collect(context.Background(), "toast")
	if len(res.Reminder.Nudges) != 3 || !strings.Contains(res.Reminder.String(), "ping urgent") {
		t.Fatalf("the next check shows %d nudges:\n%s", len(res.Reminder.Nudges), res.Reminder)
	}
	res.Commit()
	if n, _ := q.Len("toast"); n != 0 {
		t.Fatalf("%d nudges left after a committed check", n)
	}
}

// An agent's reminder is its own, whatever else shares its name.
func TestTheAgentIsAlwaysTheAgent(t *testing.T) {
	s, q := newTown(t)
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "deacon", Subject: "now", Priority: maildir.Urgent}); err != nil {
		t.Fatal(err)
	}
	// A group of the same name (the command refuses to create one; a hand
	// edit or an older mailfs can leave it).
	if err := writeFile(s.Dir(), "state/groups/deacon.json", `{"members": ["mayor"]}`); err != nil {
		t.Fatal(err)
	}
	res := (&Collector{Store: s, Nudges: q}).Collect(context.Background(), "deacon")
	if len(res.Errs) != 0 || !strings.Contains(res.Reminder.String(), "URGENT") {
		t.Fatalf("errors %v, reminder:\n%s", res.Errs, res.Reminder)
	}
}

// A listing of the mailbox that is slow (a big folder on a cold disk,
// say) does not hold the hook past its budget: the reminder says it is
// partial and still shows the nudges, which were claimed first; and they
// are the agent's to commit. The listing ends with the call: it stops at
// its next file once the budget is spent, and has ended, without making
// an index of what it read, when Collect returns, so that a caller may
// remove the root at once (demo's scratch town, a test's temp dir).
func TestASlowMailReadDoesNotOutliveTheHook(t *testing.T) {
	leakcheck.Check(t)
	s, q := newTown(t)
	if _, err := q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "ping", Priority: nudgeq.Urgent}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "work"}); err != nil {
		t.Fatal(err)
	}
	ended := false
	c := &Collector{Store: s, Nudges: q, Budget: 20 * time.Millisecond,
		fromIndex: func(context.Context, string) ([]*maildir.Message, error) {
			return nil, maildir.ErrNeedsListing // the folder changed
		},
		list: func(ctx context.Context, agent string) ([]*maildir.Message, error) {
			<-ctx.Done() // slow: the budget is spent before the first file
			msgs, err := s.ListContext(ctx, maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{})
			ended = true
			return msgs, err
		}}
	res := c.Collect(context.Background(), "toast")
	if !ended {
		t.Fatal("Collect returned before its listing ended")
	}
	if res.Reminder.Partial == "" || len(res.Reminder.Nudges) != 1 || len(res.Reminder.Mail) != 0 {
		t.Fatalf("partial %q, %d nudges, %d messages shown; want a partial reminder with the nudge only",
			res.Reminder.Partial, len(res.Reminder.Nudges), len(res.Reminder.Mail))
	}
	if err := res.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Len("toast"); err != nil || n != 0 {
		t.Fatalf("%d nudges left after the commit (%v)", n, err)
	}
	// The mailbox's index (runtime/index/state~mail~toast), made by a
	// listing that went to its end.
	if _, err := os.Stat(filepath.Join(s.Dir(), "runtime", "index", "state~mail~toast")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a listing cut short kept an index (%v)", err)
	}
}

// The hook's every turn, when the mailbox has not changed, is answered
// from the folder's index on the caller's goroutine (no listing, no
// goroutine); a folder that changed, or one with more unread mail than a
// few reads, is listed.
func TestACurrentIndexAnswersTheHookWithoutAListing(t *testing.T) {
	s, q := newTown(t)
	send := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("work ", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	listed := 0
	c := &Collector{Store: s, Nudges: q,
		list: func(_ context.Context, agent string) ([]*maildir.Message, error) {
			listed++
			return s.List(maildir.Address{Kind: maildir.KindAgent, Name: agent}, maildir.ListOptions{})
		}}
	collect := func(wantMail, wantListed int) {
		t.Helper()
		listed = 0
		res := c.Collect(context.Background(), "toast")
		if len(res.Errs) != 0 || res.Reminder.Partial != "" || len(res.Reminder.Mail) != wantMail || listed != wantListed {
			t.Fatalf("errors %v, partial %q, %d messages, %d listings; want %d messages, %d listings",
				res.Errs, res.Reminder.Partial, len(res.Reminder.Mail), listed, wantMail, wantListed)
		}
	}
	send(3)
	collect(3, 1) // no index yet: listed, and the index made
	collect(3, 0)
	collect(3, 0)
	send(1)
	collect(4, 1) // changed
	collect(4, 0)
	send(fewFiles)
	collect(4+fewFiles, 1)
	collect(4+fewFiles, 1) // more than a few files to read: on a goroutine, every time
}
