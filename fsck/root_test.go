package fsck_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/fsck"
	"github.com/mailfs/mailfs/maildir"
)

// A nudge queue shared with Gas Town (a link to its folder) is repaired
// where it leads, and its findings name the folder under the root (Why 4:
// every run said "changed since the scan" and the path lacked its folder).
func TestSharedNudgeQueueIsRepaired(t *testing.T) {
	tr := newTree(t)
	gt := filepath.Join(t.TempDir(), "nudge_queue", "gt-toast")
	os.MkdirAll(gt, 0o700)
	name := "1780000000000000000-a1b2c3d4.json"
	garbage := "1780000000000000001-a1b2c3d5.json"
	claim := name + ".claimed.deadbeef"
	nudge := `{"expires_at":"2026-06-01T13:00:00Z","message":"m","priority":"normal","sender":"s","timestamp":"2026-06-01T11:00:00Z"}`
	os.WriteFile(filepath.Join(gt, claim), []byte(nudge), 0o600)
	os.WriteFile(filepath.Join(gt, garbage), []byte("garbage"), 0o644)
	old := now.Add(-time.Hour)
	os.Chtimes(filepath.Join(gt, garbage), old, old)
	tr.put("runtime/nudge/.keep", "", 0o600, time.Hour)
	if err := os.Symlink(gt, tr.path("runtime/nudge/toast")); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	found, err := fsck.Check(context.Background(), tr.dir, fsck.Options{Repair: true, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"orphan-claim runtime/nudge/toast/" + claim:  true,
		"invalid runtime/nudge/toast/" + garbage:     true,
		"permissions runtime/nudge/toast/" + garbage: true,
	}
	for _, f := range found {
		k := string(f.Kind) + " " + f.Path
		if !want[k] {
			continue
		}
		delete(want, k)
		if !f.Repaired {
			t.Errorf("%s: not repaired: %s", k, f.Action)
		}
	}
	if len(want) != 0 {
		t.Errorf("not found under the link's path: %v (found %v)", want, found)
	}
	if _, err := os.Stat(filepath.Join(gt, name)); err != nil {
		t.Errorf("the orphan is not back in Gas Town's folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(gt, maildir.QuarantineDir, garbage)); err != nil {
		t.Errorf("the invalid nudge is not in the linked folder's quarantine: %v", err)
	}
	// Quarantine is never reported again, nor the repaired rest.
	if again := tr.check(true); len(again) != 0 {
		t.Errorf("a second run: %v", keys(again))
	}
}

// A mailbox's archive quarantine is fsck's own folder: never a finding.
func TestArchiveQuarantineIsNotReported(t *testing.T) {
	tr := newTree(t)
	tr.put("state/mail/toast/archive/1780000000000000000-mayor.json", "garbage", 0o600, time.Hour)
	f := tr.check(true)["invalid state/mail/toast/archive/1780000000000000000-mayor.json"]
	if f == nil || !f.Repaired {
		t.Fatalf("the invalid archived file: %+v", f)
	}
	if again := tr.check(true); len(again) != 0 {
		t.Errorf("a second run reports fsck's own quarantine: %v", keys(again))
	}
}

// A root in a newer format is checked and reported, and nothing in it is
// changed: not a message this mailfs cannot parse, not a temp, not a mode
// (Why 3).
func TestNewerFormatIsCheckedNotRepaired(t *testing.T) {
	tr := newTree(t)
	tr.put("format", "mailfs format 9\n", 0o600, time.Hour)
	tr.put("state/mail/toast/1780000000000000000-mayor.json", `{"v9":"a body this mailfs cannot read"`, 0o644, time.Hour)
	tr.put("state/mail/toast/.mailfs-0123456789abcdef.tmp", "x", 0o600, 2*time.Hour)
	found := tr.check(true)
	f := found["format format"]
	if f == nil || f.Repaired || !strings.Contains(f.Detail, "format 9") || !strings.Contains(f.Detail, "nothing repaired") {
		t.Fatalf("the format finding: %+v (all: %v)", f, keys(found))
	}
	for k, f := range found {
		if f.Repaired {
			t.Errorf("%s repaired in a newer format's root: %s", k, f.Action)
		}
	}
	for _, rel := range []string{"state/mail/toast/1780000000000000000-mayor.json", "state/mail/toast/.mailfs-0123456789abcdef.tmp"} {
		if !tr.exists(rel) {
			t.Errorf("%s was changed", rel)
		}
	}
	if st, _ := os.Stat(tr.path("state/mail/toast/1780000000000000000-mayor.json")); st.Mode().Perm() != 0o644 {
		t.Errorf("a mode was changed: %v", st.Mode())
	}
}

// A damaged format record is a finding; repair rewrites it when every
// message reads, and says what a person must decide when one does not
// (Why 8).
func TestDamagedFormatRecord(t *testing.T) {
	for _, record := range []string{"", "mailfs format two\n", "\x00\x00"} {
		tr := newTree(t)
		tr.put("format", record, 0o600, time.Hour)
		f := tr.check(false)["format format"]
		if f == nil || f.Repaired {
			t.Fatalf("record %q: %+v", record, f)
		}
		s, _ := maildir.Open(tr.dir)
		if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "x"}); err == nil {
			t.Errorf("record %q: a send went through", record)
		}
		s.Close()
		f = tr.check(true)["format format"]
		if f == nil || !f.Repaired {
			t.Fatalf("record %q: repair: %+v", record, f)
		}
		if data, _ := os.ReadFile(tr.path("format")); string(data) != "mailfs format 1\n" {
			t.Errorf("record %q: rewritten as %q", record, data)
		}
		s, _ = maildir.Open(tr.dir)
		if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "x"}); err != nil {
			t.Errorf("record %q: a send after the repair: %v", record, err)
		}
		s.Close()
	}
	// A message that does not parse may be a newer format's: a person
	// decides.
	tr := newTree(t)
	tr.put("format", "", 0o600, time.Hour)
	tr.put("state/mail/toast/1780000000000000000-mayor.json", "{", 0o600, time.Hour)
	f := tr.check(true)["format format"]
	if f == nil || f.Repaired || !strings.Contains(f.Action, "may be in a newer format") {
		t.Fatalf("a damaged record beside an unreadable message: %+v", f)
	}
	if data, _ := os.ReadFile(tr.path("format")); string(data) != "" {
		t.Errorf("rewritten anyway: %q", data)
	}
}

// fsck reads the records of keyed sends: a valid one is no finding; an
// empty one (a power cut), a garbled one and a FIFO are reported, and
// never removed, since a retry of their key must stay refused until a
// person knows whether the send arrived (Why 1, Why 8).
func TestOnceRecordsAreChecked(t *testing.T) {
	tr := newTree(t)
	s, err := maildir.Open(tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.SendOnce(&maildir.Message{From: "mayor", To: "toast", Subject: "once"}, "fine"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	once := maildir.OnceDir + "/"
	tr.put(once+maildir.OnceName("empty"), "", 0o600, time.Hour)
	tr.put(once+maildir.OnceName("garbled"), `{"key":"garbled","sta`, 0o600, time.Hour)
	if err := syscall.Mkfifo(tr.path(once+maildir.OnceName("fifo")), 0o600); err != nil {
		t.Fatal(err)
	}
	found := tr.check(true)
	for _, k := range []string{"invalid " + once + maildir.OnceName("empty"), "invalid " + once + maildir.OnceName("garbled"), "not-regular " + once + maildir.OnceName("fifo")} {
		if f := found[k]; f == nil || f.Repaired {
			t.Errorf("%s: %+v", k, f)
		}
		delete(found, k)
	}
	if len(found) != 0 {
		t.Errorf("other findings: %v", keys(found))
	}
	for _, name := range []string{"empty", "garbled", "fifo", "fine"} {
		if !tr.exists(once + maildir.OnceName(name)) {
			t.Errorf("the record of %q was removed", name)
		}
	}
}

// A temp that is a second name of a message in another folder (a send
// cut between its link and its unlink, the message claimed or archived
// since) is removed, whatever its age, while the message keeps its name;
// a queue item so linked is claimable again (Why 6: every run said
// "changed since the scan", and claims passed over the item for ever).
// The old temp is Why 6's case: on the code before the fix (1213cd9^) its
// finding is "changed since the scan", not repaired, at every run.
func TestTempLinkedToAMessageElsewhereIsRemoved(t *testing.T) {
	for _, age := range []time.Duration{2 * time.Hour, 0} {
		t.Run(fmt.Sprint("age ", age), func(t *testing.T) {
			tr := newTree(t)
			s := tr.store()
			if err := s.CreateQueue("work"); err != nil {
				t.Fatal(err)
			}
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the item"})
			if err != nil {
				t.Fatal(err)
			}
			item := "state/queue/work/" + sent[0].ID + ".json"
			temp := "state/mail/toast/.mailfs-00000000000000aa.tmp"
			if err := os.Link(tr.path(item), tr.path(temp)); err != nil {
				t.Fatal(err)
			}
			if age > 0 { // one file: both names are as old, as fsck's clock (now) sees them
				if err := os.Chtimes(tr.path(item), now.Add(-age), now.Add(-age)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Claim(mbox("queue:work"), mbox("nux")); err == nil {
				t.Fatal("a claim took an item with two names")
			}
			f := tr.check(true)["temp "+temp]
			if f == nil || !f.Repaired {
				t.Fatalf("the temp: %+v", f)
			}
			if tr.exists(temp) || !tr.exists(item) {
				t.Fatalf("after the repair: temp there %v, item there %v", tr.exists(temp), tr.exists(item))
			}
			if m, err := s.Claim(mbox("queue:work"), mbox("nux")); err != nil || m.ID != sent[0].ID {
				t.Fatalf("a claim after the repair: %v", err)
			}
			if again := tr.check(false); len(again) != 0 {
				t.Errorf("a second run: %v", keys(again))
			}
		})
	}
}

// fsck reads every side file mailfs writes (Why 8): a FIFO at a send's
// adds note (a cache: removed), an audit entry that does not parse
// (quarantined, and not reported again), a damaged day of tombstones
// (reported only: removing it could let a deleted message come back);
// good ones are no finding.
func TestSideFilesAreChecked(t *testing.T) {
	tr := newTree(t)
	adds := maildir.IndexDir + "/state~mail~toast.adds"
	os.MkdirAll(tr.path(maildir.IndexDir), 0o700)
	if err := syscall.Mkfifo(tr.path(adds), 0o600); err != nil {
		t.Fatal(err)
	}
	tr.put(maildir.AuditDir+"/1780000000000000000-web.json", `{"action":"release","actor":"web","agent":"toast","at":"2026-06-01T12:00:00Z","item":"x"}`, 0o600, time.Hour)
	tr.put(maildir.AuditDir+"/1780000000000000001-web.json", `{"action":`, 0o600, time.Hour)
	tr.put("state/gone/alpha/2026-05-01.txt", "state/mail/toast/2026-05-01T00-00-00Z-mayor.json\n", 0o600, time.Hour)
	tr.put("state/gone/alpha/2026-05-02.txt", "../../etc/passwd\n", 0o600, time.Hour)
	// The batch form, one file per burying sync: a good batch is no
	// finding, a damaged one is reported like a day file.
	tr.put("state/gone/alpha/2026-05-03/10-00-00.000000000.txt", "state/queue/work/2026-05-03T00-00-00Z-mayor.json\n", 0o600, time.Hour)
	tr.put("state/gone/alpha/2026-05-03/10-00-01.000000000.txt", "state/mail/toast/x\n", 0o600, time.Hour)
	found := tr.check(true)
	for k, repaired := range map[string]bool{
		"not-regular " + adds: true,
		"invalid " + maildir.AuditDir + "/1780000000000000001-web.json": true,
		"invalid state/gone/alpha/2026-05-02.txt":                       false,
		"invalid state/gone/alpha/2026-05-03/10-00-01.000000000.txt":    false,
	} {
		f := found[k]
		if f == nil || f.Repaired != repaired {
			t.Errorf("%s: %+v, want repaired %v", k, f, repaired)
		}
		delete(found, k)
	}
	if len(found) != 0 {
		t.Errorf("other findings: %v", keys(found))
	}
	if tr.exists(adds) || !tr.exists(maildir.AuditDir+"/quarantine/1780000000000000001-web.json") || !tr.exists("state/gone/alpha/2026-05-02.txt") {
		t.Error("the repairs did not do what they said")
	}
	if again := tr.check(true); len(again) != 2 || again["invalid state/gone/alpha/2026-05-02.txt"] == nil {
		t.Errorf("a second run: %v", keys(again))
	}
}
