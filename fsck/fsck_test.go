package fsck_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/maildir"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

type tree struct {
	t   *testing.T
	dir string
}

func newTree(t *testing.T) *tree {
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	tr := &tree{t: t, dir: filepath.Join(t.TempDir(), ".chipset")}
	s, err := maildir.Open(tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "fine"}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// store opens the tree's store, closed when the test ends.
func (tr *tree) store() *maildir.Store {
	tr.t.Helper()
	s, err := maildir.Open(tr.dir)
	if err != nil {
		tr.t.Fatal(err)
	}
	tr.t.Cleanup(func() { s.Close() })
	return s
}

func (tr *tree) path(rel string) string { return filepath.Join(tr.dir, filepath.FromSlash(rel)) }

// put writes a file with a mode and an age.
func (tr *tree) put(rel, content string, mode os.FileMode, age time.Duration) {
	tr.t.Helper()
	p := tr.path(rel)
	os.MkdirAll(filepath.Dir(p), 0o700)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		tr.t.Fatal(err)
	}
	os.Chmod(p, mode)
	t := now.Add(-age)
	os.Chtimes(p, t, t)
}

func (tr *tree) exists(rel string) bool {
	_, err := os.Lstat(tr.path(rel))
	return err == nil
}

func (tr *tree) check(repair bool) map[string]*fsck.Finding {
	tr.t.Helper()
	found, err := fsck.Check(context.Background(), tr.dir, fsck.Options{Repair: repair, Now: func() time.Time { return now }})
	if err != nil {
		tr.t.Fatal(err)
	}
	out := map[string]*fsck.Finding{}
	for _, f := range found {
		key := string(f.Kind) + " " + f.Path
		if out[key] != nil {
			tr.t.Errorf("reported twice: %s", key)
		}
		out[key] = f
	}
	return out
}

func keys(m map[string]*fsck.Finding) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestACleanTreeHasNoFindings(t *testing.T) {
	tr := newTree(t)
	if found := tr.check(false); len(found) != 0 {
		t.Fatalf("findings in a clean tree: %v", keys(found))
	}
}

func TestFindingsAndRepairs(t *testing.T) {
	tr := newTree(t)
	box := "state/mail/toast/"
	msg := `{"from":"mayor","to":"toast","subject":"s"}`
	// Temps: an old one is reported and removed, a fresh one is let be.
	tr.put(box+".mailfs-0000000000000001.tmp", "x", 0o600, 2*time.Hour)
	tr.put(box+".tmp.123", "x", 0o600, 2*time.Hour)
	tr.put(box+".mailfs-0000000000000002.tmp", "x", 0o600, time.Minute)
	// Set-aside files of an interrupted rewrite: one whose name is free
	// (the message moved or went since), one whose name holds the newer
	// content. Both are older copies: quarantined, never put back.
	tr.put(box+".mailfs-swap.2020-01-01T00-00-00Z-a.json", msg, 0o600, time.Minute)
	tr.put(box+".mailfs-swap.2020-01-01T00-00-00Z-b.json", msg, 0o600, time.Minute)
	tr.put(box+"2020-01-01T00-00-00Z-b.json", msg, 0o600, time.Minute)
	// Invalid files, old enough; and one a script may still be writing.
	bad := map[string]string{
		"corrupt.json": `{"from":`, "array.json": `[1]`, "dup.json": `{"a":1,"a":2}`,
		"utf8.json": "{\"from\":\"\xff\"}", "empty.json": ``, "notes.txt": `hi`,
		"huge.json": `{"body":"` + strings.Repeat("x", maildir.MaxSize) + `"}`,
	}
	for name, content := range bad {
		tr.put(box+name, content, 0o600, time.Hour)
	}
	tr.put(box+"writing.json", `{"from":`, 0o600, time.Second)
	// Entries that are not regular files.
	os.Symlink("/etc/passwd", tr.path(box+"link.json"))
	syscall.Mkfifo(tr.path(box+"fifo.json"), 0o600)
	os.Mkdir(tr.path(box+"stray"), 0o700)
	// The same id in the mailbox and the archive: one file twice (an
	// interrupted link-and-unlink move), and two different files.
	tr.put(box+"archive/2020-01-01T00-00-00Z-same.json", msg, 0o600, time.Hour)
	os.Link(tr.path(box+"archive/2020-01-01T00-00-00Z-same.json"), tr.path(box+"2020-01-01T00-00-00Z-same.json"))
	tr.put(box+"archive/2020-01-01T00-00-00Z-two.json", msg, 0o600, time.Hour)
	tr.put(box+"2020-01-01T00-00-00Z-two.json", `{"from":"mayor","to":"toast","subject":"other"}`, 0o600, time.Hour)
	// A message for someone else.
	tr.put(box+"2020-01-01T00-00-00Z-lost.json", `{"from":"mayor","to":"nux","subject":"s"}`, 0o600, time.Hour)
	// Modes too wide.
	tr.put(box+"2020-01-01T00-00-00Z-open.json", msg, 0o644, time.Hour)
	os.MkdirAll(tr.path("state/mail/wide"), 0o755)
	os.Chmod(tr.path("state/mail/wide"), 0o755)
	// Nudges: an orphaned claim, a fresh claim, a file that is not a nudge.
	nudge := `{"expires_at":"2026-06-01T13:00:00Z","message":"m","priority":"normal","sender":"s","timestamp":"2026-06-01T11:00:00Z"}`
	orphan := fmt.Sprintf("0000000000000000001-0000000a.json.claimed.%019d-00000001", now.Add(-10*time.Minute).UnixNano())
	fresh := fmt.Sprintf("0000000000000000002-0000000b.json.claimed.%019d-00000002", now.Add(-time.Minute).UnixNano())
	tr.put("runtime/nudge/toast/"+orphan, nudge, 0o600, time.Hour)
	tr.put("runtime/nudge/toast/"+fresh, nudge, 0o600, time.Hour)
	tr.put("runtime/nudge/toast/0000000000000000003-0000000c.json", `garbage`, 0o600, time.Hour)
	// A broken group.
	tr.put("state/groups/broken.json", `{"members": "not a list"}`, 0o600, time.Hour)

	want := []string{
		"duplicate " + box + "2020-01-01T00-00-00Z-same.json",
		"duplicate " + box + "2020-01-01T00-00-00Z-two.json",
		"invalid " + box + "array.json", "invalid " + box + "corrupt.json", "invalid " + box + "dup.json",
		"invalid " + box + "empty.json", "invalid " + box + "huge.json", "invalid " + box + "notes.txt",
		"invalid " + box + "utf8.json",
		"invalid runtime/nudge/toast/0000000000000000003-0000000c.json",
		"invalid state/groups/broken.json",
		"misdirected " + box + "2020-01-01T00-00-00Z-lost.json",
		"neglected state/mail/toast",
		"not-regular " + box + "fifo.json", "not-regular " + box + "link.json", "not-regular " + box + "stray",
		"orphan-claim runtime/nudge/toast/" + orphan,
		"permissions " + box + "2020-01-01T00-00-00Z-open.json",
		"permissions state/mail/wide",
		"swap " + box + ".mailfs-swap.2020-01-01T00-00-00Z-a.json",
		"swap " + box + ".mailfs-swap.2020-01-01T00-00-00Z-b.json",
		"temp " + box + ".mailfs-0000000000000001.tmp",
		"temp " + box + ".tmp.123",
	}
	slices.Sort(want)
	found := tr.check(false)
	if got := keys(found); !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range found {
		if f.Repaired {
			t.Fatalf("repaired without --repair: %s", f)
		}
	}
	if !tr.exists(box + ".mailfs-0000000000000001.tmp") {
		t.Fatal("a check without repair changed the tree")
	}

	found = tr.check(true)
	unrepaired := []string{}
	for k, f := range found {
		if !f.Repaired {
			unrepaired = append(unrepaired, k)
		}
	}
	slices.Sort(unrepaired)
	wantLeft := sorted(
		"duplicate "+box+"2020-01-01T00-00-00Z-two.json",
		"invalid state/groups/broken.json",
		"misdirected "+box+"2020-01-01T00-00-00Z-lost.json",
		"neglected state/mail/toast",
		"not-regular "+box+"fifo.json", "not-regular "+box+"link.json", "not-regular "+box+"stray",
	)
	if !slices.Equal(unrepaired, wantLeft) {
		t.Fatalf("left unrepaired:\n%s\nwant:\n%s", strings.Join(unrepaired, "\n"), strings.Join(wantLeft, "\n"))
	}
	// What each repair did.
	for rel, present := range map[string]bool{
		box + ".mailfs-0000000000000001.tmp":                               false,
		box + ".mailfs-0000000000000002.tmp":                               true,  // fresh: left
		box + "2020-01-01T00-00-00Z-a.json":                                false, // never put back
		box + "quarantine/.mailfs-swap.2020-01-01T00-00-00Z-a.json":        true,
		box + "quarantine/.mailfs-swap.2020-01-01T00-00-00Z-b.json":        true,
		box + "corrupt.json":                                               false,
		box + "quarantine/corrupt.json":                                    true,
		box + "quarantine/corrupt.json.reason":                             true,
		box + "quarantine/huge.json":                                       true,
		box + "writing.json":                                               true, // too young to judge
		box + "2020-01-01T00-00-00Z-same.json":                             false,
		box + "archive/2020-01-01T00-00-00Z-same.json":                     true,
		box + "2020-01-01T00-00-00Z-two.json":                              true,
		"runtime/nudge/toast/0000000000000000001-0000000a.json":            true, // the orphan, returned
		"runtime/nudge/toast/" + fresh:                                     true,
		"runtime/nudge/toast/quarantine/0000000000000000003-0000000c.json": true,
	} {
		if tr.exists(rel) != present {
			t.Errorf("%s: present %v, want %v", rel, !present, present)
		}
	}
	if a := found["invalid "+box+"corrupt.json"].Action; a != "moved to "+box+"quarantine/corrupt.json" {
		t.Errorf("the repair says %q", a)
	}
	if b, _ := os.ReadFile(tr.path(box + "quarantine/corrupt.json")); string(b) != `{"from":` {
		t.Errorf("the quarantined file changed: %q", b)
	}
	if b, _ := os.ReadFile(tr.path(box + "quarantine/corrupt.json.reason")); !strings.Contains(string(b), "invalid JSON") {
		t.Errorf("reason file: %q", b)
	}
	for rel, want := range map[string]os.FileMode{box + "2020-01-01T00-00-00Z-open.json": 0o600, "state/mail/wide": 0o700} {
		if fi, _ := os.Stat(tr.path(rel)); fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
	}
	// A second repair finds only what needs a person.
	if got := keys(tr.check(true)); !slices.Equal(got, wantLeft) {
		t.Fatalf("second pass:\n%s", strings.Join(got, "\n"))
	}
}

func TestQuarantineNeverReplaces(t *testing.T) {
	tr := newTree(t)
	box := "state/mail/toast/"
	tr.put(box+"quarantine/bad.json", "the first", 0o600, time.Hour)
	tr.put(box+"bad.json", "the second", 0o600, time.Hour)
	tr.check(true)
	for rel, want := range map[string]string{box + "quarantine/bad.json": "the first", box + "quarantine/bad.json.2": "the second"} {
		if b, err := os.ReadFile(tr.path(rel)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", rel, b, err, want)
		}
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// A Gas Town claim ("<nudge>.claimed.<8 hex>") names no time and keeps the
// nudge's old mtime: fsck judges it by the time of its rename (its ctime),
// so a fresh claim of an aged nudge is no orphan, and a dead one is
// reported with its true age.
func TestGasTownClaimJudgedByItsRename(t *testing.T) {
	tr := newTree(t)
	nudge := `{"expires_at":"2026-06-01T13:00:00Z","message":"m","priority":"normal","sender":"s","timestamp":"2026-06-01T11:00:00Z"}`
	name := "1780000000000000000-a1b2c3d4.json"
	tr.put("runtime/nudge/toast/"+name, nudge, 0o600, 0)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(tr.path("runtime/nudge/toast/"+name), old, old)
	claim := name + ".claimed.deadbeef"
	if err := os.Rename(tr.path("runtime/nudge/toast/"+name), tr.path("runtime/nudge/toast/"+claim)); err != nil {
		t.Fatal(err)
	}
	check := func(at time.Time) map[string]*fsck.Finding {
		found, err := fsck.Check(context.Background(), tr.dir, fsck.Options{Repair: true, Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*fsck.Finding{}
		for _, f := range found {
			out[string(f.Kind)+" "+f.Path] = f
		}
		return out
	}
	if found := check(time.Now()); found["orphan-claim runtime/nudge/toast/"+claim] != nil || !tr.exists("runtime/nudge/toast/"+claim) {
		t.Fatalf("a live Gas Town claim was taken for an orphan: %v", keys(found))
	}
	f := check(time.Now().Add(10 * time.Minute))["orphan-claim runtime/nudge/toast/"+claim]
	if f == nil || !strings.Contains(f.Detail, "claimed 10m") || !tr.exists("runtime/nudge/toast/"+name) {
		t.Fatalf("a dead Gas Town claim, ten minutes on: %+v", f)
	}
}

// A queue shared with Gas Town through a link is checked where it leads,
// and the link itself is no finding.
func TestSharedNudgeQueueLink(t *testing.T) {
	tr := newTree(t)
	gt := filepath.Join(t.TempDir(), "nudge_queue", "gt-toast")
	os.MkdirAll(gt, 0o700)
	os.WriteFile(filepath.Join(gt, "1780000000000000000-a1b2c3d4.json"), []byte("garbage"), 0o600)
	old := now.Add(-time.Hour)
	os.Chtimes(filepath.Join(gt, "1780000000000000000-a1b2c3d4.json"), old, old)
	tr.put("runtime/nudge/.keep", "", 0o600, time.Hour)
	if err := os.Symlink(gt, tr.path("runtime/nudge/toast")); err != nil {
		t.Fatal(err)
	}
	got := keys(tr.check(false))
	if slices.Contains(got, "not-regular runtime/nudge/toast") || !slices.ContainsFunc(got, func(k string) bool { return strings.HasPrefix(k, "invalid ") && strings.HasSuffix(k, "a1b2c3d4.json") }) {
		t.Fatalf("findings: %v", got)
	}
}

// On a file system without renameat2's flags mailfs renames by link, then
// unlink. Each cut between the two, then fsck --repair, then claim: every
// item is claimed exactly once. (An older copy set aside, which only the
// fallback's claims trip on, is maildir's TestFallbackSwapLeftoverIsPassedOver.)
func TestFallbackCutsAreRepairedThenClaimable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second string // the other name a cut left on the item
		same   bool   // the same file (a link), or an older copy
	}{
		{"a claim's rewrite cut after its first link", ".mailfs-swap.%s", true},
		{"a send cut between link and unlink: a young temp", ".tmp-%s-12345", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			s := tr.store()
			var warned []string
			s.Warn = func(err error) { warned = append(warned, err.Error()) }
			s.CreateQueue("work")
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the one item"})
			if err != nil {
				t.Fatal(err)
			}
			id := sent[0].ID
			item := tr.path("state/queue/work/" + id + ".json")
			second := tr.path("state/queue/work/" + fmt.Sprintf(tc.second, id+".json"))
			if tc.same {
				if err := os.Link(item, second); err != nil {
					t.Fatal(err)
				}
			} else {
				data, _ := os.ReadFile(item)
				os.WriteFile(second, data, 0o600)
			}
			// Before the repair: the item is passed over, with a warning
			// that names it, never claimed twice, never an error.
			_, err = s.Claim(mbox("queue:work"), mbox("toast"))
			if !errors.Is(err, maildir.ErrQueueEmpty) {
				t.Fatalf("claim before the repair: %v, want ErrQueueEmpty (the item passed over)", err)
			}
			if !slices.ContainsFunc(warned, func(w string) bool { return strings.Contains(w, id) }) {
				t.Fatalf("the item was passed over silently: %q", warned)
			}
			found := tr.check(true)
			if len(found) == 0 {
				t.Fatal("fsck found nothing")
			}
			if again := tr.check(false); len(again) != 0 {
				t.Fatalf("after the repair: %v", keys(again))
			}
			m, err := s.Claim(mbox("queue:work"), mbox("toast"))
			if err != nil || m.ID != id {
				t.Fatalf("claim after the repair: %v", err)
			}
			if _, err := s.Claim(mbox("queue:work"), mbox("nux")); !errors.Is(err, maildir.ErrQueueEmpty) {
				t.Fatalf("a second claim: %v, want ErrQueueEmpty", err)
			}
			if st, err := os.Stat(tr.path("state/mail/toast/" + id + ".json")); err != nil || st.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Fatalf("the claimed item: %v, links %v", err, st)
			}
		})
	}
}

func mbox(s string) maildir.Address {
	a, err := maildir.ParseMailbox(s)
	if err != nil {
		panic(err)
	}
	return a
}
