package maildir_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mailfs/mailfs/internal/folderindex"
	"github.com/mailfs/mailfs/maildir"
)

// The folder index (maildir.IndexDir) must never show a stale folder: these
// tests build it, change the files behind its back the way each kind of
// writer does, and compare what the store says with what a store that
// reads every file (NoIndex) says.

var toast = maildir.Address{Kind: maildir.KindAgent, Name: "toast"}

// indexed returns a store with 40 messages for toast, 30 of them read, and
// the ids of the read and unread ones. Its index trusts a folder stamp of
// any age, so a change made right after a listing is seen through the
// stamp, not through the racy rule.
func indexed(t *testing.T) (ts *testStore, read, unread []string) {
	t.Helper()
	ts = newStore(t)
	maildir.SetRacyWindow(ts.Store, -1)
	for i := range 40 {
		m := ts.send(t, "mayor", "toast", fmt.Sprintf("job %d", i))
		if i < 30 {
			if _, err := ts.MarkRead(toast, m.ID); err != nil {
				t.Fatal(err)
			}
			read = append(read, m.ID)
		} else {
			unread = append(unread, m.ID)
		}
	}
	return ts, read, unread
}

// view is what a store says about toast's mailbox: the unread ids, in
// order, the counts, and the names of the read messages.
func view(t *testing.T, s *maildir.Store) string {
	t.Helper()
	msgs, err := s.List(toast, maildir.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Count(toast)
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.ReadNames(toast)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(read)
	return fmt.Sprintf("unread %v; total %d unread %d archived %d; read %v", ids(msgs), c.Total, c.Unread, c.Archived, read)
}

// unreadOf is the unread ids of a view.
func unreadOf(view string) string { return view[:strings.IndexByte(view, ';')] }

// truth is view through a store that reads every file.
func truth(t *testing.T, ts *testStore) string {
	t.Helper()
	return view(t, noIndex(t, ts))
}

// pastTick waits until the file system's clock has moved past the
// folder's ctime, so that a change made now gets a different one even on
// a kernel whose timestamps are coarse (before Linux 6.13). It creates
// probe files until one has a later ctime: a condition, not a guess.
func pastTick(t *testing.T, dir string) {
	t.Helper()
	var st, pst unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "probe")
	for range 100000 {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := unix.Stat(probe, &pst); err != nil {
			t.Fatal(err)
		}
		if pst.Ctim.Nano() > st.Ctim.Nano() {
			return
		}
	}
	t.Fatal("the file system's clock never moved")
}

func messageJSON(from, subject string, read bool) string {
	return fmt.Sprintf(`{"body":"b","from":%q,"priority":"normal","read":%t,"subject":%q,"timestamp":"2026-01-02T03:04:05Z","to":"toast","type":"coordination"}`+"\n", from, read, subject)
}

func TestIndexSeesEveryWriter(t *testing.T) {
	box := func(ts *testStore) string { return ts.path("state/mail/toast") }
	cases := []struct {
		name   string
		before func(t *testing.T, ts *testStore, read, unread []string) // before the index is built
		change func(t *testing.T, ts *testStore, read, unread []string)
	}{
		{name: "mailfs send", change: func(t *testing.T, ts *testStore, _, _ []string) {
			ts.send(t, "nux", "toast", "new work")
		}},
		{name: "mailfs mark-unread", change: func(t *testing.T, ts *testStore, read, _ []string) {
			if _, err := ts.MarkUnread(toast, read[3]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "mailfs mark-read", change: func(t *testing.T, ts *testStore, _, unread []string) {
			if _, err := ts.MarkRead(toast, unread[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a script's mv of a new file", change: func(t *testing.T, ts *testStore, _, _ []string) {
			tmp := filepath.Join(t.TempDir(), "x.json")
			if err := os.WriteFile(tmp, []byte(messageJSON("script", "dropped", false)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(box(ts), "2026-01-02T03-04-05Z-script.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a script's rewrite by temp and rename over", change: func(t *testing.T, ts *testStore, read, _ []string) {
			p := filepath.Join(box(ts), read[5]+".json")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(box(ts), ".rewrite")
			if err := os.WriteFile(tmp, []byte(strings.Replace(string(b), `"read": true`, `"read": false`, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rm of a read message", change: func(t *testing.T, ts *testStore, read, _ []string) {
			if err := os.Remove(filepath.Join(box(ts), read[0]+".json")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a file that was not a message becomes one", before: func(t *testing.T, ts *testStore, _, _ []string) {
			ts.write(t, "state/mail/toast/half.json", `{"from":`)
		}, change: func(t *testing.T, ts *testStore, _, _ []string) {
			// In place: the index never vouched for this file, so it
			// is read at every call.
			if err := os.WriteFile(filepath.Join(box(ts), "half.json"), []byte(messageJSON("script", "done now", false)), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "mailfs restore", before: func(t *testing.T, ts *testStore, _, unread []string) {
			if _, err := ts.Archive(toast, unread[:2]); err != nil {
				t.Fatal(err)
			}
		}, change: func(t *testing.T, ts *testStore, _, unread []string) {
			if _, err := ts.Restore(toast, unread[:2]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "mailfs archive", change: func(t *testing.T, ts *testStore, read, _ []string) {
			if _, err := ts.Archive(toast, read[:4]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "the folder replaced whole", change: func(t *testing.T, ts *testStore, _, _ []string) {
			if err := os.Rename(box(ts), box(ts)+".old"); err != nil {
				t.Fatal(err)
			}
			ts.write(t, "state/mail/toast/2026-01-02T03-04-05Z-nux.json", messageJSON("nux", "fresh start", false))
		}},
		{name: "mtime put back", change: func(t *testing.T, ts *testStore, read, _ []string) {
			fi, err := os.Stat(box(ts))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(box(ts), read[1]+".json")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(box(ts), fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, read, unread := indexed(t)
			if tc.before != nil {
				tc.before(t, ts, read, unread)
			}
			first := view(t, ts.Store) // builds the index
			if want := truth(t, ts); first != want {
				t.Fatalf("before the change:\nindexed %s\ntruth   %s", first, want)
			}
			if again := view(t, ts.Store); again != first { // from the index alone
				t.Fatalf("the index changed the answer:\n%s\n%s", again, first)
			}
			pastTick(t, box(ts))
			tc.change(t, ts, read, unread)
			want := truth(t, ts)
			if want == first {
				t.Fatalf("the change changed nothing: %s", want)
			}
			if got := view(t, ts.Store); got != want {
				t.Fatalf("after the change:\nindexed %s\ntruth   %s", got, want)
			}
			if got := view(t, ts.Store); got != want {
				t.Fatalf("the next call:\nindexed %s\ntruth   %s", got, want)
			}
		})
	}
}

func TestIndexSeesGitCheckout(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ts, read, unread := indexed(t)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = ts.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "town")
	// Mark one read and one unread, index that, then put the committed
	// state back: git unlinks and recreates the files it writes.
	if _, err := ts.MarkRead(toast, unread[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.MarkUnread(toast, read[0]); err != nil {
		t.Fatal(err)
	}
	first := view(t, ts.Store)
	pastTick(t, ts.path("state/mail/toast"))
	git("checkout", "--", "state")
	want := truth(t, ts)
	if want == first {
		t.Fatalf("the checkout changed nothing: %s", want)
	}
	if got := view(t, ts.Store); got != want {
		t.Fatalf("after git checkout:\nindexed %s\ntruth   %s", got, want)
	}
}

// A file the index knows to be read is not opened while the folder is
// unchanged. The proof is the one change the index cannot see then, a
// file rewritten in place (the documented limit): the indexed store keeps
// calling it read until the folder changes, when the listing checks each
// known file's inode and ctime and sees it. Deleting the index, or
// NoIndex, shows it at once.
func TestIndexInPlaceRewrite(t *testing.T) {
	ts, read, _ := indexed(t)
	view(t, ts.Store)
	p := ts.path("state/mail/toast/" + read[7] + ".json")
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	want := truth(t, ts)
	unchanged := view(t, ts.Store)
	if unchanged == want || strings.Contains(unreadOf(unchanged), read[7]) {
		t.Fatalf("the indexed store read a file it knew: %s", unchanged)
	}
	if err := os.RemoveAll(ts.path(maildir.IndexDir)); err != nil {
		t.Fatal(err)
	}
	if got := view(t, ts.Store); got != want {
		t.Fatalf("without the index:\nindexed %s\ntruth   %s", got, want)
	}

	// Once more, and this time the folder changes too: a send, which
	// readers learn of from its note however long after the index was
	// listed, so the rewrite is not seen yet; once the chain of notes is
	// not followed (it ends: maxAdds notes), the send makes the next read
	// list the folder, and it is.
	if _, err := ts.MarkRead(toast, read[7]); err != nil {
		t.Fatal(err)
	}
	maildir.SetNotes(ts.Store, true)
	view(t, ts.Store)
	pastTick(t, ts.path("state/mail/toast")) // past the file's ctime too: it was renamed in
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	newer := ts.send(t, "nux", "toast", "more")
	got, want := view(t, ts.Store), truth(t, ts)
	if got == want || strings.Contains(unreadOf(got), read[7]) || !strings.Contains(unreadOf(got), newer.ID) {
		t.Fatalf("after a noted send:\nindexed %s\ntruth   %s", got, want)
	}
	maildir.SetNotes(ts.Store, false) // the chain ends
	newest := ts.send(t, "nux", "toast", "more again")
	got, want = view(t, ts.Store), truth(t, ts)
	if got != want || !strings.Contains(unreadOf(got), read[7]) || !strings.Contains(unreadOf(got), newest.ID) {
		t.Fatalf("after a send past the chain's end:\nindexed %s\ntruth   %s", got, want)
	}
	// And any other change shows it at once, notes or not.
	if _, err := ts.MarkRead(toast, read[7]); err != nil {
		t.Fatal(err)
	}
	maildir.SetNotes(ts.Store, true)
	view(t, ts.Store)
	pastTick(t, ts.path("state/mail/toast"))
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	if err := os.WriteFile(ts.path("state/mail/toast/2026-01-02T03-04-05Z-script.json"), []byte(messageJSON("script", "dropped", false)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, want := view(t, ts.Store), truth(t, ts); got != want || !strings.Contains(unreadOf(got), read[7]) {
		t.Fatalf("after a script's drop:\nindexed %s\ntruth   %s", got, want)
	}
}

// A verb that names a message leaves the index right about it, even when
// it finds nothing to write: a file rewritten in place to unread, then
// mark-unread (already so), is unread in the next listing; the same for
// mark-read of a file rewritten in place to read.
func TestANoOpMarkRefreshesTheIndex(t *testing.T) {
	ts, read, _ := indexed(t)
	view(t, ts.Store)
	p := ts.path("state/mail/toast/" + read[3] + ".json")
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	if strings.Contains(unreadOf(view(t, ts.Store)), read[3]) {
		t.Fatal("the index saw an in-place rewrite: this test proves nothing")
	}
	m, err := ts.MarkUnread(toast, read[3])
	if err != nil || m.Read {
		t.Fatalf("mark-unread: %+v, %v", m, err)
	}
	if got, want := view(t, ts.Store), truth(t, ts); got != want || !strings.Contains(unreadOf(got), read[3]) {
		t.Fatalf("after a mark-unread that wrote nothing:\nindexed %s\ntruth   %s", got, want)
	}
	rewriteInPlace(t, p, `"read": false`, `"read": true`)
	if _, err := ts.MarkRead(toast, read[3]); err != nil {
		t.Fatal(err)
	}
	if got, want := view(t, ts.Store), truth(t, ts); got != want || strings.Contains(unreadOf(got), read[3]) {
		t.Fatalf("after a mark-read that wrote nothing:\nindexed %s\ntruth   %s", got, want)
	}
}

// With the real racy rule, nothing changed less than maildir.RacyWindow
// ago is taken on the index's word: not the folder's stamp, not a file's
// inode and ctime. Here every file is fresh, so even a rewrite in place
// (which moves nothing the index can see) is seen at the next call.
func TestIndexTrustsNothingFresh(t *testing.T) {
	ts := newStore(t)
	// An hour, not the default second, so that a slow machine cannot let
	// the files age past the window during the test.
	maildir.SetRacyWindow(ts.Store, time.Hour)
	m := ts.send(t, "mayor", "toast", "fresh")
	if _, err := ts.MarkRead(toast, m.ID); err != nil {
		t.Fatal(err)
	}
	ts.send(t, "mayor", "toast", "other")
	first := view(t, ts.Store)
	p := ts.path("state/mail/toast/" + m.ID + ".json")
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	got, want := view(t, ts.Store), truth(t, ts)
	if want == first || got != want {
		t.Fatalf("a fresh folder was trusted:\nbefore  %s\nindexed %s\ntruth   %s", first, got, want)
	}
}

func TestIndexDamagedIsRebuilt(t *testing.T) {
	ts, _, _ := indexed(t)
	want := view(t, ts.Store)
	dir := ts.path(maildir.IndexDir)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("no index written: %v", err)
	}
	p := filepath.Join(dir, "state~mail~toast")
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	nl := strings.IndexByte(string(good), '\n')
	damage := map[string][]byte{
		"empty":          nil,
		"header only":    good[:nl+1],
		"cut short":      good[:len(good)/2],
		"a byte flipped": func() []byte { b := slices.Clone(good); b[len(b)-3] ^= 0x20; return b }(),
		"head flipped":   func() []byte { b := slices.Clone(good); b[nl+3] ^= 0x01; return b }(),
		"not an index":   []byte("hello\n"),
		"huge lengths":   []byte("mailfs-index/2 1 1 1 1 0 ffffffffffff ffffffffff 0 0 0\n"),
		// what the releases that checksummed with CRC-32 wrote
		"the previous release's": previousReleaseIndex(t, good),
	}
	for name, data := range damage {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := view(t, ts.Store); got != want {
				t.Fatalf("with a damaged index:\ngot  %s\nwant %s", got, want)
			}
			if again, _ := os.ReadFile(p); !strings.HasPrefix(string(again), "mailfs-index/2 ") {
				t.Fatalf("the index was not written again: %q", again)
			}
			// and the index written in its place serves the next call
			if got := view(t, ts.Store); got != want {
				t.Fatalf("the rebuilt index: %s", got)
			}
		})
	}
}

// previousReleaseIndex is index, a folder index as this release writes
// it, as the releases before the index's version 2 wrote it: magic
// version 1, the head's and tail's checksums CRC-32 where they are now
// Adler-32.
func previousReleaseIndex(t *testing.T, index []byte) []byte {
	t.Helper()
	line, body, _ := strings.Cut(string(index), "\n")
	f := strings.Fields(line)
	if len(f) != 11 || f[0] != "mailfs-index/2" {
		t.Fatalf("an index header of another shape: %q", line)
	}
	headLen, err1 := strconv.ParseUint(f[7], 16, 64)
	tailLen, err2 := strconv.ParseUint(f[8], 16, 64)
	if err1 != nil || err2 != nil || uint64(len(body)) != headLen+tailLen {
		t.Fatalf("an index of another shape: %q", index)
	}
	f[0] = "mailfs-index/1"
	f[9] = strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body[:headLen]))), 16)
	f[10] = strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body[headLen:]))), 16)
	return []byte(strings.Join(f, " ") + "\n" + body)
}

// Writers race readers that use the index; at every moment a reader's
// answer must be one the folder had, and at the end it must be the truth.
// Read messages are only ever marked unread here and never back, so the
// unread count a reader sees can never go down.
func TestIndexUnderConcurrentWriters(t *testing.T) {
	ts, read, _ := indexed(t)
	maildir.SetRacyWindow(ts.Store, 0) // the real rule
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, id := range read {
			if _, err := ts.MarkUnread(toast, id); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Go(func() {
		for i := range 30 {
			ts.send(t, "nux", "toast", fmt.Sprint("more ", i))
		}
	})
	for range 2 {
		wg.Go(func() {
			s, err := maildir.Open(ts.dir)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			last := 0
			for range 60 {
				c, err := s.Count(toast)
				if err != nil {
					t.Error(err)
					return
				}
				if c.Unread < last || c.Total < 40 {
					t.Errorf("a reader went back: unread %d after %d, total %d", c.Unread, last, c.Total)
				}
				last = c.Unread
			}
		})
	}
	wg.Wait()
	if got, want := view(t, ts.Store), truth(t, ts); got != want {
		t.Fatalf("at the end:\nindexed %s\ntruth   %s", got, want)
	}
}

// The clock probe may call a file system fine only if ctime really moves
// at every change: the test makes its own 300 quick changes of five kinds,
// and if any one left the folder's ctime where it was, the probe must have
// said coarse. It runs on the test's temporary directory and, where there is
// one, on /dev/shm (tmpfs, coarse on the kernels measured).
func TestClockProbeAgreesWithTheFileSystem(t *testing.T) {
	dirs := []string{t.TempDir()}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "mailfs-test-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(shm) })
			dirs = append(dirs, shm)
		}
	}
	for _, dir := range dirs {
		s, err := maildir.Open(filepath.Join(dir, ".chipset"))
		if err != nil {
			t.Fatal(err)
		}
		fine, err := maildir.FineClock(s)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		box := filepath.Join(dir, "box")
		if err := os.Mkdir(box, 0o700); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(box, &st); err != nil {
			t.Fatal(err)
		}
		// Every kind of change the index relies on, 60 times each.
		stuck := map[string]int{}
		a, b := filepath.Join(box, "a"), filepath.Join(box, "b")
		steps := []struct {
			kind string
			do   func() error
		}{
			{"create", func() error { return os.WriteFile(a, nil, 0o600) }},
			{"rename", func() error { return os.Rename(a, b) }},
			{"create again", func() error { return os.WriteFile(a, nil, 0o600) }},
			{"rename over", func() error { return os.Rename(a, b) }},
			{"remove", func() error { return os.Remove(b) }},
		}
		for range 60 {
			for _, step := range steps {
				prev := st.Ctim.Nano()
				if err := step.do(); err != nil {
					t.Fatal(err)
				}
				if err := unix.Stat(box, &st); err != nil {
					t.Fatal(err)
				}
				if st.Ctim.Nano() <= prev {
					stuck[step.kind]++
				}
			}
		}
		t.Logf("%s: probe says fine=%v; changes that left ctime where it was: %v", dir, fine, stuck)
		if fine && len(stuck) > 0 {
			t.Errorf("%s: the probe called the clock fine, but changes left ctime unmoved: %v", dir, stuck)
		}
		// The verdict is kept for the next process.
		data, err := os.ReadFile(filepath.Join(dir, ".chipset", maildir.IndexDir, folderindex.ClockFile))
		if err != nil || !strings.HasSuffix(string(data), map[bool]string{true: "fine\n", false: "coarse\n"}[fine]) {
			t.Errorf("%s: clock file %q (%v)", dir, data, err)
		}
	}
}

// The thread index (runtime/index/<folder>.threads) must never miss a
// message of a thread nor show one that left: a thread spread over
// mailboxes and an archive is changed behind the index's back, and
// Thread through the index must agree with a store that reads every file.
func TestThreadIndexSeesEveryChange(t *testing.T) {
	ts := newStore(t)
	maildir.SetRacyWindow(ts.Store, -1)
	start := ts.send(t, "mayor", "toast", "the plan")
	for i := range 30 {
		ts.send(t, "mayor", fmt.Sprint("polecat", i%3), fmt.Sprint("noise ", i))
	}
	r1, err := ts.ReplyTo(start, &maildir.Message{From: "toast", Body: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := ts.ReplyTo(r1[0], &maildir.Message{From: "mayor", Body: "go", CC: []string{"polecat1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Archive(toast, []string{start.ID}); err != nil {
		t.Fatal(err)
	}
	thread := func(s *maildir.Store) string {
		t.Helper()
		msgs, err := s.Thread(start.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			where := m.Box.String()
			if m.Archived {
				where += "/archive"
			}
			out = append(out, where+"/"+m.ID)
		}
		return strings.Join(out, " ")
	}
	truthOf := func() string { return thread(noIndex(t, ts)) }
	check := func(what string) {
		t.Helper()
		want := truthOf()
		if got := thread(ts.Store); got != want {
			t.Fatalf("%s:\nindexed %s\ntruth   %s", what, got, want)
		}
		if got := thread(ts.Store); got != want { // from the index alone
			t.Fatalf("%s, again:\nindexed %s\ntruth   %s", what, got, want)
		}
	}
	check("built")
	if n := len(strings.Fields(truthOf())); n != 4 { // the plan, two replies, a cc
		t.Fatalf("the thread has %d copies, want 4: %s", n, truthOf())
	}
	changes := []struct {
		name string
		do   func()
	}{
		{"a reply sent", func() {
			if _, err := ts.ReplyTo(r2[0], &maildir.Message{From: "mayor", Body: "and more"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a copy archived", func() {
			errs, err := ts.Archive(mbox("polecat1"), []string{r2[len(r2)-1].ID})
			if err != nil || errs[0] != nil {
				t.Fatal(err, errs)
			}
		}},
		{"the first restored", func() {
			if _, err := ts.Restore(toast, []string{start.ID}); err != nil {
				t.Fatal(err)
			}
		}},
		{"a copy removed", func() {
			if err := os.Remove(ts.path("state/mail/toast/" + r2[0].ID + ".json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a script moves a file of the thread in", func() {
			tmp := filepath.Join(t.TempDir(), "x")
			body := strings.Replace(messageJSON("script", "joins", false), `"read"`, fmt.Sprintf(`"thread":%q,"read"`, start.ID), 1)
			if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, ts.path("state/mail/polecat2/2026-01-02T03-04-05Z-script.json")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a mailbox replaced whole", func() {
			old := filepath.Join(t.TempDir(), "polecat2")
			if err := os.Rename(ts.path("state/mail/polecat2"), old); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(old, "2026-01-02T03-04-05Z-script.json"))
			if err != nil {
				t.Fatal(err)
			}
			ts.write(t, "state/mail/polecat2/2026-01-03T03-04-05Z-script.json", string(b))
		}},
	}
	for _, c := range changes {
		before := truthOf()
		pastTick(t, ts.path("state/mail/toast"))
		c.do()
		if truthOf() == before {
			t.Fatalf("%s changed nothing", c.name)
		}
		check(c.name)
	}

	// While its folder is unchanged, a file the index filed under another
	// thread is not read: one rewritten in place to join the thread is not
	// seen (the documented limit), and is once the index is gone.
	noise, err := ts.List(mbox("polecat0"), maildir.ListOptions{})
	if err != nil || len(noise) == 0 {
		t.Fatal(noise, err)
	}
	pastTick(t, ts.path("state/mail/polecat0"))
	rewriteInPlace(t, ts.path(noise[0].Path), `"thread": "`+noise[0].ID+`"`, `"thread": "`+start.ID+`"`)
	want := truthOf()
	if got := thread(ts.Store); got == want || strings.Contains(got, noise[0].ID) {
		t.Fatalf("the index read a file it had filed: %s", got)
	}
	if err := os.RemoveAll(ts.path(maildir.IndexDir)); err != nil {
		t.Fatal(err)
	}
	if got := thread(ts.Store); got != want {
		t.Fatalf("without the index:\ngot  %s\nwant %s", got, want)
	}
}

// Files too fresh to vouch for are read again, and the folder listed
// again, until they are old enough; then the index vouches for them and
// stops reading them (seen here by a rewrite in place going unnoticed, the
// documented limit). Without that second listing, mail marked read just
// now would be read at every call until the folder next changed.
func TestIndexVouchesOnceFilesAge(t *testing.T) {
	ts := newStore(t)
	const window = 100 * time.Millisecond
	maildir.SetRacyWindow(ts.Store, window)
	m := ts.send(t, "mayor", "toast", "fresh")
	if _, err := ts.MarkRead(toast, m.ID); err != nil {
		t.Fatal(err)
	}
	view(t, ts.Store) // the file is fresh: not vouched for
	time.Sleep(window + 20*time.Millisecond)
	view(t, ts.Store) // lists again: now it is
	p := ts.path("state/mail/toast/" + m.ID + ".json")
	rewriteInPlace(t, p, `"read": true`, `"read": false`)
	if got := view(t, ts.Store); strings.Contains(unreadOf(got), m.ID) {
		t.Fatalf("a file that aged past the window is still read at every call: %s", got)
	}
}

// rewriteInPlace replaces old with new in the file at p by truncating and
// writing it under its own name — the one change the indexes cannot see
// until the folder changes.
func rewriteInPlace(t *testing.T, p, old, new string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// While files are too fresh to vouch for (the racy rules, on here as in
// use), the thread index is not trusted: a message rewritten in place to
// join a thread, which changes nothing in its folder's stat, is found at
// once. (TestThreadIndexSeesEveryChange runs with the racy window off.)
func TestThreadIndexNotTrustedWhileRacy(t *testing.T) {
	ts := newStore(t)
	maildir.SetRacyWindow(ts.Store, time.Hour) // every file is fresh
	plan := ts.send(t, "mayor", "toast", "the plan")
	noise := ts.send(t, "mayor", "toast", "noise")
	ids := func(s *maildir.Store) []string {
		t.Helper()
		msgs, err := s.Thread(plan.ID)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		return out
	}
	if got := ids(ts.Store); len(got) != 1 {
		t.Fatalf("the thread before: %v", got)
	}
	p := ts.path("state/mail/toast/" + noise.ID + ".json")
	rewriteInPlace(t, p, `"thread": "`+noise.Thread+`"`, `"thread": "`+plan.ID+`"`)
	want := ids(noIndex(t, ts))
	if len(want) != 2 {
		t.Fatalf("the rewrite did not join the thread: %v", want)
	}
	if got := ids(ts.Store); !slices.Equal(got, want) {
		t.Fatalf("the index answered while racy: %v, the files say %v", got, want)
	}
}

// A sender's note never hides a change another writer made at the same
// moment: sends race a script's drops and removals into the same
// mailbox, round after round, with the real racy rule; after each round
// the indexed answer (which follows notes where it can) is the full
// scan's. A send that saw another writer's change notes nothing, and the
// reader lists the folder.
func TestNotesNeverHideAConcurrentChange(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "mayor", "toast", "first")
	box := ts.path("state/mail/toast")
	followed, answered := 0, 0
	// What the prompt hook reads on its own goroutine, when the index can
	// answer at all, is the truth too.
	fromIndex := func(r int, when string) {
		t.Helper()
		msgs, err := ts.ListFromIndex(context.Background(), toast, 1000)
		if errors.Is(err, maildir.ErrNeedsListing) {
			return
		}
		answered++
		if got, want := fmt.Sprintf("unread %v", ids(msgs)), unreadOf(truth(t, ts)); err != nil || got != want {
			t.Fatalf("round %d, %s: ListFromIndex %s (%v)\ntruth %s", r, when, got, err, want)
		}
	}
	for r := range 150 {
		var wg sync.WaitGroup
		wg.Go(func() { ts.send(t, "mayor", "toast", fmt.Sprintf("send %d", r)) })
		wg.Go(func() {
			name := fmt.Sprintf("2026-01-02T03-%02d-%02dZ-script.json", r/60, r%60)
			tmp := filepath.Join(box, ".drop")
			if err := os.WriteFile(tmp, []byte(messageJSON("script", fmt.Sprintf("drop %d", r), r%3 == 0)), 0o600); err != nil {
				t.Error(err)
				return
			}
			if err := os.Rename(tmp, filepath.Join(box, name)); err != nil {
				t.Error(err)
			}
			if r%4 == 0 { // and a removal now and then
				if ents, _ := os.ReadDir(box); len(ents) > 3 {
					os.Remove(filepath.Join(box, ents[1].Name()))
				}
			}
		})
		wg.Wait()
		fromIndex(r, "after the race")
		if got, want := view(t, ts.Store), truth(t, ts); got != want {
			t.Fatalf("round %d:\nindexed %s\ntruth   %s", r, got, want)
		}
		// A lone send now: its note is followed (the index was just
		// rebuilt by the view above).
		ts.send(t, "nux", "toast", fmt.Sprintf("alone %d", r))
		fromIndex(r, "after a lone send")
		if got, want := view(t, ts.Store), truth(t, ts); got != want {
			t.Fatalf("round %d, a lone send:\nindexed %s\ntruth   %s", r, got, want)
		}
		// A reader that lists the folder rebuilds the index and drops the
		// notes; one that followed them leaves them.
		if _, err := os.Stat(ts.path(maildir.IndexDir + "/state~mail~toast.adds")); err == nil {
			followed++
		}
	}
	if fine, err := maildir.FineClock(ts.Store); err == nil && fine && (followed == 0 || answered == 0) {
		t.Errorf("%d lone sends left a note, ListFromIndex answered %d times: the notes were never put to the test", followed, answered)
	}
}

// A send notes what it added only to a folder big enough for the note to
// pay (32 KiB of directory): a small one is listed instead.
func TestOnlyBigFoldersAreNoted(t *testing.T) {
	ts := newStore(t)
	maildir.SetNoteFrom(ts.Store, 16<<10)
	adds := ts.path(maildir.IndexDir + "/state~mail~toast.adds")
	ts.send(t, "mayor", "toast", "first")
	view(t, ts.Store)
	ts.send(t, "mayor", "toast", "small")
	if _, err := os.Stat(adds); err == nil {
		t.Fatal("a send to a small folder left a note")
	}
	box := ts.path("state/mail/toast")
	for i := range 600 { // past 16 KiB of directory on any file system here
		name := fmt.Sprintf("2026-01-01T00-00-%02d.%03dZ-script.json", i/1000, i%1000)
		if err := os.WriteFile(filepath.Join(box, name), []byte(messageJSON("script", "filler", true)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(box); err != nil || st.Size() < 16<<10 {
		t.Skipf("the folder is %d bytes with 600 files here: this file system does not size folders by names", st.Size())
	}
	view(t, ts.Store)
	ts.send(t, "mayor", "toast", "big")
	if fine, err := maildir.FineClock(ts.Store); err != nil || !fine {
		t.Skip("a coarse clock: no send is noted at once")
	}
	if _, err := os.Stat(adds); err != nil {
		t.Fatalf("a send to a big folder left no note: %v", err)
	}
	if got, want := view(t, ts.Store), truth(t, ts); got != want {
		t.Fatalf("after the noted send:\nindexed %s\ntruth   %s", got, want)
	}
}

// ListFromIndex answers as List does while the index (and its senders'
// notes) describe the folder and few files are to be read; otherwise it
// says a listing is needed. The prompt hook reads on its own goroutine
// only what it answers.
func TestListFromIndex(t *testing.T) {
	ts, _, unread := indexed(t)
	from := func(ctx context.Context, most int) ([]string, error) {
		msgs, err := ts.ListFromIndex(ctx, toast, most)
		return ids(msgs), err
	}
	needsListing := func(what string, most int) {
		t.Helper()
		if got, err := from(context.Background(), most); !errors.Is(err, maildir.ErrNeedsListing) {
			t.Fatalf("%s: %v, %v; want ErrNeedsListing", what, got, err)
		}
	}
	answers := func(what string, most int) {
		t.Helper()
		got, err := from(context.Background(), most)
		want, _ := ts.List(toast, maildir.ListOptions{})
		if err != nil || !slices.Equal(got, ids(want)) {
			t.Fatalf("%s: %v, %v; want %v", what, got, err, ids(want))
		}
	}
	if err := os.RemoveAll(ts.path(maildir.IndexDir)); err != nil {
		t.Fatal(err)
	}
	needsListing("no index", 100)
	view(t, ts.Store) // lists the folder: the index is made
	answers("a current index", 100)
	answers("exactly enough reads", len(unread))
	needsListing("one read too many", len(unread)-1)
	ts.send(t, "nux", "toast", "noted") // a send notes what it adds
	answers("a noted send", 100)
	// A quiet spell: the index was listed two minutes before the next
	// send. The note is followed all the same: the chain is checked
	// against the folder's stamps, which a quiet spell does not move.
	idx := ts.path(maildir.IndexDir + "/state~mail~toast")
	if fi, err := os.Stat(idx); err != nil {
		t.Fatal(err)
	} else if err := os.Chtimes(idx, fi.ModTime().Add(-2*time.Minute), fi.ModTime().Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	ts.send(t, "nux", "toast", "noted after a quiet spell")
	answers("a noted send two minutes after the listing", 100)
	if err := os.WriteFile(ts.path("state/mail/toast/20260101T000000Z-script-0001.json"),
		[]byte(`{"from":"script","to":"toast","subject":"dropped","timestamp":"2026-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	needsListing("a script's drop", 100)
	view(t, ts.Store)
	answers("listed again", 100)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got, err := from(ctx, 100); !errors.Is(err, context.Canceled) {
		t.Fatalf("a done context: %v, %v; want context.Canceled", got, err)
	}
	answers("after a done context, nothing kept of it", 100)
	if _, err := ts.ListFromIndex(context.Background(), maildir.Address{Kind: maildir.KindQueue, Name: "toast"}, 100); !errors.Is(err, maildir.ErrNeedsListing) {
		t.Fatalf("a queue: %v; want ErrNeedsListing", err)
	}
	ts.NoIndex = true
	needsListing("no index kept", 100)
}
