package watch

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
)

// Watches come before the first scan (SPEC §4, the README's "level-
// triggered" promise): a message delivered just after the scan listed its
// mailbox is reported by the watch's event. Scanning first would lose it:
// it lands after the listing and before any watch could see it. Moving the
// scan before the watches in Watch makes this test fail (the hook runs at
// the end of the first scan, wherever the scan is).
func TestMailBetweenWatchesAndScanIsReported(t *testing.T) {
	leakcheck.Check(t)
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "before"}); err != nil {
		t.Fatal(err)
	}
	var between *maildir.Message
	w := &Watcher{Store: s, Boxes: []maildir.Address{{Kind: maildir.KindAgent, Name: "toast"}},
		afterFirstScan: func() {
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "in between"})
			if err != nil {
				t.Error(err)
				return
			}
			between = sent[0]
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := w.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // cancels the watch and waits for it to end
	seen := map[string]int{}
	deadline := time.After(10 * time.Second) // a failure's deadline, not a sleep
	for seen["in between"] == 0 {
		select {
		case ev := <-events:
			seen[ev.Message.Subject]++
		case <-deadline:
			t.Fatalf("the message delivered between the watches and the scan was never reported (saw %v)", seen)
		}
	}
	if between == nil || seen["before"] != 1 {
		t.Fatalf("reported %v", seen)
	}
}
