package maildir_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// The town's print moves at every kind of change to a folder a reader
// shows — a send (a new mailbox too), a mark, an archive, a claim, a
// channel post, a folder of extra's — and not when nothing changed.
func TestPrintMovesAtEveryChange(t *testing.T) {
	ts := newStore(t)
	nudges := "runtime/nudge"
	if err := os.MkdirAll(ts.path(nudges+"/toast"), 0o700); err != nil {
		t.Fatal(err)
	}
	ts.CreateQueue("work")
	ts.CreateChannel("merges", maildir.ChannelChange{})
	sent := ts.send(t, "mayor", "toast", "first").ID
	last := ts.Print(nudges)
	if again := ts.Print(nudges); again != last {
		t.Fatal("the print moved with nothing changed")
	}
	steps := []struct {
		name   string
		folder string
		change func()
	}{
		{"a send to a new mailbox", "state/mail", func() { ts.send(t, "mayor", "nux", "hello") }},
		{"a send", "state/mail/toast", func() { ts.send(t, "mayor", "toast", "again") }},
		{"a mark read", "state/mail/toast", func() {
			if _, err := ts.MarkRead(mbox("toast"), sent); err != nil {
				t.Fatal(err)
			}
		}},
		{"an archive", "state/mail/toast", func() {
			if _, err := ts.Archive(mbox("toast"), []string{sent}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a queue item", "state/queue/work", func() { ts.send(t, "mayor", "queue:work", "job") }},
		{"a claim", "state/queue/work", func() {
			if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a channel post", "state/channel/merges", func() { ts.send(t, "refinery", "channel:merges", "merged") }},
		{"a nudge's file", nudges + "/toast", func() {
			if err := os.WriteFile(ts.path(nudges+"/toast/n.json"), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"a nudge drained", nudges + "/toast", func() {
			if err := os.Remove(ts.path(nudges + "/toast/n.json")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, s := range steps {
		pastTick(t, ts.path(s.folder))
		s.change()
		now := ts.Print(nudges)
		if now == last {
			t.Errorf("%s: the print did not move", s.name)
		}
		last = now
	}
}

// On a file system whose clock ticks, a folder changed within the racy
// window is not settled: its stamp says so, and the town's print taken
// then differs from the print of the same folders once they settle.
func TestStampSettles(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "mayor", "toast", "first")
	maildir.SetCoarseClock(ts.Store)
	maildir.SetRacyWindow(ts.Store, time.Hour)
	stamp, settled, err := ts.Stamp(mbox("toast"), false)
	if err != nil || settled || stamp == (maildir.FolderStamp{}) {
		t.Fatalf("a folder changed just now: %+v settled %v, %v", stamp, settled, err)
	}
	unsettled := ts.Print()
	maildir.SetRacyWindow(ts.Store, -1) // any age is old enough
	again, settled, err := ts.Stamp(mbox("toast"), false)
	if err != nil || !settled || again != stamp {
		t.Fatalf("the same folder, settled: %+v settled %v, %v", again, settled, err)
	}
	if ts.Print() == unsettled {
		t.Error("the print did not move when its folders settled")
	}
	none, settled, err := ts.Stamp(mbox("nobody"), false)
	if err != nil || !settled || none != (maildir.FolderStamp{}) {
		t.Errorf("a mailbox with no folder: %+v %v %v", none, settled, err)
	}
	if _, err := os.Stat(filepath.Join(ts.dir, "state/mail/nobody")); !os.IsNotExist(err) {
		t.Error("Stamp made a folder")
	}
}

// A nudge queue shared with Gas Town is a link to its folder: the print
// stats the folder it leads to, so a nudge Gas Town queues there moves it
// (Why 4: it stated the link, and `mailfs serve` missed those nudges).
func TestPrintFollowsASharedNudgeQueue(t *testing.T) {
	ts := newStore(t)
	nudges := "runtime/nudge"
	if err := os.MkdirAll(ts.path(nudges), 0o700); err != nil {
		t.Fatal(err)
	}
	gt := filepath.Join(t.TempDir(), "nudge_queue", "gt-toast")
	if err := os.MkdirAll(gt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(gt, ts.path(nudges+"/toast")); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour) // the write below moves the folder's mtime, whatever the clock's tick
	os.Chtimes(gt, old, old)
	before := ts.Print(nudges)
	if err := os.WriteFile(filepath.Join(gt, "1780000000000000000-a1b2c3d4.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ts.Print(nudges) == before {
		t.Fatal("a nudge queued in the linked folder did not move the print")
	}
}
