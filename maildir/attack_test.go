//go:build linux

package maildir_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mailfs/mailfs/maildir"
	"golang.org/x/sys/unix"
)

// A mailbox flipped between a real directory and a symlink to outside the
// root, thousands of times, while senders and readers run: nothing is ever
// written outside, nothing outside is ever read, and every acknowledged
// message is in the real directory. (An even number of flips leaves the
// real directory under its name.)
func TestMailboxFlippedToASymlink(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "m", "toast", "make the mailbox")
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "2020-01-01T00-00-00Z-planted.json"), []byte(`{"from":"attacker","subject":"planted"}`), 0o600)
	box, link := ts.path("state/mail/toast"), ts.path("state/mail/.toast-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var attempts, refused atomic.Int64
	var wg sync.WaitGroup
	flips := 0
	wg.Go(func() {
		defer stop.Store(true)
		// Each flip swaps the names atomically: "toast" is always there,
		// the real directory or the symlink. Flip thousands of times, and
		// until the senders have tried often; stop on an even count.
		for flips = 0; flips < 4000 || attempts.Load() < 400 || flips%2 == 1; flips++ {
			if err := unix.Renameat2(unix.AT_FDCWD, box, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Error(err)
				return
			}
			runtime.Gosched()
		}
	})
	var mu sync.Mutex
	var acked []string
	for g := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				attempts.Add(1)
				sent, err := ts.Send(&maildir.Message{From: "m", To: "toast", Subject: fmt.Sprintf("%d/%d", g, i)})
				if err != nil {
					refused.Add(1)
					continue
				}
				mu.Lock()
				acked = append(acked, sent[0].ID)
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for !stop.Load() {
			msgs, _ := ts.List(mbox("toast"), maildir.ListOptions{All: true})
			for _, m := range msgs {
				if m.Subject == "planted" {
					t.Error("a reader followed the symlink out of the root")
					return
				}
			}
		}
	})
	wg.Wait()
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Fatalf("the directory outside the root holds %d entries, want only the planted one", len(ents))
	}
	for _, id := range acked {
		if _, err := os.Stat(filepath.Join(box, id+".json")); err != nil {
			t.Errorf("acknowledged %s is missing: %v", id, err)
		}
	}
	if refused.Load() == 0 {
		t.Error("no send ever met the symlink: the attack did not happen")
	}
	t.Logf("%d flips; %d sends acknowledged, %d refused", flips, len(acked), refused.Load())
}

// A message file that is a hard link to a file outside: marking it rewrites
// the name, never the file behind it.
func TestHardLinkToOutsideIsNeverWrittenThrough(t *testing.T) {
	ts := newStore(t)
	ts.Init()
	outside := filepath.Join(t.TempDir(), "secret.json")
	orig := `{"from":"x","subject":"a file outside","read":false}`
	os.WriteFile(outside, []byte(orig), 0o600)
	os.MkdirAll(ts.path("state/mail/toast"), 0o700)
	if err := os.Link(outside, ts.path("state/mail/toast/linked.json")); err != nil {
		t.Skip("cannot hard-link across these directories:", err)
	}
	if _, err := ts.MarkRead(mbox("toast"), "linked"); err != nil {
		t.Fatal(err)
	}
	if err := ts.Delete(mbox("toast"), "linked"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(outside); string(b) != orig {
		t.Fatalf("the file outside changed: %s", b)
	}
}

// Folders that are symlinks, wherever they are, are refused.
func TestSymlinkedFoldersAreRefused(t *testing.T) {
	ts := newStore(t)
	m := ts.send(t, "m", "toast", "s")
	outside := t.TempDir()
	os.Symlink(outside, ts.path("state/mail/toast/archive"))
	if errs, err := ts.Archive(mbox("toast"), []string{m.ID}); err == nil && errs[0] == nil {
		t.Fatal("archived into a symlink")
	}
	for _, rel := range []string{maildir.GroupDir, maildir.QueueDir} {
		os.Symlink(outside, ts.path(rel))
	}
	if _, err := ts.CreateGroup("g", []string{"toast"}); err == nil {
		t.Fatal("wrote a group through a symlink")
	}
	if _, err := ts.Send(&maildir.Message{From: "m", To: "queue:work"}); err == nil {
		t.Fatal("queued through a symlink")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("wrote %d entries outside the root", len(ents))
	}
}

// A groups folder that is a symbolic link, even to a folder inside the
// root, is no groups folder: a bare name that only a file behind the link
// bears is still the agent's.
func TestExistsNeverFollowsALink(t *testing.T) {
	ts := newStore(t)
	ts.write(t, "state/elsewhere/deacon.json", `{"members": ["mayor"]}`)
	if err := os.Symlink("elsewhere", ts.path("state/groups")); err != nil {
		t.Fatal(err)
	}
	a, err := ts.Resolve("deacon")
	if err != nil || a.Kind != maildir.KindAgent {
		t.Fatalf("Resolve(deacon) = %v, %v; want the agent: the group behind the link does not exist", a, err)
	}
}

// ReadFile hands on a message's bytes only from a regular file reached
// without following a link: "watch --exec" reads through it.
func TestReadFileRefusesALink(t *testing.T) {
	ts := newStore(t)
	outside := filepath.Join(t.TempDir(), "secret.json")
	os.WriteFile(outside, []byte(`{"from": "x", "subject": "secret"}`), 0o600)
	m := ts.send(t, "mayor", "toast", "hello")
	if data, err := ts.ReadFile(mbox("toast"), m.ID); err != nil || !strings.Contains(string(data), `"subject": "hello"`) {
		t.Fatalf("ReadFile = %q, %v", data, err)
	}
	os.Remove(ts.path(m.Path))
	if err := os.Symlink(outside, ts.path(m.Path)); err != nil {
		t.Fatal(err)
	}
	data, err := ts.ReadFile(mbox("toast"), m.ID)
	if err == nil || strings.Contains(string(data), "secret") {
		t.Fatalf("ReadFile of a link = %q, %v; want an error and nothing read", data, err)
	}
}
