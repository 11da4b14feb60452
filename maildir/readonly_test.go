package maildir_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// Reading a root creates nothing in it outside runtime/: not the format
// record, not the .gitignore (a root another mailfs made, one a person
// copied), whatever the readers' caches keep (What to build 7: a read-only
// count created the format record).
func TestReadersWriteNoRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	box := filepath.Join(dir, "state", "mail", "toast")
	if err := os.MkdirAll(box, 0o700); err != nil {
		t.Fatal(err)
	}
	msg := `{"id":"1780000000000000000-mayor","from":"mayor","to":"toast","subject":"hi","timestamp":"2026-06-01T12:00:00Z"}`
	if err := os.WriteFile(filepath.Join(box, "1780000000000000000-mayor.json"), []byte(msg), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	for range 2 { // the second from the index the first may have kept
		if n, err := s.Count(toast); err != nil || n.Total != 1 {
			t.Fatalf("count: %+v, %v", n, err)
		}
		if _, err := s.List(toast, maildir.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"format", ".gitignore"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("a reader created %s", name)
		}
	}
	// And a root that does not exist stays so.
	gone := filepath.Join(t.TempDir(), ".chipset")
	s2, _ := maildir.Open(gone)
	defer s2.Close()
	s2.Count(toast)
	if _, err := os.Lstat(gone); err == nil {
		t.Error("a reader created the root")
	}
}

// A FIFO at a mailbox's adds note (the sender's note for readers) never
// hangs a send into that mailbox: the note is opened without blocking and
// only as a regular file, so the send goes on without it (Why 7: the send
// hung after the message was written, before its id was printed, and a
// caller that timed out and retried sent it twice).
func TestAFIFOAtTheAddsNoteNeverHangsASend(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "mayor", "toast", "first")
	note := ts.path("runtime/index/state~mail~toast.adds")
	os.Remove(note)
	if err := syscall.Mkfifo(note, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for i := range 3 {
			if _, err := ts.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("after the fifo ", i)}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		if f, err := os.OpenFile(note, os.O_RDWR, 0); err == nil { // let the send go, so the test ends
			defer f.Close()
		}
		<-done
		t.Fatal("a send into the mailbox hung on the FIFO at its adds note")
	}
	if n, err := ts.Count(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}); err != nil || n.Total != 4 {
		t.Fatalf("count: %+v, %v", n, err)
	}
}

// Readers change nothing but their own cache, and answer the same when
// they may not write even that (What to build 7, "readers write
// nothing"): every reader of the store — listings of a mailbox, its
// archive, a queue and a channel (from the index too), counts, a message
// by id, a search, a thread, the names of folders, groups, homes, claim
// requests, the audit log, the print — run twice on a tree an older
// mailfs made (no format record), leaves every file and folder outside
// runtime/index/ as it was (its content, mode, size, mtime) and makes
// none; with the indexes off ($MAILFS_INDEX=off), with every write
// refused (a read-only mount, a full disk) and on a root in a newer
// format, they leave the whole tree as it was, runtime/index/ included,
// and answer exactly as with the cache.
func TestReadersChangeNothingButTheirCache(t *testing.T) {
	ts := newStore(t)
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	ids := []string{ts.send(t, "mayor", "toast", "one").ID, ts.send(t, "mayor", "toast", "two").ID, ts.send(t, "nux", "toast", "three").ID}
	if _, err := ts.MarkRead(toast, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := first(ts.Archive(toast, ids[1:2])); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Reply(toast, ids[2], &maildir.Message{From: "toast", Body: "a reply"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	if err := ts.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	ts.send(t, "mayor", "queue:work", "an item")
	ts.send(t, "mayor", "channel:merges", "a post")
	queue := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	channel := maildir.Address{Kind: maildir.KindChannel, Name: "merges"}
	match, err := maildir.Filter{Text: "o"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	read := func(s *maildir.Store) string {
		var b strings.Builder
		say := func(what string, v any, err error) { fmt.Fprintf(&b, "%s: %v %v\n", what, v, err) }
		msgs := func(ms []*maildir.Message) []string {
			var out []string
			for _, m := range ms {
				out = append(out, fmt.Sprintf("%s/%s read=%v", m.Box, m.ID, m.Read))
			}
			return out
		}
		for _, box := range []maildir.Address{toast, queue, channel} {
			for _, opt := range []maildir.ListOptions{{}, {All: true}, {All: true, Archived: true}, {All: true, Match: match}} {
				l, err := s.List(box, opt)
				say(fmt.Sprint("list ", box, opt.All, opt.Archived), msgs(l), err)
			}
			// From the index, when it can answer so (with the cache, the
			// second time): as the listing.
			if l, err := s.ListFromIndex(context.Background(), box, 100); !errors.Is(err, maildir.ErrNeedsListing) {
				all, _ := s.List(box, maildir.ListOptions{})
				if fmt.Sprint(msgs(l), err) != fmt.Sprint(msgs(all), nil) {
					say(fmt.Sprint("from the index, unlike the listing, ", box), msgs(l), err)
				}
			}
			n, err := s.Count(box)
			say(fmt.Sprint("count ", box), n, err)
			names, err := s.ReadNames(box)
			say(fmt.Sprint("read names ", box), names, err)
			e, skipped, err := s.Entries(box, false)
			say(fmt.Sprint("entries ", box), fmt.Sprint(e, skipped), err)
		}
		for _, id := range ids {
			m, err := s.Get(toast, id)
			if err == nil {
				say("get", msgs([]*maildir.Message{m}), nil)
			} else {
				say("get", id, err)
			}
			m, err = s.Find(id)
			if err == nil {
				say("find", msgs([]*maildir.Message{m}), nil)
			}
			th, err := s.Thread(id)
			say("thread", msgs(th), err)
		}
		found, err := s.Search(context.Background(), match, nil, true)
		say("search", msgs(found), err)
		for _, f := range []func() ([]string, error){s.Agents, s.Queues, s.Channels, s.Groups} {
			v, err := f()
			say("names", v, err)
		}
		homes, err := s.Homes()
		say("homes", homes, err)
		reqs, err := s.AllRequests()
		say("requests", len(reqs), err)
		audit, err := s.AuditLog(10)
		say("audit", len(audit), err)
		s.Print()
		return b.String()
	}
	snapshot := func() map[string]string {
		out := map[string]string{}
		filepath.WalkDir(ts.dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(ts.dir, p)
			info, err := e.Info()
			if err != nil {
				return err
			}
			v := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
			if info.Mode().IsRegular() {
				data, _ := os.ReadFile(p)
				v += fmt.Sprintf(" %x", sha256.Sum256(data))
			}
			out[filepath.ToSlash(rel)] = v
			return nil
		})
		return out
	}
	changed := func(before, after map[string]string) []string {
		var out []string
		for p, v := range after {
			if before[p] != v {
				out = append(out, p)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				out = append(out, p+" (gone)")
			}
		}
		slices.Sort(out)
		return out
	}
	cache := func(p string) bool { return p == maildir.IndexDir || strings.HasPrefix(p, maildir.IndexDir+"/") }

	// A root an older mailfs made has no format record: a reader makes
	// none.
	if err := os.Remove(ts.path("format")); err != nil {
		t.Fatal(err)
	}
	// With the cache: only the cache changes, however often they read.
	before := snapshot()
	want := read(ts.reopen(t).Store)
	s := ts.reopen(t)
	for range 2 {
		if got := read(s.Store); got != want {
			t.Fatalf("readers answer differently the second time:\n%s\nwant:\n%s", got, want)
		}
	}
	for _, p := range changed(before, snapshot()) {
		if !cache(p) {
			t.Errorf("a reader changed %s", p)
		}
	}

	refused := errors.New("refused")
	for _, c := range []struct {
		name string
		open func() *maildir.Store
	}{
		{"indexes off", func() *maildir.Store { s := ts.reopen(t).Store; s.NoIndex = true; return s }},
		{"every write refused", func() *maildir.Store {
			return ts.reopen(t, durable.WithWriteGuard(func() error { return refused })).Store
		}},
		{"a newer format", func() *maildir.Store {
			if err := os.WriteFile(ts.path("format"), []byte("mailfs format 9\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return ts.reopen(t).Store
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.RemoveAll(ts.path(maildir.IndexDir)); err != nil { // no cache to trust: every reader lists
				t.Fatal(err)
			}
			s := c.open()
			before := snapshot()
			for range 2 {
				if got := read(s); got != want {
					t.Fatalf("readers answer:\n%s\nwant, as with the cache:\n%s", got, want)
				}
			}
			if ch := changed(before, snapshot()); len(ch) != 0 {
				t.Errorf("readers changed %v", ch)
			}
		})
	}
}

// first is the error of a one-id move: the call's, or the id's.
func first(errs []error, err error) error {
	if err == nil && len(errs) > 0 {
		err = errs[0]
	}
	return err
}
