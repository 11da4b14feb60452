package archive

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A sweep interrupted in its move phase stops within a batch: what it
// moved is durable and reported, the rest is where it was, and it
// returns the context's error.
func TestSweepStopsBetweenBatches(t *testing.T) {
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	const n = 3*moveBatch + 10
	for range n {
		if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "old"}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	later := time.Now().Add(48 * time.Hour) // every message is old by then
	sw := &Sweeper{Store: s, OlderThan: time.Hour, IncludeUnread: true, Now: func() time.Time { return later }, afterBatch: func(moved int) {
		if moved >= moveBatch {
			cancel() // ^C, as the first batch lands
		}
	}}
	rep, err := sw.Sweep(ctx, "toast")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("sweep = %v, want it stopped", err)
	}
	if len(rep.Moved) != moveBatch {
		t.Fatalf("moved %d, want one batch (%d)", len(rep.Moved), moveBatch)
	}
	c, err := s.Count(toast)
	if err != nil || c.Total != n-moveBatch {
		t.Fatalf("left in the mailbox: %+v %v, want %d", c, err, n-moveBatch)
	}
}
