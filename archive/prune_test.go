package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/maildir"
)

// A full sweep applies the one rule by which keyed sends' records go:
// past their window, removed; within it, kept. A dry run removes nothing.
func TestSweepPrunesKeyRecordsPastTheirWindow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, _, err := s.SendOnce(&maildir.Message{From: "mayor", To: "toast", Subject: "once"}, "k"); err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(dir, filepath.FromSlash(maildir.OnceDir), maildir.OnceName("k"))
	later := func() time.Time { return time.Now().Add(maildir.OnceWindow + time.Hour) }
	for _, c := range []struct {
		dry  bool
		now  func() time.Time
		kept bool
	}{{false, time.Now, true}, {true, later, true}, {false, later, false}} {
		s.Now = c.now
		sw := &archive.Sweeper{Store: s, DryRun: c.dry, Now: c.now}
		rep, err := sw.Sweep(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, serr := os.Lstat(record)
		if (serr == nil) != c.kept || rep.PrunedKeys != map[bool]int{true: 0, false: 1}[c.kept] {
			t.Errorf("dry %v: record there %v, pruned %d; want there %v", c.dry, serr == nil, rep.PrunedKeys, c.kept)
		}
	}
}
