package webview_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/webview"
)

// BenchmarkOverview renders the overview of a town of 100 agents × 500
// messages (50,000; 10,000 of them unread, one urgent in five), against
// its floor: a stat of each mailbox folder and its archive — what any
// renderer must do to know nothing changed. The first render, outside the
// timer, fills the server's caches; then each render finds one folder
// changed (a send), as under live use. "channel=4000" is the same town
// after a channel of 4,000 posts was added: channels keep every post by
// default, so a render must not read them all.
func BenchmarkOverview(b *testing.B) {
	agents, per, unread := 100, 500, 100
	if testing.Short() {
		agents = 10
	}
	dir := filepath.Join(b.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fillTown(b, dir, agents, per, unread)
	srv, err := webview.New(s, nil, "", "")
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	render := func(b *testing.B) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET /: %d", rec.Code)
		}
	}
	// A folder changed within the racy window is not kept (see
	// folderCache): let the set-up's folders age past it, as a live town's
	// are, then fill the caches.
	time.Sleep(maildir.RacyWindow)
	render(b)
	n := 0
	afterSends := func(b *testing.B) { // each render after one send (untimed)
		for b.Loop() {
			b.StopTimer()
			n++
			if _, err := s.Send(&maildir.Message{From: "mayor", To: fmt.Sprintf("agent%02d", n%agents), Subject: "new"}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			render(b)
		}
	}
	b.Run(fmt.Sprintf("agents=%d/mailfs", agents), afterSends)
	// The same, with a channel of 4,000 posts.
	if err := s.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		b.Fatal(err)
	}
	posts := filepath.Join(dir, "state/channel/merges")
	start := time.Now().Add(-24 * time.Hour)
	for i := range 4000 {
		at := start.Add(time.Duration(i) * time.Second)
		body := fmt.Sprintf(`{"from":"refinery","subject":"MERGED gt-%d","timestamp":%q,"body":"Branch: polecat/gt-%d"}`, i, at.UTC().Format(time.RFC3339Nano), i)
		if err := os.WriteFile(filepath.Join(posts, maildir.NewID(at, "refinery")+".json"), []byte(body), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(maildir.RacyWindow)
	render(b)
	b.Run(fmt.Sprintf("agents=%d/channel=4000/mailfs", agents), afterSends)
	b.Run(fmt.Sprintf("agents=%d/floor", agents), func(b *testing.B) {
		for b.Loop() {
			for a := range agents {
				box := filepath.Join(dir, "state/mail", fmt.Sprintf("agent%02d", a))
				if _, err := os.Stat(box); err != nil {
					b.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(box, "archive")); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// fillTown writes agents mailboxes of per messages each, the first unread
// of them unread and one in five urgent, straight into the folders (no
// fsync: this is set-up), stamped over the last two days.
func fillTown(b testing.TB, dir string, agents, per, unread int) {
	b.Helper()
	start := time.Now().Add(-48 * time.Hour)
	for a := range agents {
		box := filepath.Join(dir, "state/mail", fmt.Sprintf("agent%02d", a))
		if err := os.MkdirAll(filepath.Join(box, "archive"), 0o700); err != nil {
			b.Fatal(err)
		}
		for i := range per {
			at := start.Add(time.Duration(a*per+i) * time.Second)
			prio := "normal"
			if i%5 == 0 {
				prio = "urgent"
			}
			body := fmt.Sprintf(`{"from":"mayor","subject":"WORK gt-%d","priority":%q,"read":%v,"timestamp":%q,"body":"Issue: gt-%d\n\nsome text to make it a message"}`,
				i, prio, i >= unread, at.UTC().Format(time.RFC3339Nano), i)
			if err := os.WriteFile(filepath.Join(box, maildir.NewID(at, "mayor")+".json"), []byte(body), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
}
