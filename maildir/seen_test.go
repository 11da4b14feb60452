package maildir_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A release or reassign chosen on a stale view (a page, a listing) must
// not undo what happened since: finished work (read) is refused unless the
// caller saw it finished, a claim taken again is refused, and nothing moves.
func TestReleaseSeenRefusesWhatChanged(t *testing.T) {
	ts := newStore(t)
	ts.CreateQueue("work")
	item := sendTo(t, ts, "queue:work")[0]
	claim, err := ts.Claim(mbox("queue:work"), mbox("toast"))
	if err != nil {
		t.Fatal(err)
	}
	seen := maildir.Seen{At: claim.Claim.At}
	if _, err := ts.MarkRead(mbox("toast"), item.ID); err != nil {
		t.Fatal(err)
	}
	for name, act := range map[string]func() error{
		"release":  func() error { _, err := ts.ReleaseSeen(mbox("toast"), item.ID, seen); return err },
		"reassign": func() error { _, err := ts.ReassignSeen(mbox("toast"), item.ID, mbox("nux"), seen); return err },
	} {
		err := act()
		var se *maildir.StaleError
		if !errors.Is(err, maildir.ErrStale) || !errors.As(err, &se) || !se.Done || se.Agent != "toast" {
			t.Fatalf("%s of a done item: %v", name, err)
		}
		m, err := ts.Get(mbox("toast"), item.ID)
		if err != nil || !m.Read || m.Claim == nil {
			t.Fatalf("after the refused %s: %+v, %v", name, m, err)
		}
	}
	// Released and claimed again by the same agent: a new claim.
	if _, err := ts.ReleaseSeen(mbox("toast"), item.ID, maildir.Seen{Done: true}); err != nil {
		t.Fatal(err)
	}
	ts.Now = func() time.Time { return claim.Claim.At.Add(time.Minute) }
	if _, err := ts.Claim(mbox("queue:work"), mbox("toast")); err != nil {
		t.Fatal(err)
	}
	_, err = ts.ReleaseSeen(mbox("toast"), item.ID, seen)
	var se *maildir.StaleError
	if !errors.As(err, &se) || se.Done || !se.Seen.Equal(claim.Claim.At) {
		t.Fatalf("release of a claim taken again: %v", err)
	}
	if !ts.exists(t, "state/mail/toast/"+item.ID+".json") {
		t.Fatal("the refused release moved the item")
	}
}

// A mark read racing a release as seen (unread) ends one way or the
// other, never both: either the release won (the item waits in the queue,
// unread, and the mark found nothing), or the mark won (the item stays
// with its claimant, read, and the release was refused).
func TestReleaseSeenRacingAMarkRead(t *testing.T) {
	ts := newStore(t)
	ts.CreateQueue("work")
	outcomes := map[string]int{}
	for range 40 {
		item := sendTo(t, ts, "queue:work")[0]
		if _, err := ts.Claim(mbox("queue:work"), mbox("toast")); err != nil {
			t.Fatal(err)
		}
		var relErr, markErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); _, relErr = ts.ReleaseSeen(mbox("toast"), item.ID, maildir.Seen{}) }()
		go func() { defer wg.Done(); _, markErr = ts.MarkRead(mbox("toast"), item.ID) }()
		wg.Wait()
		switch {
		case relErr == nil && errors.Is(markErr, maildir.ErrNotFound):
			m, err := ts.Get(mbox("queue:work"), item.ID)
			if err != nil || m.Read || m.Claim != nil {
				t.Fatalf("released: %+v, %v", m, err)
			}
			outcomes["release won"]++
		case errors.Is(relErr, maildir.ErrStale) && markErr == nil:
			m, err := ts.Get(mbox("toast"), item.ID)
			if err != nil || !m.Read {
				t.Fatalf("marked: %+v, %v", m, err)
			}
			outcomes["mark won"]++
		default:
			t.Fatalf("release: %v; mark read: %v", relErr, markErr)
		}
		// Empty the queue for the next round.
		if m, err := ts.Claim(mbox("queue:work"), mbox("nux")); err == nil {
			ts.MarkRead(mbox("nux"), m.ID)
		}
	}
	t.Logf("outcomes: %v", outcomes)
}
