package maildir_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// testStore is a Store in a fresh directory that records its warnings.
type testStore struct {
	*maildir.Store
	dir string

	mu    sync.Mutex
	warns []error
}

func newStore(t testing.TB, opts ...durable.Option) *testStore {
	t.Helper()
	return openStore(t, filepath.Join(t.TempDir(), ".chipset"), opts...)
}

// reopen opens another Store on ts's root, with durable's test seams opts:
// a test prepares a tree with ts, then runs the operation under test with
// faults installed.
func (ts *testStore) reopen(t testing.TB, opts ...durable.Option) *testStore {
	t.Helper()
	return openStore(t, ts.dir, opts...)
}

func openStore(t testing.TB, dir string, opts ...durable.Option) *testStore {
	t.Helper()
	s, err := maildir.OpenWith(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testStore{Store: s, dir: dir}
	maildir.SetNoteFrom(s, 0) // the tests' folders are small: note every send, as big ones do
	s.Warn = func(err error) {
		ts.mu.Lock()
		ts.warns = append(ts.warns, err)
		ts.mu.Unlock()
	}
	t.Cleanup(func() { s.Close() })
	return ts
}

// warnings returns and forgets the warnings so far.
func (ts *testStore) warnings() []error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	w := ts.warns
	ts.warns = nil
	return w
}

func (ts *testStore) path(rel string) string { return filepath.Join(ts.dir, filepath.FromSlash(rel)) }

func (ts *testStore) send(t testing.TB, from, to, subject string) *maildir.Message {
	t.Helper()
	sent, err := ts.Send(&maildir.Message{From: from, To: to, Subject: subject, Body: "body of " + subject})
	if err != nil {
		t.Fatal(err)
	}
	return sent[0]
}

// write puts a file into the tree as a script would.
func (ts *testStore) write(t testing.TB, rel, content string) {
	t.Helper()
	p := ts.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (ts *testStore) read(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(ts.path(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ids(msgs []*maildir.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func TestSendWritesTheSpecFormat(t *testing.T) {
	ts := newStore(t)
	ts.Now = func() time.Time { return time.Date(2026, 3, 5, 10, 30, 0, 123456789, time.UTC) }
	sent, err := ts.Send(&maildir.Message{
		From: "Mayor", To: "gastown/Toast", Subject: "Fix <build> & ship", Body: "Branch: fix\n\nGo.",
		Type: "work_assignment", Priority: maildir.High,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := sent[0]
	const id = "2026-03-05T10-30-00.123456789Z-mayor"
	if m.ID != id || m.Box.String() != "gastown.toast" || m.Path != "state/mail/gastown.toast/"+id+".json" {
		t.Fatalf("sent %q to %q at %q", m.ID, m.Box.String(), m.Path)
	}
	want := `{
  "body": "Branch: fix\n\nGo.",
  "from": "Mayor",
  "priority": "high",
  "read": false,
  "subject": "Fix <build> & ship",
  "thread": "` + id + `",
  "timestamp": "2026-03-05T10:30:00.123456789Z",
  "to": "gastown/Toast",
  "type": "work_assignment"
}
`
	if got := ts.read(t, m.Path); got != want {
		t.Fatalf("file:\n%s\nwant:\n%s", got, want)
	}
}

func TestSendIsDeterministic(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var files []string
	for range 2 {
		ts := newStore(t)
		ts.Now = func() time.Time { return at }
		m := ts.send(t, "a", "b", "same")
		files = append(files, ts.read(t, m.Path))
	}
	if files[0] != files[1] {
		t.Fatalf("same message, different bytes:\n%s\n%s", files[0], files[1])
	}
}

func TestPermissionsIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ts := newStore(t)
	m := ts.send(t, "a", "b", "secret")
	for rel, want := range map[string]fs.FileMode{
		"":             0o700,
		"state":        0o700,
		"state/mail":   0o700,
		"state/mail/b": 0o700,
		m.Path:         0o600,
		".gitignore":   0o600,
	} {
		fi, err := os.Stat(ts.path(rel))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%q: mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
	if _, err := ts.MarkRead(mbox("b"), m.ID); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(ts.path(m.Path)); fi.Mode().Perm() != 0o600 {
		t.Errorf("after mark-read: mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestInitAndGitignore(t *testing.T) {
	ts := newStore(t)
	if err := ts.Init(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(ts.path("state/mail")); err != nil || !fi.IsDir() {
		t.Fatalf("state/mail: %v", err)
	}
	gi := ts.read(t, ".gitignore")
	for _, line := range []string{"/runtime/", ".*", "!/.gitignore"} {
		if !slices.Contains(strings.Split(gi, "\n"), line) {
			t.Errorf(".gitignore lacks %q:\n%s", line, gi)
		}
	}
	// Init is idempotent and keeps a .gitignore the user edited.
	os.WriteFile(ts.path(".gitignore"), []byte("mine\n"), 0o600)
	if err := ts.Init(); err != nil {
		t.Fatal(err)
	}
	if got := ts.read(t, ".gitignore"); got != "mine\n" {
		t.Fatalf(".gitignore replaced: %q", got)
	}
}

func TestReadersOnAMissingRoot(t *testing.T) {
	ts := newStore(t)
	msgs, err := ts.List(mbox("nobody"), maildir.ListOptions{All: true})
	if err != nil || len(msgs) != 0 {
		t.Fatalf("List = %v, %v", msgs, err)
	}
	if c, err := ts.Count(mbox("nobody")); err != nil || c.Total != 0 {
		t.Fatalf("Count = %+v, %v", c, err)
	}
	if _, err := ts.Get(mbox("nobody"), "x"); !errors.Is(err, maildir.ErrNotFound) {
		t.Fatalf("Get = %v", err)
	}
	if _, err := os.Stat(ts.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a reader created the root: %v", err)
	}
}

func TestListOrderFilterLimit(t *testing.T) {
	ts := newStore(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var n int
	ts.Now = func() time.Time { n++; return base.Add(time.Duration(n) * time.Minute) }
	var sent []*maildir.Message
	for _, p := range []maildir.Priority{maildir.Low, maildir.Urgent, maildir.Normal, maildir.High, maildir.Urgent} {
		s, err := ts.Send(&maildir.Message{From: "m", To: "w", Subject: string(p), Priority: p})
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, s[0])
	}
	if _, err := ts.MarkRead(mbox("w"), sent[2].ID); err != nil {
		t.Fatal(err)
	}
	all, _ := ts.List(mbox("w"), maildir.ListOptions{All: true})
	if got, want := ids(all), ids(sent); !slices.Equal(got, want) {
		t.Fatalf("all, oldest first: %v\nwant %v", got, want)
	}
	unread, _ := ts.List(mbox("w"), maildir.ListOptions{})
	if got, want := ids(unread), ids(slices.Delete(slices.Clone(sent), 2, 3)); !slices.Equal(got, want) {
		t.Fatalf("unread: %v\nwant %v", got, want)
	}
	byPri, _ := ts.List(mbox("w"), maildir.ListOptions{All: true, ByPriority: true})
	if got, want := ids(byPri), ids([]*maildir.Message{sent[1], sent[4], sent[3], sent[2], sent[0]}); !slices.Equal(got, want) {
		t.Fatalf("by priority: %v\nwant %v", got, want)
	}
	limited, _ := ts.List(mbox("w"), maildir.ListOptions{All: true, Limit: 2})
	if got, want := ids(limited), ids(sent[:2]); !slices.Equal(got, want) {
		t.Fatalf("limit 2: %v\nwant %v", got, want)
	}
}

func TestSendRefusesBadInputAndWritesNothing(t *testing.T) {
	for name, tc := range map[string]struct {
		m    maildir.Message
		want error
	}{
		"bad recipient":    {maildir.Message{From: "a", To: "../x"}, maildir.ErrInvalidAddress},
		"bad cc":           {maildir.Message{From: "a", To: "b", CC: []string{"c", "/etc"}}, maildir.ErrInvalidAddress},
		"bad sender":       {maildir.Message{From: "a\x00", To: "b"}, maildir.ErrInvalidAddress},
		"no sender":        {maildir.Message{To: "b"}, maildir.ErrInvalidMessage},
		"unknown priority": {maildir.Message{From: "a", To: "b", Priority: "critical"}, maildir.ErrInvalidMessage},
		"two-line subject": {maildir.Message{From: "a", To: "b", Subject: "one\ntwo"}, maildir.ErrInvalidMessage},
		"invalid UTF-8":    {maildir.Message{From: "a", To: "b", Body: "\xff\xfe"}, maildir.ErrInvalidMessage},
		"body over 1 MiB":  {maildir.Message{From: "a", To: "b", Body: strings.Repeat("x", maildir.MaxSize)}, maildir.ErrTooLarge},
		"bad reply_to":     {maildir.Message{From: "a", To: "b", ReplyTo: "../../etc/passwd"}, maildir.ErrInvalidID},
	} {
		t.Run(name, func(t *testing.T) {
			ts := newStore(t)
			if _, err := ts.Send(&tc.m); !errors.Is(err, tc.want) {
				t.Fatalf("Send = %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(ts.dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a refused send touched the disk: %v", err)
			}
		})
	}
}

func TestSymlinkedMailboxIsRefused(t *testing.T) {
	ts := newStore(t)
	ts.Init()
	outside := t.TempDir()
	os.Symlink(outside, ts.path("state/mail/evil"))
	if _, err := ts.Send(&maildir.Message{From: "a", To: "evil"}); err == nil {
		t.Fatal("Send into a symlinked mailbox succeeded")
	}
	os.WriteFile(filepath.Join(outside, "planted.json"), []byte(`{"from":"x","subject":"leak"}`), 0o600)
	if msgs, err := ts.List(mbox("evil"), maildir.ListOptions{All: true}); err == nil || len(msgs) != 0 {
		t.Fatalf("List through the symlink = %v, %v; want an error", msgs, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("the directory outside the root holds %d entries, want only the planted one", len(ents))
	}
}

func TestReadersSkipWhatIsNotAMessage(t *testing.T) {
	ts := newStore(t)
	good := ts.send(t, "a", "b", "good")
	box := "state/mail/b/"
	bad := map[string]string{
		"corrupt.json":  `{"from": "a",`,
		"array.json":    `["not", "an", "object"]`,
		"trailing.json": `{"from": "a"} {"from": "b"}`,
		"dupkey.json":   `{"from": "a", "from": "b"}`,
		"badtype.json":  `{"from": "a", "read": "yes"}`,
		"badcc.json":    `{"from": "a", "cc": ["x", 1]}`,
		"badutf8.json":  "{\"from\": \"\xff\"}",
		"empty.json":    ``,
		"notes.txt":     `hello`,
		"huge.json":     `{"body": "` + strings.Repeat("x", maildir.MaxSize) + `"}`,
	}
	for name, content := range bad {
		ts.write(t, box+name, content)
	}
	ts.write(t, box+".mailfs-123.tmp", `{"half`)
	ts.write(t, box+"sub.json/inner.json", `{}`)
	os.Mkdir(ts.path(box+"subdir"), 0o700)
	os.Symlink(ts.path(good.Path), ts.path(box+"link.json"))
	syscall.Mkfifo(ts.path(box+"fifo.json"), 0o600)
	ts.warnings()

	msgs, err := ts.List(mbox("b"), maildir.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(msgs); !slices.Equal(got, []string{good.ID}) {
		t.Fatalf("listed %v, want only the good message", got)
	}
	warned := map[string]bool{}
	for _, w := range ts.warnings() {
		var se *maildir.SkipError
		if !errors.As(w, &se) {
			t.Fatalf("warning %v is not a SkipError", w)
		}
		warned[se.Path] = true
	}
	for _, name := range []string{"corrupt.json", "array.json", "trailing.json", "dupkey.json", "badtype.json",
		"badcc.json", "badutf8.json", "empty.json", "notes.txt", "huge.json", "sub.json", "subdir", "link.json", "fifo.json"} {
		if !warned[box+name] {
			t.Errorf("no warning named %s", name)
		}
	}
	if warned[box+".mailfs-123.tmp"] || warned[box+"archive"] {
		t.Errorf("warned about a temp or the archive folder: %v", warned)
	}
	for name, content := range bad {
		if got := ts.read(t, box+name); got != content {
			t.Errorf("%s was changed", name)
		}
	}
	if c, _ := ts.Count(mbox("b")); c.Total != 1 || c.Unread != 1 {
		t.Errorf("Count = %+v, want 1 total, 1 unread", c)
	}
}

func TestScriptWrittenFiles(t *testing.T) {
	ts := newStore(t)
	// Keys in another order, read/priority/timestamp missing, unknown keys.
	script := `{"to":"b","subject":"from a script","from":"cron","body":"hi","x-meta":{"n": 1.50, "tags":["a"]},"z":12.000}`
	ts.write(t, "state/mail/b/2026-03-05T10-30-00Z-cron.json", script)
	ts.write(t, "state/mail/b/odd name.json", `{"from":"sh","subject":"no stamp"}`)
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	os.Chtimes(ts.path("state/mail/b/odd name.json"), old, old)

	msgs, err := ts.List(mbox("b"), maildir.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Fatalf("listed %d messages, want 2 (warnings %v)", len(msgs), ts.warnings())
	}
	odd, cron := msgs[0], msgs[1] // the mtime (2020) sorts before the stamp (2026)
	if odd.ID != "odd name" || !odd.Timestamp.Equal(old) {
		t.Errorf("timestamp from mtime: %q %v", odd.ID, odd.Timestamp)
	}
	if cron.Read || cron.Priority != maildir.Normal || !cron.Timestamp.Equal(time.Date(2026, 3, 5, 10, 30, 0, 0, time.UTC)) {
		t.Errorf("defaults: read %v priority %q timestamp %v", cron.Read, cron.Priority, cron.Timestamp)
	}
	if string(cron.Extra["z"]) != "12.000" {
		t.Errorf("extra z = %s", cron.Extra["z"])
	}

	// Mark read: only "read" changes; every other value keeps its bytes.
	if _, err := ts.MarkRead(mbox("b"), cron.ID); err != nil {
		t.Fatal(err)
	}
	got := ts.read(t, cron.Path)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got), &obj); err != nil {
		t.Fatal(err)
	}
	for key, raw := range map[string]string{
		"x-meta": `{"n": 1.50, "tags":["a"]}`, "z": "12.000", "read": "true",
		"to": `"b"`, "from": `"cron"`, "subject": `"from a script"`, "body": `"hi"`,
	} {
		if string(obj[key]) != raw {
			t.Errorf("after mark-read %s = %s, want %s", key, obj[key], raw)
		}
	}
	if _, ok := obj["priority"]; ok {
		t.Errorf("mark-read added keys the script left out:\n%s", got)
	}
	if !strings.HasPrefix(got, "{\n  \"body\": \"hi\",\n") || !strings.HasSuffix(got, "\n}\n") {
		t.Errorf("rewrite is not sorted and indented:\n%s", got)
	}
}

func TestMarkWritesNothingWhenAlreadyInState(t *testing.T) {
	ts := newStore(t)
	m := ts.send(t, "a", "b", "s")
	st1, _ := os.Stat(ts.path(m.Path))
	ino := func(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
	if _, err := ts.MarkUnread(mbox("b"), m.ID); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(ts.path(m.Path))
	if ino(st1) != ino(st2) {
		t.Fatal("marking an unread message unread rewrote it")
	}
	if _, err := ts.MarkRead(mbox("b"), m.ID); err != nil {
		t.Fatal(err)
	}
	st3, _ := os.Stat(ts.path(m.Path))
	if ino(st3) == ino(st2) {
		t.Fatal("mark-read did not rewrite the file")
	}
	if _, err := ts.MarkRead(mbox("b"), m.ID); err != nil {
		t.Fatal(err)
	}
	if st4, _ := os.Stat(ts.path(m.Path)); ino(st4) != ino(st3) {
		t.Fatal("marking a read message read rewrote it")
	}
	if got, _ := ts.Get(mbox("b"), m.ID); !got.Read {
		t.Fatal("message not read")
	}
}

func TestMarkFollowsAnArchivedMessage(t *testing.T) {
	ts := newStore(t)
	m := ts.send(t, "a", "b", "s")
	os.MkdirAll(ts.path("state/mail/b/archive"), 0o700)
	archived := "state/mail/b/archive/" + m.ID + ".json"
	os.Rename(ts.path(m.Path), ts.path(archived))
	got, err := ts.MarkRead(mbox("b"), m.ID)
	if err != nil || !got.Archived || !got.Read {
		t.Fatalf("MarkRead = %+v, %v", got, err)
	}
	if _, err := os.Stat(ts.path(m.Path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("mark-read resurrected the archived message in the mailbox")
	}
}

func TestIDResolution(t *testing.T) {
	ts := newStore(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts.Now = func() time.Time { return base }
	a := ts.send(t, "x", "b", "first")
	ts.Now = func() time.Time { return base.Add(time.Hour) }
	b := ts.send(t, "x", "b", "second")

	for _, id := range []string{a.ID, a.ID + ".json", "2026-01-01T00"} {
		if got, err := ts.Get(mbox("b"), id); err != nil || got.ID != a.ID {
			t.Errorf("Get(%q) = %v, %v", id, got, err)
		}
	}
	_, err := ts.Get(mbox("b"), "2026-01-01T0")
	var amb *maildir.AmbiguousError
	if !errors.As(err, &amb) || !errors.Is(err, maildir.ErrAmbiguous) || !slices.Equal(amb.Candidates, []string{a.ID, b.ID}) {
		t.Fatalf("ambiguous prefix: %v", err)
	}
	if !strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), b.ID) {
		t.Errorf("error does not name the candidates: %v", err)
	}
	if _, err := ts.Get(mbox("b"), "2027"); !errors.Is(err, maildir.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := ts.Get(mbox("b"), "../../x"); !errors.Is(err, maildir.ErrInvalidID) {
		t.Errorf("traversal id: %v", err)
	}
}

func TestDelete(t *testing.T) {
	ts := newStore(t)
	m := ts.send(t, "a", "b", "s")
	if err := ts.Delete(mbox("b"), m.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ts.path(m.Path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("still there")
	}
	if err := ts.Delete(mbox("b"), m.ID); !errors.Is(err, maildir.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestCCAndThreads(t *testing.T) {
	ts := newStore(t)
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nux", "Toast", "witness", "nux"}, Subject: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sent); got != 3 {
		t.Fatalf("%d copies, want 3 (toast, nux, witness)", got)
	}
	seen := map[string]bool{}
	for _, c := range sent {
		if seen[c.ID] {
			t.Errorf("two copies share id %s", c.ID)
		}
		seen[c.ID] = true
		if c.Thread != sent[0].ID || !slices.Equal(c.CC, []string{"nux", "witness"}) || c.To != "toast" {
			t.Errorf("copy in %s: thread %q cc %v to %q", c.Box, c.Thread, c.CC, c.To)
		}
	}
	r1, err := ts.Reply(mbox("nux"), sent[1].ID, &maildir.Message{Body: "on it"})
	if err != nil {
		t.Fatal(err)
	}
	reply := r1[0]
	if reply.To != "mayor" || reply.From != "nux" || reply.ReplyTo != sent[1].ID || reply.Thread != sent[0].ID ||
		reply.Subject != "Re: plan" || reply.Type != "reply" {
		t.Fatalf("reply = %+v", reply)
	}
	r2, _ := ts.Reply(mbox("mayor"), reply.ID, &maildir.Message{Body: "thanks"})
	if r2[0].Subject != "Re: plan" {
		t.Errorf("Re: doubled: %q", r2[0].Subject)
	}
	ts.send(t, "mayor", "toast", "unrelated")
	os.MkdirAll(ts.path("state/mail/witness/archive"), 0o700)
	os.Rename(ts.path(sent[2].Path), ts.path("state/mail/witness/archive/"+sent[2].ID+".json"))

	for _, from := range []string{sent[0].ID, reply.ID, r2[0].ID} {
		thread, err := ts.Thread(from)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{sent[0].ID, sent[1].ID, sent[2].ID, reply.ID, r2[0].ID}
		if got := ids(thread); !slices.Equal(got, want) {
			t.Errorf("Thread(%s) = %v\nwant %v", from, got, want)
		}
	}
	if _, err := ts.Thread("nope"); !errors.Is(err, maildir.ErrNotFound) {
		t.Errorf("unknown thread: %v", err)
	}
}

func TestCountAndAgents(t *testing.T) {
	ts := newStore(t)
	for i := range 3 {
		ts.send(t, "a", "b", "s"+string(rune('0'+i)))
	}
	m := ts.send(t, "a", "c", "x")
	ts.MarkRead(mbox("c"), m.ID)
	ts.write(t, "state/mail/b/archive/old.json", `{}`)
	ts.write(t, "state/mail/stray.txt", "x")
	agents, err := ts.Agents()
	if err != nil || !slices.Equal(agents, []string{"b", "c"}) {
		t.Fatalf("Agents = %v, %v", agents, err)
	}
	if c, _ := ts.Count(mbox("b")); c.OldestUnread.IsZero() || c != (maildir.Counts{Box: mbox("b"), Total: 3, Unread: 3, Archived: 1, OldestUnread: c.OldestUnread}) {
		t.Errorf("Count(b) = %+v", c)
	}
	if c, _ := ts.Count(mbox("c")); c != (maildir.Counts{Box: mbox("c"), Total: 1, Unread: 0}) {
		t.Errorf("Count(c) = %+v", c)
	}
	if w := ts.warnings(); len(w) != 1 || !strings.Contains(w[0].Error(), "stray.txt") {
		t.Errorf("warnings %v, want one naming stray.txt", w)
	}
}

func TestParseAndEncodeRoundTrip(t *testing.T) {
	m := &maildir.Message{From: "a", To: "b", Type: "t", Subject: "s", Body: "<b>\u2028",
		Priority: maildir.Low, Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 5, time.UTC), CC: []string{"c"},
		Extra: map[string]json.RawMessage{"k": json.RawMessage(`[1, 2]`)}}
	data := m.Encode()
	if !bytes.Contains(data, []byte("<b>")) {
		t.Errorf("HTML escaped: %s", data)
	}
	back, err := maildir.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Encode(), data) {
		t.Fatalf("round trip changed the bytes:\n%s\n%s", data, back.Encode())
	}
}

// A reply goes to the sender as it wrote itself (Gas City's providers
// reply to original.From), and to the agent even when a group bears the
// sender's name.
func TestReplyGoesToTheSenderAsWritten(t *testing.T) {
	ts := newStore(t)
	sent, err := ts.Send(&maildir.Message{From: "MyRig/Polecat-A", To: "mayor", Subject: "done"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ts.Reply(mbox("mayor"), sent[0].ID, &maildir.Message{Body: "thanks"})
	if err != nil {
		t.Fatal(err)
	}
	if r[0].To != "MyRig/Polecat-A" || r[0].Box.Name != "myrig.polecat-a" {
		t.Fatalf("reply to %q in %s, want to %q in myrig.polecat-a", r[0].To, r[0].Box, "MyRig/Polecat-A")
	}
	if _, err := ts.CreateGroup("deacon", []string{"mayor"}); err != nil {
		t.Fatal(err)
	}
	sent, _ = ts.Send(&maildir.Message{From: "deacon", To: "mayor", Subject: "patrol"})
	r, err = ts.Reply(mbox("mayor"), sent[0].ID, &maildir.Message{Body: "ok"})
	if err != nil || r[0].Box != mbox("deacon") {
		t.Fatalf("reply to a sender a group shares its name with: to %q in %s (%v)", r[0].To, r[0].Box, err)
	}
}

// Arrived is the file's arrival on this machine, whatever the sender's
// clock said; a message no longer there is ErrNotFound.
func TestArrivedIsTheFilesNotTheSenders(t *testing.T) {
	s := newStore(t)
	s.Now = func() time.Time { return time.Now().Add(-24 * time.Hour) } // a sender a day behind
	before := time.Now().Add(-time.Second)                              // the kernel's coarse clock may lag a tick
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "s", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := s.Arrived(sent[0])
	if err != nil {
		t.Fatal(err)
	}
	if at.Before(before) || at.After(time.Now().Add(time.Second)) {
		t.Fatalf("arrived %v, want about now (the stamp says %v)", at, sent[0].Timestamp)
	}
	if err := s.Delete(sent[0].Box, sent[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Arrived(sent[0]); !errors.Is(err, maildir.ErrNotFound) {
		t.Fatalf("arrived of a deleted message: %v, want ErrNotFound", err)
	}
}
