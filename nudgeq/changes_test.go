package nudgeq_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/nudgeq"
)

// hinted waits for a hint on c; the deadline is a failure's, not a sleep.
func hinted(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case _, ok := <-c:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no hint: %s", what)
	}
}

// quiet takes the hints already on their way, so that the next one is the
// next change's: it returns once none came for 200 ms. (A slow machine
// can only make the test weaker, never fail it.)
func quiet(c <-chan struct{}) {
	for {
		select {
		case <-c:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// Changes hints at each nudge queued, also when neither the town nor the
// queue's folder existed when the watch began, and again after the
// folder is removed and made anew; the channel closes when ctx ends.
func TestChangesFollowAQueueThatAppearsLater(t *testing.T) {
	leakcheck.Check(t)
	root := filepath.Join(t.TempDir(), ".chipset") // not made yet
	q, err := nudgeq.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hints, err := q.Changes(ctx, "toast")
	if err != nil {
		t.Fatal(err)
	}
	enqueue := func(text string) {
		t.Helper()
		if _, err := q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: text}, 0); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("first, into a folder made now") // the town, the queue's folders: all new
	hinted(t, hints, "the first nudge, its folder made after the watch began")
	quiet(hints)
	enqueue("second")
	hinted(t, hints, "a nudge into the watched folder")

	// The folder goes (a person cleaned up) and comes back.
	if err := os.RemoveAll(filepath.Join(root, nudgeq.Dir, "toast")); err != nil {
		t.Fatal(err)
	}
	quiet(hints)
	enqueue("third, into the folder made again")
	hinted(t, hints, "a nudge into the folder made again")

	cancel()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-hints:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the channel did not close when ctx ended")
		}
	}
}

func TestChangesRefusesABadAgent(t *testing.T) {
	q, err := nudgeq.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if _, err := q.Changes(context.Background(), "../x"); err == nil {
		t.Fatal("a bad agent name was watched")
	}
}
