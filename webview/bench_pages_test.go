package webview_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/webview"
)

// BenchmarkPages renders the overview, the activity page and a search
// in a town of 100 agents × 500 messages (50,000, spread over the last two
// days, one in five unread), each after one send (untimed), as under live
// use; beside each, its floor — what any renderer of that page must do:
//
//   - overview: stat every mailbox folder and its archive (to know what
//     changed; the rest comes from caches);
//   - activity: list every folder, then read the 2,000 newest files (the
//     page reads at most that many to find the day's conversations);
//   - search: read every file and look for the word in it, on 4
//     goroutines — what a search without an index does. The server's
//     search reads again only the folder the send changed, and tests
//     the rest from what it keeps of each folder (webview/search.go).
//
// The target is 300 ms a page on a quiet machine.
func BenchmarkPages(b *testing.B) {
	agents, per := 100, 500
	if testing.Short() {
		agents = 10
	}
	dir := filepath.Join(b.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var boxes []string
	start := time.Now().Add(-48 * time.Hour)
	total := agents * per
	for a := range agents {
		box := filepath.Join(dir, "state/mail", fmt.Sprintf("agent%02d", a))
		boxes = append(boxes, box)
		if err := os.MkdirAll(filepath.Join(box, "archive"), 0o700); err != nil {
			b.Fatal(err)
		}
		for i := range per {
			n := i*agents + a
			at := start.Add(time.Duration(n) * 48 * time.Hour / time.Duration(total))
			body := fmt.Sprintf(`{"from":"agent%02d","subject":"WORK gt-%d","read":%v,"timestamp":%q,"thread":"t-%d","body":"Issue: gt-%d\n\nsome text to make it a message"}`,
				(a+1)%agents, n, i%5 != 0, at.UTC().Format(time.RFC3339Nano), n/3, n)
			if err := os.WriteFile(filepath.Join(box, maildir.NewID(at, fmt.Sprintf("agent%02d", (a+1)%agents))+".json"), []byte(body), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	srv, err := webview.New(s, nil, "", "")
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	render := func(b *testing.B, path string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", path, rec.Code)
		}
	}
	time.Sleep(maildir.RacyWindow) // as BenchmarkOverview: the set-up's folders age past the racy window
	n := 0
	page := func(path string) func(b *testing.B) {
		return func(b *testing.B) {
			render(b, path) // the caches filled
			for b.Loop() {
				b.StopTimer()
				n++
				if _, err := s.Send(&maildir.Message{From: "mayor", To: fmt.Sprintf("agent%02d", n%agents), Subject: "new"}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				render(b, path)
			}
		}
	}
	name := fmt.Sprintf("agents=%d×%d", agents, per)
	b.Run(name+"/overview/mailfs", page("/"))
	b.Run(name+"/overview/floor", func(b *testing.B) {
		for b.Loop() {
			for _, box := range boxes {
				if _, err := os.Stat(box); err != nil {
					b.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(box, "archive")); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run(name+"/activity/mailfs", page("/activity"))
	b.Run(name+"/activity/floor", func(b *testing.B) {
		for b.Loop() {
			var names []string
			for _, box := range boxes {
				for _, d := range []string{box, filepath.Join(box, "archive")} {
					es, err := os.ReadDir(d)
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range es {
						if !e.IsDir() {
							names = append(names, filepath.Join(d, e.Name()))
						}
					}
				}
			}
			slices.SortFunc(names, func(x, y string) int { return cmpBase(y, x) })
			for _, f := range names[:min(2000, len(names))] {
				if _, err := os.ReadFile(f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run(name+"/search/mailfs", page("/search?q=gt-4242"))
	b.Run(name+"/search/floor", func(b *testing.B) {
		for b.Loop() {
			var wg sync.WaitGroup
			work := make(chan string)
			for range 4 {
				wg.Go(func() {
					for box := range work {
						es, err := os.ReadDir(box)
						if err != nil {
							b.Error(err)
							continue
						}
						for _, e := range es {
							if e.IsDir() {
								continue
							}
							data, err := os.ReadFile(filepath.Join(box, e.Name()))
							if err == nil && bytes.Contains(bytes.ToLower(data), []byte("gt-4242")) {
								_ = data
							}
						}
					}
				})
			}
			for _, box := range boxes {
				work <- box
			}
			close(work)
			wg.Wait()
		}
	})
}

// cmpBase compares two paths by their file names (a message's name
// starts with its stamp).
func cmpBase(x, y string) int {
	return bytes.Compare([]byte(filepath.Base(x)), []byte(filepath.Base(y)))
}
