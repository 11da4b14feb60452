package maildir_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// host opens another Store on ts's root acting as host name: two Stores on
// one tree stand for two hosts whose trees git keeps alike.
func (ts *testStore) host(t *testing.T, name string) *testStore {
	t.Helper()
	h := ts.reopen(t)
	h.Host = name
	return h
}

// snapshot returns every file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		out[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Only an object's home host renames, rewrites or deletes its files; the
// refusal names the home host and changes nothing. Sends (adds) work from
// anywhere.
func TestOnlyTheHomeHostChangesAnObject(t *testing.T) {
	ts := newStore(t)
	alpha, beta := ts.host(t, "alpha"), ts.host(t, "beta")
	for _, a := range []string{"witness", "queue:work", "@crew"} {
		if err := beta.ClaimHome(mbox(a)); err != nil {
			t.Fatal(err)
		}
	}
	m := ts.send(t, "mayor", "witness", "hello")
	old := ts.send(t, "mayor", "witness", "old")
	if _, err := beta.Archive(mbox("witness"), []string{old.ID}); err != nil {
		t.Fatal(err)
	}
	if err := beta.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"}); err != nil {
		t.Fatalf("a send from another host is an add, and must work: %v", err)
	}
	if _, err := beta.CreateGroup("crew", []string{"witness"}); err != nil {
		t.Fatal(err)
	}
	claimed, err := beta.Claim(mbox("queue:work"), mbox("witness"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job 2"}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, ts.dir)

	box := mbox("witness")
	refused := map[string]error{}
	_, refused["mark-read"] = alpha.MarkRead(box, m.ID)
	_, refused["mark-unread"] = alpha.MarkUnread(box, m.ID)
	refused["delete"] = alpha.Delete(box, m.ID)
	_, refused["archive"] = alpha.Archive(box, []string{m.ID})
	_, refused["restore"] = alpha.Restore(box, []string{old.ID})
	_, refused["claim"] = alpha.Claim(mbox("queue:work"), mbox("mayor"))
	_, refused["release"] = alpha.Release(box, claimed.ID)
	_, refused["group add"] = alpha.AddMembers("crew", []string{"mayor"})
	_, refused["group remove"] = alpha.RemoveMembers("crew", []string{"witness"})
	refused["group delete"] = alpha.DeleteGroup("crew")
	refused["move home"] = alpha.MoveHome(box, "alpha")
	refused["claim home"] = alpha.ClaimHome(box)
	for op, err := range refused {
		var nh *maildir.NotHomeError
		if !errors.Is(err, maildir.ErrNotHome) || !errors.As(err, &nh) || nh.Home != "beta" || nh.Host != "alpha" {
			t.Errorf("%s on alpha: %v, want a NotHomeError naming beta", op, err)
			continue
		}
		if !strings.Contains(err.Error(), "homed on host beta") {
			t.Errorf("%s: the error does not name the home host: %v", op, err)
		}
	}
	if after := snapshot(t, ts.dir); !equalMaps(before, after) {
		t.Errorf("a refused change changed the tree:\nbefore %v\nafter  %v", before, after)
	}

	// The home host may.
	if _, err := beta.MarkRead(box, m.ID); err != nil {
		t.Errorf("mark-read on the home host: %v", err)
	}
	if _, err := beta.Release(box, claimed.ID); err != nil {
		t.Errorf("release on the home host: %v", err)
	}
	// And may hand the object over.
	if err := beta.MoveHome(box, "alpha"); err != nil {
		t.Fatal(err)
	}
	if err := alpha.Delete(box, m.ID); err != nil {
		t.Errorf("delete on the new home: %v", err)
	}
	if err := beta.Delete(box, old.ID); !errors.Is(err, maildir.ErrNotHome) {
		t.Errorf("delete on the old home after the move: %v", err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A host with no name in a town without homes changes anything (one
// machine); a named host may not change an object with no home, and a
// host with no name may not change one homed somewhere.
func TestHomelessObjectsAndNamelessHosts(t *testing.T) {
	ts := newStore(t)
	m := ts.send(t, "mayor", "witness", "hello")
	if err := ts.MayChange(mbox("witness")); err != nil {
		t.Fatalf("one machine, no names: %v", err)
	}
	if _, err := os.Stat(ts.path(maildir.HomeDir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a town that never named a host has homes: %v", err)
	}
	alpha := ts.host(t, "alpha")
	_, err := alpha.MarkRead(mbox("witness"), m.ID)
	var nh *maildir.NotHomeError
	if !errors.As(err, &nh) || nh.Home != "" || !strings.Contains(err.Error(), "witness has no home host") || strings.Contains(err.Error(), "mailfs ") {
		t.Fatalf("named host, homeless mailbox: %v", err)
	}
	if err := alpha.ClaimHome(mbox("witness")); err != nil {
		t.Fatal(err)
	}
	if err := alpha.ClaimHome(mbox("witness")); err != nil {
		t.Fatalf("claiming again is not an error: %v", err)
	}
	if _, err := ts.MarkRead(mbox("witness"), m.ID); !errors.As(err, &nh) || nh.Home != "alpha" || nh.Host != "" ||
		!strings.Contains(err.Error(), "this host has no name") {
		t.Fatalf("nameless host, homed mailbox: %v", err)
	}
	if _, err := alpha.MarkRead(mbox("witness"), m.ID); err != nil {
		t.Fatal(err)
	}
}

// The host's name lives in runtime/host (never committed); Store.Host
// overrides it; bad names are refused.
func TestLocalHost(t *testing.T) {
	ts := newStore(t)
	if h, err := ts.LocalHost(); err != nil || h != "" {
		t.Fatalf("LocalHost = %q, %v", h, err)
	}
	if err := ts.SetLocalHost("Alpha"); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ts.path(maildir.HostFile))
	if err != nil || string(data) != "alpha\n" {
		t.Fatalf("runtime/host = %q, %v", data, err)
	}
	if h, err := ts.LocalHost(); err != nil || h != "alpha" {
		t.Fatalf("LocalHost = %q, %v", h, err)
	}
	if h, _ := ts.host(t, "beta").LocalHost(); h != "beta" {
		t.Fatalf("Store.Host does not override: %q", h)
	}
	for _, bad := range []string{"", "../x", "a/b", "-x", strings.Repeat("h", 65)} {
		if err := ts.SetLocalHost(bad); !errors.Is(err, maildir.ErrInvalidHost) {
			t.Errorf("SetLocalHost(%q) = %v", bad, err)
		}
	}
}

// Creating a queue, channel or group on a named host homes it there; an
// empty queue whose folder git did not carry (git keeps no empty folders)
// still exists by its record, takes sends and lists.
func TestCreatedObjectsAreHomedAndEmptyQueuesTravel(t *testing.T) {
	ts := newStore(t)
	alpha := ts.host(t, "alpha")
	if err := alpha.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	if err := alpha.CreateChannel("news", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.CreateGroup("crew", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	homes, err := ts.Homes()
	if err != nil || len(homes) != 3 {
		t.Fatalf("Homes = %v, %v", homes, err)
	}
	for _, h := range homes {
		if h.Host != "alpha" {
			t.Errorf("%s homed on %q", h.Object, h.Host)
		}
	}
	// What a clone on another host has: no empty folder.
	if err := os.Remove(ts.path("state/queue/work")); err != nil {
		t.Fatal(err)
	}
	beta := ts.host(t, "beta")
	if !beta.Exists(mbox("queue:work")) {
		t.Fatal("the queue is gone without its folder")
	}
	if qs, _ := beta.Queues(); len(qs) != 1 || qs[0] != "work" {
		t.Fatalf("Queues = %v", qs)
	}
	if _, err := beta.Send(&maildir.Message{From: "m", To: "queue:work", Subject: "job"}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(ts.path("state/queue"))
	if _, err := alpha.Claim(mbox("queue:work"), mbox("a")); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("claim from an empty queue known by its record: %v", err)
	}
}

// ErrUnnamedHost is a narrower ErrNotHome, worded as fmt's "%w: …" would.
func TestErrUnnamedHostIsANotHome(t *testing.T) {
	if !errors.Is(maildir.ErrUnnamedHost, maildir.ErrNotHome) || errors.Is(maildir.ErrNotHome, maildir.ErrUnnamedHost) {
		t.Fatal("ErrUnnamedHost must match ErrNotHome, and not the other way round")
	}
	if got, want := maildir.ErrUnnamedHost.Error(), fmt.Errorf("%w: this host has no name", maildir.ErrNotHome).Error(); got != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
