package live

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/watch"
)

// A deliverer stopped by its context (a signal as its session ends) keeps
// the receipts it holds whichever ready signal its loop takes first: when
// ctx ends, the mailbox's and the nudge queue's watchers close their
// channels too, and a loop that took a closed channel for an end without
// receipts dropped its record, so a sender waiting on "delivered" heard
// "none" (TestRealPi, once in CI). Here all three are ready at once, each
// time; Go's select picks among them at random.
func TestAStoppedLoopKeepsItsReceiptsWhicheverSignalItTakes(t *testing.T) {
	root, err := chipset.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	dir, err := recordDir(root, "toast", true)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	for i := range 100 {
		rec := &Record{Agent: "toast", Deliverer: Self(), Started: time.Now().UTC(),
			Rung: map[string]time.Time{"m": time.Now()}, Held: map[string]string{},
			Confirmed: map[string]time.Time{"m": time.Now()}, Unconfirmed: map[string]time.Time{}}
		st := &run{d: &Deliverer{Door: endedDoor{}}, agent: "toast", rec: rec, dir: dir, waiting: map[string]pending{},
			tries: map[string]int{}, last: map[string]string{}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		mail, nudges := make(chan watch.Event), make(chan struct{})
		close(mail)
		close(nudges)
		keep, err := st.serve(ctx, signals{mail: mail, nudges: nudges, checkEvery: time.Hour})
		if !keep || !errors.Is(err, context.Canceled) {
			t.Fatalf("run %d: serve = %v, %v; want the receipts kept, and the context's error", i, keep, err)
		}
		if rec.Ended.IsZero() {
			t.Fatalf("run %d: the record is not marked ended", i)
		}
	}
}

// endedDoor is the door of a session that has ended.
type endedDoor struct{}

func (endedDoor) Ring(context.Context, string) error    { return ErrGone }
func (endedDoor) Session(context.Context) (Info, error) { return Info{}, ErrGone }
