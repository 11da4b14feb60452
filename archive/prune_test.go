package archive_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
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

// Everything under runtime/ that grows with use is bounded by one rule
// (docs/format.md, "What runtime/ keeps, and for how long"): a town that
// works ten times as long leaves, after a full sweep past the keyed
// sends' window, exactly the files a short one leaves. The rounds make
// keyed sends (a record each), nudges past a full queue (refusal notes),
// drains, and listings (the folder index and its notes).
func TestRuntimeGrowthIsBounded(t *testing.T) {
	left := func(rounds int) []string {
		dir := filepath.Join(t.TempDir(), ".chipset")
		s, err := maildir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		q, err := nudgeq.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		q.MaxDepth = 2
		toast, _ := maildir.ParseMailbox("toast")
		for i := range rounds {
			m := &maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("work ", i)}
			if _, _, err := s.SendOnce(m, fmt.Sprint("key-", i)); err != nil {
				t.Fatal(err)
			}
			for range 3 { // one past the cap: a refusal note
				if _, err := q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "look"}, 0); err != nil && !errors.Is(err, nudgeq.ErrFull) {
					t.Fatal(err)
				}
			}
			if i%3 == 0 {
				b, err := q.Drain("toast")
				if err != nil {
					t.Fatal(err)
				}
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.List(toast, maildir.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		b, err := q.Drain("toast")
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		later := func() time.Time { return time.Now().Add(maildir.OnceWindow + time.Hour) }
		s.Now = later
		if _, err := (&archive.Sweeper{Store: s, Now: later}).Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		var files []string
		err = filepath.WalkDir(filepath.Join(dir, "runtime"), func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, filepath.ToSlash(rel))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	short, long := left(4), left(40)
	if !slices.Equal(short, long) {
		t.Errorf("runtime/ after 4 rounds:\n  %q\nafter 40:\n  %q", short, long)
	}
	t.Logf("runtime/ after a sweep: %q", long)
}
