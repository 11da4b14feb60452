package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// backends runs a test against fsnotify and against polling.
func backends(t *testing.T, test func(t *testing.T, poll time.Duration)) {
	t.Run("fsnotify", func(t *testing.T) { test(t, 0) })
	t.Run("poll", func(t *testing.T) { test(t, 20*time.Millisecond) })
}

type fixture struct {
	dir   string
	store *maildir.Store
	warns chan error
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	leakcheck.Check(t)
	f := &fixture{dir: filepath.Join(t.TempDir(), ".chipset"), warns: make(chan error, 100)}
	s, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f.store = s
	return f
}

// watch starts a watcher; it is closed when the test ends.
func (f *fixture) watch(t testing.TB, w *watch.Watcher) <-chan watch.Event {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { w.Close() })
	w.Store = f.store
	w.Warn = func(err error) {
		select {
		case f.warns <- err:
		default:
		}
	}
	ch, err := w.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func (f *fixture) send(t testing.TB, to, subject string) *maildir.Message {
	t.Helper()
	m, err := f.store.Send(&maildir.Message{From: "mayor", To: to, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	return m[0]
}

// next returns the next event, failing after a generous deadline.
func next(t testing.TB, ch <-chan watch.Event) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the watcher stopped")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

// sentinel sends one more message and requires it to be the next event:
// anything reported twice before it would show up here.
func (f *fixture) sentinel(t testing.TB, ch <-chan watch.Event, to string) {
	t.Helper()
	m := f.send(t, to, "sentinel")
	if ev := next(t, ch); ev.ID != m.ID {
		t.Fatalf("expected the sentinel, got %s/%s %q", ev.Box.String(), ev.ID, ev.Message.Subject)
	}
}

func TestReportsUnreadAtStartThenNewMail(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		old := f.send(t, "toast", "waiting")
		read := f.send(t, "toast", "already read")
		f.store.MarkRead(mbox("toast"), read.ID)
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("Toast")}, Poll: poll})
		if ev := next(t, ch); ev.ID != old.ID || ev.Box.String() != "toast" || ev.Message.Subject != "waiting" || ev.Path != old.Path {
			t.Fatalf("first event %+v", ev)
		}
		m := f.send(t, "toast", "new")
		if ev := next(t, ch); ev.ID != m.ID || ev.Message.Subject != "new" {
			t.Fatalf("got %s, want the new message", ev.ID)
		}
		f.send(t, "other", "not watched")
		f.sentinel(t, ch, "toast")
	})
}

func TestSendsDuringStartupAreReportedOnce(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		var sent []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 50 {
				sent = append(sent, f.send(t, "toast", fmt.Sprint(i)).ID)
			}
		}()
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("toast")}, Poll: poll})
		<-done
		got := map[string]int{}
		for range sent {
			got[next(t, ch).ID]++
		}
		for _, id := range sent {
			if got[id] != 1 {
				t.Errorf("%s reported %d times", id, got[id])
			}
		}
		f.sentinel(t, ch, "toast")
	})
}

func TestBurstOfSendersExactlyOnce(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("toast")}, Poll: poll})
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 250 {
					f.send(t, "toast", fmt.Sprintf("%d/%d", g, i))
				}
			})
		}
		got := map[string]int{}
		for range 1000 {
			got[next(t, ch).Message.Subject]++
		}
		wg.Wait()
		if len(got) != 1000 {
			t.Fatalf("%d distinct messages reported, want 1000", len(got))
		}
		f.sentinel(t, ch, "toast")
	})
}

func TestScriptWritingInChunksIsReportedOnceWhole(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		f.store.Init()
		os.MkdirAll(filepath.Join(f.dir, "state/mail/toast"), 0o700)
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("toast")}, Poll: poll, Grace: time.Minute})
		path := filepath.Join(f.dir, "state/mail/toast/2026-01-01T00-00-00Z-cron.json")
		file, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		chunks := []string{`{"from": "cron", "subject": "nightly",`, ` "body": "line one\n`, `line two"}`}
		for _, c := range chunks[:2] {
			file.WriteString(c)
			// Nothing half-written may be reported: the sentinel comes first.
			f.sentinel(t, ch, "toast")
		}
		file.WriteString(chunks[2])
		ev := next(t, ch)
		if ev.ID != "2026-01-01T00-00-00Z-cron" || ev.Message.Body != "line one\nline two" {
			t.Fatalf("got %s with body %q", ev.ID, ev.Message.Body)
		}
		f.sentinel(t, ch, "toast")
		select {
		case w := <-f.warns:
			t.Fatalf("warned about a file still being written: %v", w)
		default:
		}
	})
}

func TestMailboxCreatedLater(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		for _, all := range []bool{false, true} {
			f := newFixture(t) // the root does not even exist yet
			w := watch.Watcher{Poll: poll, All: all}
			if !all {
				w.Boxes = []maildir.Address{mbox("toast")}
			}
			ch := f.watch(t, &w)
			m := f.send(t, "toast", "first ever")
			if ev := next(t, ch); ev.ID != m.ID {
				t.Fatalf("all=%v: got %s", all, ev.ID)
			}
			m = f.send(t, "toast", "second")
			if ev := next(t, ch); ev.ID != m.ID {
				t.Fatalf("all=%v: got %s", all, ev.ID)
			}
			if all {
				m := f.send(t, "nux", "a new mailbox")
				if ev := next(t, ch); ev.ID != m.ID || ev.Box.String() != "nux" {
					t.Fatalf("got %s/%s", ev.Box.String(), ev.ID)
				}
			}
		}
	})
}

func TestInvalidFileWarnsOnceThenARewriteIsReported(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		f.send(t, "toast", "make the mailbox")
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("toast")}, Poll: poll, Grace: 50 * time.Millisecond})
		next(t, ch)
		path := filepath.Join(f.dir, "state/mail/toast/broken.json")
		os.WriteFile(path, []byte(`{"from": "sh", "subject": `), 0o600)
		select {
		case w := <-f.warns:
			if !strings.Contains(w.Error(), "broken.json") {
				t.Fatalf("warning %v does not name the file", w)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no warning for a file that never parsed")
		}
		f.sentinel(t, ch, "toast") // no event for the broken file
		os.WriteFile(path+".tmp", []byte(`{"from": "sh", "subject": "fixed"}`), 0o600)
		os.Rename(path+".tmp", path)
		if ev := next(t, ch); ev.ID != "broken" || ev.Message.Subject != "fixed" {
			t.Fatalf("got %s %q", ev.ID, ev.Message.Subject)
		}
		f.sentinel(t, ch, "toast")
		select {
		case w := <-f.warns:
			t.Fatalf("a second warning: %v", w)
		default:
		}
	})
}

func TestThousandMailboxes(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		var agents []string
		for i := range 1000 {
			agents = append(agents, fmt.Sprintf("polecat-%04d", i))
			os.MkdirAll(filepath.Join(f.dir, "state/mail", agents[i]), 0o700)
		}
		ch := f.watch(t, &watch.Watcher{Boxes: boxes(agents), Poll: poll})
		for _, a := range []string{agents[0], agents[999], agents[500]} {
			m := f.send(t, a, "hi")
			if ev := next(t, ch); ev.ID != m.ID || ev.Box.String() != a {
				t.Fatalf("got %s/%s", ev.Box.String(), ev.ID)
			}
		}
	})
}

func TestStopsWhenTheContextEnds(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		ctx, cancel := context.WithCancel(context.Background())
		ch, err := (&watch.Watcher{Store: f.store, Boxes: []maildir.Address{mbox("a")}, Poll: poll}).Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case _, ok := <-ch:
			if ok {
				t.Fatal("an event after cancel on an empty mailbox")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the channel was not closed")
		}
	})
}

func TestWatchesQueuesAndChannels(t *testing.T) {
	backends(t, func(t *testing.T, poll time.Duration) {
		f := newFixture(t)
		if err := f.store.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
			t.Fatal(err)
		}
		ch := f.watch(t, &watch.Watcher{Boxes: []maildir.Address{mbox("channel:merges"), mbox("queue:work")}, Poll: poll})
		post := f.send(t, "channel:merges", "MERGED nux")
		if ev := next(t, ch); ev.ID != post.ID || ev.Box.String() != "channel:merges" || ev.Path != "state/channel/merges/"+post.ID+".json" {
			t.Fatalf("got %+v", ev)
		}
		// The queue is created after the watch began, and is watched all the same.
		if err := f.store.CreateQueue("work"); err != nil {
			t.Fatal(err)
		}
		item := f.send(t, "queue:work", "WORK gt-1")
		if ev := next(t, ch); ev.ID != item.ID || ev.Box.String() != "queue:work" {
			t.Fatalf("got %+v", ev)
		}
		if _, err := (&watch.Watcher{Store: f.store, Boxes: []maildir.Address{mbox("@all")}}).Watch(context.Background()); err == nil {
			t.Fatal("watching a group was accepted")
		}
	})
}
