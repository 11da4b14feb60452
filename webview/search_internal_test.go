package webview

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/maildir"
)

// fullScan is what the search page answered before it kept anything: the
// store's search of every folder, file by file, from the disk.
func fullScan(t *testing.T, s *Server, m *maildir.Matcher, archived bool) []*maildir.Message {
	t.Helper()
	boxes, err := s.allBoxes()
	if err != nil {
		t.Fatal(err)
	}
	var out []*maildir.Message
	for _, b := range boxes {
		found, err := s.Store.Search(context.Background(), m, []maildir.Address{b}, archived)
		if err != nil && archived {
			found, err = s.Store.Search(context.Background(), m, []maildir.Address{b}, false)
		}
		if err != nil {
			continue
		}
		out = append(out, found...)
	}
	slices.SortStableFunc(out, func(a, b *maildir.Message) int { return a.Timestamp.Compare(b.Timestamp) })
	return out
}

// searchTownQuery is the search page's answer to text, ranked as the
// page ranks: what it shows, in order.
func searchTownQuery(t *testing.T, s *Server, text string, archived bool, scan bool) []string {
	t.Helper()
	q, err := parseQuery(text, s.now())
	if err != nil {
		t.Fatal(err)
	}
	m, err := q.filter().Compile()
	if err != nil {
		t.Fatal(err)
	}
	var found []*maildir.Message
	if scan {
		found = fullScan(t, s, m, archived)
	} else if found, _, err = s.searchTown(context.Background(), m, q.Terms, archived); err != nil {
		t.Fatal(err)
	}
	type hit struct {
		m     *maildir.Message
		score float64
	}
	var hits []hit
	for _, msg := range found {
		if q.match(msg) {
			hits = append(hits, hit{msg, q.score(msg)})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return b.m.Timestamp.Compare(a.m.Timestamp)
	})
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s/%s read=%v %q", h.m.Box, h.m.ID, h.m.Read, h.m.Subject))
	}
	return out
}

var searchQueries = []string{
	"deploy", "DEPLOY", "gt-1", "gt-12", `"flaky build"`, "flaky build", "from:mayor", "from:nux deploy",
	"to:toast", "is:unread", "is:read", "priority:urgent", "type:reply", "queue", "posted", "script", "nothing-matches",
	"ünïcode", "",
}

// townForSearch makes a town of mail of every kind: mailboxes, a queue, a
// channel, read and unread, several words in several cases.
func townForSearch(t *testing.T) *Server {
	t.Helper()
	st, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s, err := New(st, nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateChannel("news", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		to := []string{"toast", "nux", "gastown.witness", "queue:work", "channel:news"}[i%5]
		from := []string{"mayor", "gastown/polecats/nux", "toast"}[i%3]
		subject := []string{"Deploy gt-%d", "flaky build gt-%d", "posted gt-%d", "ÜNÏCODE gt-%d"}[i%4]
		m := &maildir.Message{From: from, To: to, Subject: fmt.Sprintf(subject, i), Body: fmt.Sprintf("body %d: the deploy went %s", i, []string{"well", "badly, FLAKY build"}[i%2]),
			Type: []string{"", "reply"}[i%2], Priority: []maildir.Priority{maildir.Normal, maildir.Urgent, maildir.Low}[i%3]}
		sent, err := st.Send(m)
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 1 && sent[0].Box.Kind == maildir.KindAgent {
			if _, err := st.MarkRead(sent[0].Box, sent[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

// sameAsAFullScan checks every query, with and without archives, against
// a full scan.
func sameAsAFullScan(t *testing.T, s *Server, when string) {
	t.Helper()
	for _, q := range searchQueries {
		for _, archived := range []bool{false, true} {
			got, want := searchTownQuery(t, s, q, archived, false), searchTownQuery(t, s, q, archived, true)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: search %q (archived %v):\n got %q\nwant %q", when, q, archived, got, want)
			}
		}
	}
}

// The search's answer, from what it keeps of each folder, is a full
// scan's: after sends, marks read and unread, claims and releases, an
// archive sweep, a restore, a delete, a script's drop and rm, and with a
// budget too small to keep anything. It is checked twice: on the store's
// clock, when every file just written is too fresh to be vouched for and
// a changed folder is read whole, and with the clock an hour ahead, when
// every file is vouched for at once and only the files that changed are
// read (each step's changes come long after the last read, so the file
// system's clock has moved).
func TestSearchIsAFullScan(t *testing.T) {
	for _, ahead := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprint("ahead=", ahead), func(t *testing.T) { searchIsAFullScan(t, ahead) })
	}
}

func searchIsAFullScan(t *testing.T, ahead time.Duration) {
	s := townForSearch(t)
	st := s.Store
	if ahead > 0 {
		st.Now = func() time.Time { return time.Now().Add(ahead) }
	}
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	sameAsAFullScan(t, s, "at first")
	sameAsAFullScan(t, s, "again, from what was kept")
	if s.texts.size == 0 {
		t.Fatal("the search kept nothing")
	}

	sent, err := st.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "a new deploy", Body: "gt-1234"})
	if err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a send")
	if _, err := st.MarkRead(toast, sent[0].ID); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a mark read")
	if _, err := st.MarkUnread(toast, sent[0].ID); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a mark unread")
	claimed, err := st.Claim(work, toast)
	if err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a claim")
	if _, err := st.Release(toast, claimed.ID); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a release")

	// Two days from now, every read message is past the sweep's cut-off.
	later := time.Now().Add(ahead + 48*time.Hour)
	rep, err := (&archive.Sweeper{Store: st, Now: func() time.Time { return later }}).Sweep(context.Background())
	if err != nil || len(rep.Moved) == 0 {
		t.Fatalf("the sweep: %+v, %v", rep, err)
	}
	sameAsAFullScan(t, s, "after an archive sweep")
	if errs, err := st.Restore(rep.Moved[0].Box, []string{rep.Moved[0].ID}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	sameAsAFullScan(t, s, "after a restore")
	if err := st.Delete(toast, sent[0].ID); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a delete")
	drop := filepath.Join(st.Dir(), "state/mail/toast/2026-01-01T00-00-00Z-script.json")
	if err := os.WriteFile(drop, []byte(`{"from":"script","subject":"a script's deploy","body":"dropped"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a script's drop")
	if err := os.Remove(drop); err != nil {
		t.Fatal(err)
	}
	sameAsAFullScan(t, s, "after a script's rm")

	s.texts = newBudgetCache(1)
	sameAsAFullScan(t, s, "keeping nothing")
	for k, e := range s.texts.entries {
		if n := len(e.value.(*keptFolder).kept); n > 0 {
			t.Fatalf("a budget of one byte kept %d messages of %v", n, k)
		}
	}
}

// A search reads again only the folders that changed since the last: none
// when nothing did, the one a send landed in after a send, a mailbox and
// its archive after an archive. The store's clock is an hour ahead, so
// that every folder is old enough for its stamp to be trusted.
func TestSearchReadsOnlyChangedFolders(t *testing.T) {
	s := townForSearch(t)
	st := s.Store
	ahead := time.Now().Add(time.Hour)
	st.Now = func() time.Time { return ahead }
	search := func(archived bool) int {
		t.Helper()
		before := s.texts.reads
		searchTownQuery(t, s, "deploy", archived, false)
		return s.texts.reads - before
	}
	boxes, err := s.allBoxes()
	if err != nil {
		t.Fatal(err)
	}
	if n := search(true); n != 2*len(boxes) {
		t.Fatalf("the first search read %d folders, want %d", n, 2*len(boxes))
	}
	if n := search(true); n != 0 {
		t.Fatalf("a search with nothing changed read %d folders", n)
	}
	sent, err := st.Send(&maildir.Message{From: "mayor", To: "nux", Subject: "x", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if n := search(true); n != 1 {
		t.Fatalf("a search after a send read %d folders, want 1", n)
	}
	if errs, err := st.Archive(sent[0].Box, []string{sent[0].ID}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	if n := search(false); n != 1 {
		t.Fatalf("a search without archives after an archive read %d folders, want 1", n)
	}
	if n := search(true); n != 1 {
		t.Fatalf("a search of the archives after an archive read %d folders, want 1 (the archive)", n)
	}
}

// The warm-up Serve starts reads every folder a search reads, so that
// the first search reads none; ended, it stops.
func TestSearchWarmUp(t *testing.T) {
	s := townForSearch(t)
	ahead := time.Now().Add(time.Hour)
	s.Store.Now = func() time.Time { return ahead }
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	s.warmSearch(ended)
	if s.texts.reads != 0 {
		t.Fatalf("an ended warm-up read %d folders", s.texts.reads)
	}
	s.warmSearch(context.Background())
	before := s.texts.reads
	if before == 0 {
		t.Fatal("the warm-up read nothing")
	}
	searchTownQuery(t, s, "deploy", true, false)
	if n := s.texts.reads - before; n != 0 {
		t.Fatalf("the first search after the warm-up read %d folders", n)
	}
}
