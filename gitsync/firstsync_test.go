package gitsync_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// copyState copies the state tree of root from into root to, as a
// backup, an rsync or a copied disk would: the files, not the repository.
func copyState(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(filepath.Join(from, "state"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
	must(t, err)
}

// placesOf lists where message id is in h's state tree.
func placesOf(t *testing.T, h *host, id string) []string {
	t.Helper()
	var out []string
	for p := range stateFiles(t, h.store) {
		if strings.Contains(p, id) && strings.HasPrefix(p, "state/") && !strings.HasPrefix(p, "state/gone/") {
			out = append(out, p)
		}
	}
	return out
}

// An older copy of the town joins: gamma's root holds alpha's files as
// they were before alpha deleted one message, archived another and
// claimed a queue item, and gamma's first sync meets a remote with a
// history it does not share. Nothing alpha removed or moved comes back,
// nothing is in two places, no item is claimable again, and what gamma
// sent itself before that first sync goes out (issue 39, item 3).
func TestAnOlderCopysFirstSyncBringsNothingBack(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "beta", "gamma")
	a, b, c := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	must(t, a.store.ClaimHome(agent("mayor")))
	must(t, a.store.CreateQueue("work"))
	must(t, a.store.ClaimHome(maildir.Address{Kind: maildir.KindQueue, Name: "work"}))
	a.syncOK(t)
	must(t, b.store.ClaimHome(agent("witness")))
	b.syncOK(t)
	a.syncOK(t)
	del := sendBefore(t, b, "mayor", 1)[0]
	arch := sendBefore(t, b, "mayor", 1)[0]
	ms, err := b.store.Send(&maildir.Message{From: "witness", To: "queue:work", Subject: "the job"})
	must(t, err)
	item := ms[0].ID
	b.syncOK(t)
	a.syncOK(t)

	copyState(t, a.store.Dir(), c.store.Dir()) // the copy, made now

	must(t, a.store.Delete(agent("mayor"), del))
	if _, err := a.store.Archive(agent("mayor"), []string{arch}); err != nil {
		t.Fatal(err)
	}
	if m, err := a.store.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, agent("mayor")); err != nil || m.ID != item {
		t.Fatalf("claim: %v %v", m, err)
	}
	a.syncOK(t)
	nextSecond(t)                            // commit times are whole seconds: a send after the home's sync is in a later one
	own := sendBefore(t, c, "witness", 1)[0] // gamma's own send, before its first sync

	rep := c.syncOK(t)
	if len(rep.Reverted) != 3 {
		t.Errorf("gamma's first sync left %v as the remote has them, want the 3 stale copies", rep.Reverted)
	}
	a.syncOK(t)
	b.syncOK(t)
	c.syncOK(t)
	for _, h := range []*host{a, b, c} {
		if got := placesOf(t, h, del); len(got) != 0 {
			t.Errorf("%s: the deleted message is back at %v", h.name, got)
		}
		if got := placesOf(t, h, arch); len(got) != 1 || !strings.Contains(got[0], "/archive/") {
			t.Errorf("%s: the archived message is at %v, want only in the archive", h.name, got)
		}
		if got := placesOf(t, h, item); len(got) != 1 || got[0] != "state/mail/mayor/"+item+".json" {
			t.Errorf("%s: the claimed item is at %v, want only in mayor's mailbox", h.name, got)
		}
		if _, err := h.store.Get(agent("witness"), own); err != nil {
			t.Errorf("%s: gamma's own send: %v", h.name, err)
		}
	}
}

// Two copies of one town, made before it had homes, each claim every
// home and the same queue item, then sync to a new remote: the first to
// push keeps the homes, and the item ends in exactly one mailbox — never
// claimed twice (issue 39, item 3).
func TestTwoCopiesThatBothClaimedClaimOnce(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "gamma", "delta")
	g, d := tw.hosts["gamma"], tw.hosts["delta"]
	seed, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	must(t, err)
	defer seed.Close()
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, seed.CreateQueue("work"))
	var items []string
	for range 2 {
		ms, err := seed.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
		must(t, err)
		items = append(items, ms[0].ID)
	}
	copyState(t, seed.Dir(), g.store.Dir())
	copyState(t, seed.Dir(), d.store.Dir())
	for _, h := range []*host{g, d} {
		for _, a := range []maildir.Address{work, agent("toast"), agent("nux")} {
			must(t, h.store.ClaimHome(a))
		}
	}
	if m, err := g.store.Claim(work, agent("toast")); err != nil || m.ID != items[0] {
		t.Fatalf("gamma's claim: %v %v", m, err)
	}
	if m, err := d.store.Claim(work, agent("nux")); err != nil || m.ID != items[0] {
		t.Fatalf("delta's claim: %v %v", m, err)
	}
	g.syncOK(t)
	d.syncOK(t)
	g.syncOK(t)
	d.syncOK(t)
	for _, h := range []*host{g, d} {
		if got := placesOf(t, h, items[0]); len(got) != 1 {
			t.Errorf("%s: the item claimed on both copies is at %v, want one place", h.name, got)
		}
		if got := placesOf(t, h, items[1]); len(got) != 1 || !strings.HasPrefix(got[0], "state/queue/work/") {
			t.Errorf("%s: the waiting item is at %v", h.name, got)
		}
	}
	// The loser's claim is undone: the next claim there takes the other item.
	if m, err := g.store.Claim(work, agent("nux")); err != nil || m.ID != items[1] {
		t.Fatalf("the next claim: %v %v", m, err)
	}
}

// An older copy of the town holds a message its home deleted before its
// own first sync, so no tombstone says so: the copy's first sync sets it
// aside under runtime/held (listed by Held), neither pushed — it would
// come back on every host — nor deleted (issue 59, item 4).
func TestAnOlderCopysUnknownMailIsHeldAside(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "gamma")
	a, c := tw.hosts["alpha"], tw.hosts["gamma"]
	must(t, a.store.ClaimHome(agent("mayor")))
	ids := sendBefore(t, a, "mayor", 2)
	copyState(t, a.store.Dir(), c.store.Dir()) // the backup, before the delete
	must(t, a.store.Delete(agent("mayor"), ids[0]))
	a.syncOK(t) // alpha's first sync: the delete was never committed, so never buried
	rep := c.syncOK(t)
	p := "state/mail/mayor/" + ids[0] + ".json"
	if !slices.Equal(rep.Held, []string{p}) {
		t.Errorf("held %v; want %s", rep.Held, p)
	}
	held, err := gitsync.Held(c.store)
	must(t, err)
	if !slices.Equal(held, []string{p}) {
		t.Errorf("Held lists %v", held)
	}
	a.syncOK(t)
	c.syncOK(t)
	for _, h := range []*host{a, c} {
		if got := placesOf(t, h, ids[0]); len(got) > 0 {
			t.Errorf("%s: the deleted message is back at %v", h.name, got)
		}
		if got := placesOf(t, h, ids[1]); len(got) != 1 {
			t.Errorf("%s: the other message is at %v", h.name, got)
		}
	}
}

// A person puts held mail back: an unknown name is refused and nothing
// moves; one already in the tree is refused (a second copy); the named
// message goes back to its path, is pushed by the next sync as any add,
// and arrives on its home (issue 59, item 4: offered to a person).
func TestHeldMailIsPutBack(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "gamma")
	a, c := tw.hosts["alpha"], tw.hosts["gamma"]
	must(t, a.store.ClaimHome(agent("mayor")))
	ids := sendBefore(t, a, "mayor", 3)
	copyState(t, a.store.Dir(), c.store.Dir())
	for _, id := range ids[:2] {
		must(t, a.store.Delete(agent("mayor"), id))
	}
	a.syncOK(t)
	rep := c.syncOK(t)
	ps := []string{"state/mail/mayor/" + ids[0] + ".json", "state/mail/mayor/" + ids[1] + ".json"}
	if !slices.Equal(rep.Held, ps) {
		t.Fatalf("held %v; want %v", rep.Held, ps)
	}
	if got, err := c.sync.RestoreHeld([]string{ids[0], "nosuch"}); !errors.Is(err, gitsync.ErrNotHeld) || got != nil {
		t.Errorf("RestoreHeld of an unknown name = %v, %v; want ErrNotHeld", got, err)
	}
	// A copy of ids[1] in the archive: putting it back would make two.
	dst := filepath.Join(c.store.Dir(), "state", "mail", "mayor", "archive")
	must(t, os.MkdirAll(dst, 0o700))
	must(t, os.WriteFile(filepath.Join(dst, ids[1]+".json"), []byte("{}"), 0o600))
	if got, err := c.sync.RestoreHeld(nil); !errors.Is(err, fs.ErrExist) || got != nil {
		t.Errorf("RestoreHeld of all, one in the archive = %v, %v; want fs.ErrExist", got, err)
	}
	must(t, os.Remove(filepath.Join(dst, ids[1]+".json")))
	if held, err := gitsync.Held(c.store); err != nil || !slices.Equal(held, ps) {
		t.Fatalf("after the refusals Held = %v, %v; want both still held", held, err)
	}
	got, err := c.sync.RestoreHeld([]string{gitsync.HeldDir + "/" + ps[0]})
	if err != nil || !slices.Equal(got, ps[:1]) {
		t.Fatalf("RestoreHeld(%s) = %v, %v", ps[0], got, err)
	}
	if held, err := gitsync.Held(c.store); err != nil || !slices.Equal(held, ps[1:]) {
		t.Errorf("after the restore Held = %v, %v; want %v", held, err, ps[1:])
	}
	c.syncOK(t)
	a.syncOK(t)
	for _, h := range []*host{a, c} {
		if got := placesOf(t, h, ids[0]); !slices.Equal(got, ps[:1]) {
			t.Errorf("%s: the message put back is at %v; want %s", h.name, got, ps[0])
		}
		if got := placesOf(t, h, ids[1]); len(got) > 0 {
			t.Errorf("%s: the message still held is at %v", h.name, got)
		}
	}
}

// nextSecond waits until the clock is in a later whole second than when
// it was called.
func nextSecond(t *testing.T) {
	t.Helper()
	start := time.Now().Unix()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Unix() <= start {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not move on")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
