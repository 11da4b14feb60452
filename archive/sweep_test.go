package archive_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/maildir"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     testing.TB
	dir   string
	store *maildir.Store
	warns []error
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, dir: filepath.Join(t.TempDir(), ".chipset")}
	s, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Warn = func(err error) { f.warns = append(f.warns, err) }
	t.Cleanup(func() { s.Close() })
	f.store = s
	return f
}

// sweeper returns the strict sweep, which decides by age alone: most tests
// here are about age. TestSweepKeepsUnreadByDefaultAndDryRun covers the
// default.
func (f *fixture) sweeper() *archive.Sweeper {
	return &archive.Sweeper{Store: f.store, Now: func() time.Time { return now }, IncludeUnread: true}
}

func (f *fixture) path(rel string) string { return filepath.Join(f.dir, filepath.FromSlash(rel)) }

// put writes a file as a script would, with an optional mtime.
func (f *fixture) put(rel, content string, mtime time.Time) {
	f.t.Helper()
	p := f.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
	if !mtime.IsZero() {
		os.Chtimes(p, mtime, mtime)
	}
}

// stamped writes a message named by a stamp age ago, and returns its id.
func (f *fixture) stamped(agent string, age time.Duration) string {
	id := maildir.NewID(now.Add(-age), "x")
	f.put("state/mail/"+agent+"/"+id+".json", `{"from":"x","subject":"s"}`, time.Time{})
	return id
}

func (f *fixture) exists(rel string) bool {
	_, err := os.Lstat(f.path(rel))
	return err == nil
}

func movedIDs(rep *archive.Report) []string {
	var ids []string
	for _, m := range rep.Moved {
		ids = append(ids, m.Box.Name+"/"+m.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestSweepDecidesAgeFromStampThenTimestampThenMtime(t *testing.T) {
	f := newFixture(t)
	old, young, future := f.stamped("a", 48*time.Hour), f.stamped("a", time.Hour), f.stamped("a", -time.Hour)
	day := 24 * time.Hour
	exactly := f.stamped("a", day)               // exactly at the cut-off: not older, stays
	older := f.stamped("a", day+time.Nanosecond) // one nanosecond past it: moves
	ancient := now.Add(-1000 * time.Hour)
	// A fresh stamp wins over an ancient mtime.
	fresh := f.stamped("a", time.Minute)
	os.Chtimes(f.path("state/mail/a/"+fresh+".json"), ancient, ancient)
	// No stamp: the timestamp key decides, even against the mtime.
	f.put("state/mail/a/keyed-old.json", `{"timestamp":"`+now.Add(-30*time.Hour).Format(time.RFC3339)+`"}`, now)
	f.put("state/mail/a/keyed-new.json", `{"timestamp":"`+now.Add(-time.Hour).Format(time.RFC3339)+`"}`, ancient)
	// No stamp, no key: the mtime decides.
	f.put("state/mail/a/mtime-old.json", `{"from":"sh"}`, ancient)
	f.put("state/mail/a/mtime-new.json", `{"from":"sh"}`, now)
	// Never moved: dot-temps, non-messages, files whose age cannot be told.
	f.put("state/mail/a/.mailfs-00.tmp", `{}`, ancient)
	f.put("state/mail/a/notes.txt", `hello`, ancient)
	f.put("state/mail/a/corrupt.json", `{"from":`, ancient)

	rep, err := f.sweeper().Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/" + old, "a/" + older, "a/keyed-old", "a/mtime-old"}
	slices.Sort(want)
	if got := movedIDs(rep); !slices.Equal(got, want) {
		t.Fatalf("moved %v\nwant  %v", got, want)
	}
	for _, id := range []string{old, older, "keyed-old", "mtime-old"} {
		if !f.exists("state/mail/a/archive/"+id+".json") || f.exists("state/mail/a/"+id+".json") {
			t.Errorf("%s is not (only) in the archive", id)
		}
	}
	for _, name := range []string{young, future, fresh, exactly, "keyed-new", "mtime-new"} {
		if !f.exists("state/mail/a/" + name + ".json") {
			t.Errorf("%s was moved", name)
		}
	}
	for _, name := range []string{".mailfs-00.tmp", "notes.txt", "corrupt.json"} {
		if !f.exists("state/mail/a/" + name) {
			t.Errorf("%s was moved", name)
		}
	}
	var skipped []string
	for _, s := range rep.Skipped {
		skipped = append(skipped, s.Path)
	}
	slices.Sort(skipped)
	if want := []string{"state/mail/a/corrupt.json", "state/mail/a/notes.txt"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v, want %v", skipped, want)
	}

	// The sweep is idempotent.
	rep, err = f.sweeper().Sweep(context.Background())
	if err != nil || len(rep.Moved) != 0 {
		t.Fatalf("second sweep moved %v, %v", rep.Moved, err)
	}
}

func TestSweepKeepsUnreadByDefaultAndDryRun(t *testing.T) {
	f := newFixture(t)
	unread := f.stamped("a", 48*time.Hour)
	read := maildir.NewID(now.Add(-48*time.Hour), "y")
	f.put("state/mail/a/"+read+".json", `{"from":"y","read":true}`, time.Time{})

	sw := f.sweeper()
	sw.DryRun, sw.IncludeUnread = true, false
	rep, err := sw.Sweep(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := movedIDs(rep); !slices.Equal(got, []string{"a/" + read}) || rep.Kept != 1 || !rep.DryRun {
		t.Fatalf("dry run moved %v kept %d", got, rep.Kept)
	}
	if f.exists("state/mail/a/archive") {
		t.Fatal("a dry run touched the disk")
	}
	sw.DryRun = false
	if rep, _ := sw.Sweep(context.Background(), "a"); len(rep.Moved) != 1 || rep.Kept != 1 {
		t.Fatalf("moved %v, kept %d", rep.Moved, rep.Kept)
	}
	if !f.exists("state/mail/a/"+unread+".json") || !f.exists("state/mail/a/archive/"+read+".json") {
		t.Fatal("the default sweep moved the wrong message: unread mail must stay")
	}

	// The strict sweep takes unread mail too.
	sw.IncludeUnread = true
	if rep, _ := sw.Sweep(context.Background(), "a"); len(rep.Moved) != 1 || rep.Kept != 0 {
		t.Fatalf("strict sweep moved %v, kept %d", rep.Moved, rep.Kept)
	}
	if !f.exists("state/mail/a/archive/" + unread + ".json") {
		t.Fatal("the strict sweep left the unread message")
	}
}

func TestSweepReportsClashAndReplacesNothing(t *testing.T) {
	f := newFixture(t)
	id := f.stamped("a", 48*time.Hour)
	f.put("state/mail/a/archive/"+id+".json", `{"from":"x","subject":"the archived one"}`, time.Time{})
	rep, err := f.sweeper().Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Moved) != 0 || len(rep.Skipped) != 1 || !errors.Is(rep.Skipped[0], maildir.ErrClash) {
		t.Fatalf("moved %v skipped %v; want one clash", rep.Moved, rep.Skipped)
	}
	if got, _ := os.ReadFile(f.path("state/mail/a/archive/" + id + ".json")); !strings.Contains(string(got), "the archived one") {
		t.Fatal("the archived file was replaced")
	}
	if !f.exists("state/mail/a/" + id + ".json") {
		t.Fatal("the newer file left the mailbox")
	}
}

func TestSweepGoesOnPastABrokenMailbox(t *testing.T) {
	f := newFixture(t)
	f.stamped("broken", 48*time.Hour)
	f.put("state/mail/broken/archive", "I am a file", time.Time{})
	ok := f.stamped("fine", 48*time.Hour)
	rep, err := f.sweeper().Sweep(context.Background())
	if err == nil || !strings.Contains(err.Error(), "mailbox broken") || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("error %v, want one naming the broken mailbox", err)
	}
	if got := movedIDs(rep); !slices.Equal(got, []string{"fine/" + ok}) || len(rep.Failed) != 1 || rep.Failed[0].Box.Name != "broken" {
		t.Fatalf("moved %v failed %v", got, rep.Failed)
	}
}

func TestSweepRefusesNegativeAge(t *testing.T) {
	f := newFixture(t)
	sw := f.sweeper()
	sw.OlderThan = -time.Hour
	if _, err := sw.Sweep(context.Background()); !errors.Is(err, archive.ErrBadAge) {
		t.Fatalf("got %v", err)
	}
}

func TestExplicitArchiveAndRestore(t *testing.T) {
	f := newFixture(t)
	sent, err := f.store.Send(&maildir.Message{From: "m", To: "a", Subject: "now"})
	if err != nil {
		t.Fatal(err)
	}
	id := sent[0].ID
	for range 2 { // archiving an archived message is not an error
		if errs, err := f.store.Archive(mbox("a"), []string{id}); err != nil || errs[0] != nil {
			t.Fatalf("Archive: %v %v", errs, err)
		}
	}
	archived, err := f.store.List(mbox("a"), maildir.ListOptions{Archived: true, All: true})
	if err != nil || len(archived) != 1 || !archived[0].Archived {
		t.Fatalf("archive lists %v, %v", archived, err)
	}
	if m, err := f.store.Get(mbox("a"), id); err != nil || !m.Archived {
		t.Fatalf("Get of an archived message: %v, %v", m, err)
	}
	if errs, _ := f.store.Archive(mbox("a"), []string{"nope"}); !errors.Is(errs[0], maildir.ErrNotFound) {
		t.Fatalf("unknown id: %v", errs[0])
	}
	if errs, err := f.store.Restore(mbox("a"), []string{id}); err != nil || errs[0] != nil {
		t.Fatalf("Restore: %v %v", errs, err)
	}
	if !f.exists("state/mail/a/"+id+".json") || f.exists("state/mail/a/archive/"+id+".json") {
		t.Fatal("not restored")
	}
	// A restore that would replace a message in the mailbox is refused.
	f.put("state/mail/a/archive/"+id+".json", `{"from":"other"}`, time.Time{})
	errs, err := f.store.Restore(mbox("a"), []string{"state/mail/a/archive/" + id})
	if err == nil && errs[0] == nil {
		t.Fatal("a path was taken for an id")
	}
	os.Remove(f.path("state/mail/a/" + id + ".json"))
	f.put("state/mail/a/"+id+".json", `{"from":"new"}`, time.Time{})
	if errs, _ := f.store.Archive(mbox("a"), []string{id}); !errors.Is(errs[0], maildir.ErrClash) {
		t.Fatalf("archive onto an archived id: %v", errs[0])
	}
}

// Two sweepers and a sender at once: every message ends up exactly once.
func TestSweepersRacingASender(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	future := func() time.Time { return time.Now().Add(48 * time.Hour) } // everything is old
	var wg sync.WaitGroup
	var sent []string
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			m, err := f.store.Send(&maildir.Message{From: "m", To: fmt.Sprintf("a%d", i%3), Subject: "s"})
			if err != nil {
				t.Error(err)
				return
			}
			sent = append(sent, m[0].Box.String()+"/"+m[0].ID)
		}
	})
	sweeps := make([]int, 2)
	for i := range 2 {
		s, err := maildir.Open(f.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sw := &archive.Sweeper{Store: s, Now: future, OlderThan: time.Hour, IncludeUnread: true}
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := sw.Sweep(context.Background()); err != nil {
					t.Error(err)
					return
				}
				sweeps[i]++
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	for a := range 3 {
		for _, archived := range []bool{false, true} {
			msgs, err := f.store.List(mbox(fmt.Sprintf("a%d", a)), maildir.ListOptions{All: true, Archived: archived})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				seen[m.Box.String()+"/"+m.ID]++
			}
		}
	}
	for _, id := range sent {
		if seen[id] != 1 {
			t.Errorf("%s is present %d times", id, seen[id])
		}
	}
	if len(seen) != len(sent) {
		t.Errorf("%d messages on disk, %d sent", len(seen), len(sent))
	}
	if len(f.warns) > 0 {
		t.Errorf("warnings: %v", f.warns)
	}
	t.Logf("%d messages, %v sweeps", len(sent), sweeps)
}

// A mark racing the archive move: the message ends in exactly one place.
func TestMarkReadRacingArchive(t *testing.T) {
	f := newFixture(t)
	for range 300 {
		m, err := f.store.Send(&maildir.Message{From: "m", To: "a", Subject: "s"})
		if err != nil {
			t.Fatal(err)
		}
		id := m[0].ID
		var wg sync.WaitGroup
		var markErr, archErr error
		wg.Go(func() { _, markErr = f.store.MarkRead(mbox("a"), id) })
		wg.Go(func() {
			var errs []error
			errs, archErr = f.store.Archive(mbox("a"), []string{id})
			archErr = errors.Join(archErr, errs[0])
		})
		wg.Wait()
		if markErr != nil || archErr != nil {
			t.Fatalf("mark %v, archive %v", markErr, archErr)
		}
		active, archived := f.exists("state/mail/a/"+id+".json"), f.exists("state/mail/a/archive/"+id+".json")
		if active || !archived {
			t.Fatalf("%s: in mailbox %v, in archive %v", id, active, archived)
		}
		got, err := f.store.Get(mbox("a"), id)
		if err != nil || !got.Read {
			t.Fatalf("the mark was lost: %v %v", got, err)
		}
	}
	for _, dir := range []string{"state/mail/a", "state/mail/a/archive"} {
		ents, _ := os.ReadDir(f.path(dir))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("leftover %s/%s", dir, e.Name())
			}
		}
	}
}

func TestLoopSweepsUntilCancelled(t *testing.T) {
	f := newFixture(t)
	f.stamped("a", 48*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	reports := make(chan *archive.Report, 10)
	done := make(chan error)
	go func() {
		done <- f.sweeper().Loop(ctx, time.Millisecond, nil, func(r *archive.Report, err error) {
			if err != nil {
				t.Error(err)
			}
			reports <- r
		})
	}()
	first := <-reports
	second := <-reports
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Loop returned %v after cancel, want nil", err)
	}
	if len(first.Moved) != 1 || len(second.Moved) != 0 {
		t.Fatalf("sweeps moved %d then %d", len(first.Moved), len(second.Moved))
	}
}

// A sweep cut short by the end of the loop is still reported: what it
// moved must not go unmentioned.
func TestLoopReportsAnInterruptedSweep(t *testing.T) {
	f := newFixture(t)
	f.stamped("a", 48*time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	sw := f.sweeper()
	sweeps := 0
	sw.Now = func() time.Time {
		if sweeps++; sweeps == 2 {
			cancel() // the interrupt lands while the second sweep runs
		}
		return now
	}
	var reports []*archive.Report
	err := sw.Loop(ctx, time.Millisecond, nil, func(r *archive.Report, err error) { reports = append(reports, r) })
	if err != nil {
		t.Fatalf("Loop = %v, want nil", err)
	}
	if len(reports) != 2 || len(reports[0].Moved) != 1 {
		t.Fatalf("%d reports, want both sweeps reported", len(reports))
	}
}

// A full sweep applies every channel's retention, whether or not mailboxes
// exist (it once decided from the list of mailboxes it had just filled in,
// and so ran retention only in a root without any).
func TestFullSweepAppliesChannelRetentionBesideMailboxes(t *testing.T) {
	f := newFixture(t)
	f.stamped("toast", time.Hour) // a mailbox exists
	hours := 1.0
	if err := f.store.CreateChannel("merges", maildir.ChannelChange{RetainHours: &hours}); err != nil {
		t.Fatal(err)
	}
	old := maildir.NewID(now.Add(-48*time.Hour), "refinery")
	f.put("state/channel/merges/"+old+".json", `{"from":"refinery","subject":"MERGED long ago"}`, time.Time{})
	rep, err := f.sweeper().Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !f.exists("state/channel/merges/archive/" + old + ".json") {
		t.Fatalf("the full sweep left the old post; it moved %v", rep.Moved)
	}
	// A sweep of named mailboxes leaves channels alone.
	young := maildir.NewID(now.Add(-48*time.Hour), "refinery2")
	f.put("state/channel/merges/"+young+".json", `{"from":"refinery","subject":"MERGED long ago too"}`, time.Time{})
	if _, err := f.sweeper().Sweep(context.Background(), "toast"); err != nil {
		t.Fatal(err)
	}
	if !f.exists("state/channel/merges/" + young + ".json") {
		t.Fatal("a sweep of one mailbox applied channel retention")
	}
}

// A full sweep moves only what this host's homes hold: mailboxes and
// channels homed on other hosts are passed over and listed; naming one
// is refused with the home host.
func TestSweepLeavesOtherHostsHomesAlone(t *testing.T) {
	f := newFixture(t)
	f.store.Host = "alpha"
	mine, theirs := f.stamped("mayor", 48*time.Hour), f.stamped("witness", 48*time.Hour)
	if err := f.store.ClaimHome(mbox("mayor")); err != nil {
		t.Fatal(err)
	}
	beta, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer beta.Close()
	beta.Host = "beta"
	if err := beta.ClaimHome(mbox("witness")); err != nil {
		t.Fatal(err)
	}
	rep, err := f.sweeper().Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := movedIDs(rep); !slices.Equal(got, []string{"mayor/" + mine}) {
		t.Fatalf("moved %v", got)
	}
	if len(rep.Elsewhere) != 1 || rep.Elsewhere[0] != mbox("witness") {
		t.Fatalf("elsewhere %v", rep.Elsewhere)
	}
	if !f.exists("state/mail/witness/" + theirs + ".json") {
		t.Fatal("beta's mail was moved by alpha")
	}
	rep, err = f.sweeper().Sweep(context.Background(), "witness")
	if !errors.Is(err, maildir.ErrNotHome) || len(rep.Moved) != 0 {
		t.Fatalf("sweeping beta's mailbox by name: %v %v", rep.Moved, err)
	}
}
