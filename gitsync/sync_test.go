package gitsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

func agent(name string) maildir.Address { return maildir.Address{Kind: maildir.KindAgent, Name: name} }

// twoHosts is a town of alpha (home of mayor) and beta (home of
// witness), both synced once.
func twoHosts(t *testing.T) (*town, *host, *host) {
	t.Helper()
	tw := newTown(t, "alpha", "beta")
	a, b := tw.hosts["alpha"], tw.hosts["beta"]
	must(t, a.store.ClaimHome(agent("mayor")))
	a.syncOK(t)
	must(t, b.store.ClaimHome(agent("witness")))
	b.syncOK(t)
	a.syncOK(t)
	return tw, a, b
}

func write(t testing.TB, h *host, rel, content string) {
	t.Helper()
	p := filepath.Join(h.store.Dir(), filepath.FromSlash(rel))
	must(t, os.MkdirAll(filepath.Dir(p), 0o700))
	must(t, os.WriteFile(p, []byte(content), 0o600))
}

func read(t *testing.T, h *host, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.store.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A script on each host drops a file of the same name into one mailbox:
// the second host to sync renames its own, carrying its name, and both
// messages survive everywhere.
func TestSameNameAddedOnTwoHostsIsRenamed(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	name := "state/mail/witness/2026-03-05T10-30-00Z-ci.json"
	write(t, a, name, `{"from":"ci","subject":"from alpha"}`+"\n")
	write(t, b, name, `{"from":"ci","subject":"from beta"}`+"\n")
	a.syncOK(t)
	rep := b.syncOK(t)
	renamed := "state/mail/witness/2026-03-05T10-30-00Z-ci-beta.json"
	if !slices.Equal(rep.Renamed, [][2]string{{name, renamed}}) {
		t.Fatalf("renamed %v", rep.Renamed)
	}
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		if !strings.Contains(read(t, h, name), "from alpha") || !strings.Contains(read(t, h, renamed), "from beta") {
			t.Errorf("%s does not have both messages", h.name)
		}
	}
}

// Two hosts claim one home before either syncs: the first to push keeps
// it, and the other's record yields.
func TestHomeClaimedOnTwoHostsGoesToTheFirstPushed(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	must(t, a.store.ClaimHome(agent("nux")))
	must(t, b.store.ClaimHome(agent("nux")))
	a.syncOK(t)
	rep := b.syncOK(t)
	if !slices.Equal(rep.Yielded, []string{"state/homes/agent/nux.json"}) {
		t.Fatalf("yielded %v", rep.Yielded)
	}
	if err := b.store.MayChange(agent("nux")); !errors.Is(err, maildir.ErrNotHome) || !strings.Contains(err.Error(), "homed on host alpha") {
		t.Fatalf("beta after the sync: %v", err)
	}
}

// A group created on two hosts at once cannot be settled by a rule: the
// sync stops before committing anything and names the path; the tree is
// as it was.
func TestGroupCreatedOnTwoHostsStopsTheSync(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	_, err := a.store.CreateGroup("crew", []string{"mayor"})
	must(t, err)
	_, err = b.store.CreateGroup("crew", []string{"witness"})
	must(t, err)
	a.syncOK(t)
	headBefore := gitRun(t, b.store.Dir(), "rev-parse", "HEAD")
	_, err = b.sync.Sync(context.Background())
	var ce *gitsync.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, gitsync.ErrConflict) || !slices.Contains(ce.Paths, "state/groups/crew.json") {
		t.Fatalf("sync = %v", err)
	}
	if got := gitRun(t, b.store.Dir(), "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("HEAD moved: %s -> %s", headBefore, got)
	}
	if !strings.Contains(read(t, b, "state/groups/crew.json"), "witness") {
		t.Error("beta's group was changed")
	}
	// Settled by a person (beta drops its group): the next sync works.
	must(t, os.Remove(filepath.Join(b.store.Dir(), "state/groups/crew.json")))
	must(t, os.Remove(filepath.Join(b.store.Dir(), "state/homes/group/crew.json")))
	b.syncOK(t)
	if !strings.Contains(read(t, b, "state/groups/crew.json"), "mayor") {
		t.Error("alpha's group did not arrive")
	}
}

// A change made by hand to another host's object (mailfs refuses it) is
// found before anything is merged: the sync stops, names the path and the
// rule, and changes nothing; put back, the next sync goes through.
func TestOffHomeChangeByHandIsNamedAndNothingChanges(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	sent, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "hi"})
	must(t, err)
	b.syncOK(t)
	a.syncOK(t)
	rel := "state/mail/witness/" + sent[0].ID + ".json"
	write(t, a, rel, `{"edited":"on alpha"}`+"\n")
	headBefore := gitRun(t, a.store.Dir(), "rev-parse", "HEAD")
	_, err = a.sync.Sync(context.Background())
	var ce *gitsync.ConflictError
	if !errors.As(err, &ce) || !slices.Equal(ce.Paths, []string{rel}) || !strings.Contains(ce.Why, "homed on another") || !strings.Contains(ce.Fix, "checkout HEAD -- PATH") {
		t.Fatalf("sync = %v", err)
	}
	if got := gitRun(t, a.store.Dir(), "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("HEAD moved: %s -> %s", headBefore, got)
	}
	if got := read(t, a, rel); got != `{"edited":"on alpha"}`+"\n" {
		t.Errorf("the file was changed: %q", got)
	}
	gitRun(t, a.store.Dir(), "checkout", "HEAD", "--", rel)
	a.syncOK(t)
}

// Two hosts change the same file that no home rules (the root's
// .gitignore, by hand): the second sync stops with the path, the fix,
// and git's words whole; HEAD, the tree and the file stay as they were,
// and no conflict marker is ever written.
func TestBothChangedStopsWithNothingChanged(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	write(t, a, ".gitignore", read(t, a, ".gitignore")+"# alpha\n")
	write(t, b, ".gitignore", read(t, b, ".gitignore")+"# beta\n")
	a.syncOK(t)
	headBefore := gitRun(t, b.store.Dir(), "rev-parse", "HEAD")
	_, err := b.sync.Sync(context.Background())
	var ce *gitsync.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, gitsync.ErrConflict) || !slices.Equal(ce.Paths, []string{".gitignore"}) || ce.Fix == "" {
		t.Fatalf("sync = %v", err)
	}
	if got := gitRun(t, b.store.Dir(), "rev-parse", "HEAD"); got != headBefore {
		t.Errorf("HEAD moved: %s -> %s", headBefore, got)
	}
	if got := read(t, b, ".gitignore"); !strings.HasSuffix(got, "# beta\n") {
		t.Errorf("beta's change is not kept as it was: %q", got)
	}
	if log := gitRun(t, b.store.Dir(), "log", "-p", "--all"); strings.Contains(log, "<<<<<<<") {
		t.Error("a conflict marker was committed")
	}
	// Settled by taking alpha's version: the next sync works.
	gitRun(t, b.store.Dir(), "checkout", "origin/main", "--", ".gitignore")
	b.syncOK(t)
}

// A conflict's fix runs as written, also where the remote deleted (or
// moved) the path: the hint says rm for those, never a checkout of a path
// the remote no longer has.
func TestConflictHintRunsAsWritten(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	write(t, a, ".gitignore", read(t, a, ".gitignore")+"# alpha\n")
	write(t, a, "notes.txt", "alpha's notes\n")
	a.syncOK(t)
	b.syncOK(t)
	// alpha changes .gitignore again and deletes notes.txt; beta changes both.
	write(t, a, ".gitignore", read(t, a, ".gitignore")+"# alpha again\n")
	must(t, os.Remove(filepath.Join(a.store.Dir(), "notes.txt")))
	a.syncOK(t)
	write(t, b, ".gitignore", read(t, b, ".gitignore")+"# beta\n")
	write(t, b, "notes.txt", "beta's notes\n")
	_, err := b.sync.Sync(context.Background())
	var ce *gitsync.ConflictError
	if !errors.As(err, &ce) || len(ce.Paths) != 2 {
		t.Fatalf("sync = %v", err)
	}
	_, take, ok := strings.Cut(ce.Fix, "to take the remote's, ")
	take, _, _ = strings.Cut(take, ", then mailfs sync")
	if !ok || !strings.Contains(take, "rm -- notes.txt") || strings.Contains(take, "-- notes.txt .gitignore") {
		t.Fatalf("the fix: %q", ce.Fix)
	}
	if out, err := exec.Command("sh", "-c", take).CombinedOutput(); err != nil {
		t.Fatalf("the fix as written: %v\n%s", err, out)
	}
	b.syncOK(t)
	if _, err := os.Stat(filepath.Join(b.store.Dir(), "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("notes.txt is back: %v", err)
	}
	if !strings.HasSuffix(read(t, b, ".gitignore"), "# alpha again\n") {
		t.Fatalf("beta did not take alpha's .gitignore")
	}
}

// Agents keep working while a sync runs: at every step of the cycle an
// agent sends, marks read, archives and a script drops a file. Every one
// of those writes is still there when the sync returns, and the next
// sync carries them to the other host.
func TestWritesDuringASyncAreKept(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	for i := range 30 {
		_, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: fmt.Sprintf("old %d", i)})
		must(t, err)
	}
	b.syncOK(t)
	_, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "from alpha"})
	must(t, err)
	a.syncOK(t)

	type acked struct{ sent, read, archived []string }
	var done acked
	steps := 0
	b.sync.Progress = func(step string) {
		steps++
		ms, err := b.store.List(agent("witness"), maildir.ListOptions{})
		must(t, err)
		sent, err := b.store.Send(&maildir.Message{From: "nux", To: "witness", Subject: "during " + step})
		must(t, err)
		done.sent = append(done.sent, sent[0].ID)
		if len(ms) >= 2 {
			_, err = b.store.MarkRead(agent("witness"), ms[0].ID)
			must(t, err)
			done.read = append(done.read, ms[0].ID)
			_, err = b.store.Archive(agent("witness"), []string{ms[1].ID})
			must(t, err)
			done.archived = append(done.archived, ms[1].ID)
		}
		drop := fmt.Sprintf("2026-01-01T00-00-%02dZ-script.json", steps)
		write(t, b, "state/mail/witness/"+drop, `{"from":"script","subject":"dropped"}`+"\n")
		done.sent = append(done.sent, strings.TrimSuffix(drop, ".json"))
	}
	b.syncOK(t)
	b.sync.Progress = nil
	if steps < 4 {
		t.Fatalf("the sync told %d steps", steps)
	}
	check := func(h *host) {
		t.Helper()
		for _, id := range done.sent {
			if _, err := h.store.Get(agent("witness"), id); err != nil {
				t.Errorf("%s: the send %s made during the sync: %v", h.name, id, err)
			}
		}
		for _, id := range done.read {
			if m, err := h.store.Get(agent("witness"), id); err != nil || !m.Read {
				t.Errorf("%s: the mark of %s made during the sync: %v %v", h.name, id, m, err)
			}
		}
		for _, id := range done.archived {
			if m, err := h.store.Get(agent("witness"), id); err != nil || !m.Archived {
				t.Errorf("%s: the archive of %s made during the sync: %v %v", h.name, id, m, err)
			}
		}
	}
	check(b)
	stateFiles(t, b.store) // modes
	b.syncOK(t)
	a.syncOK(t)
	check(a)
}

// Archived mail older than PruneAfter leaves the working tree of every
// host (its home prunes, the others pull the deletion); recall brings it
// back from history on any host.
func TestPruneAndRecall(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	old, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "old"})
	must(t, err)
	young, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "young"})
	must(t, err)
	for _, m := range []*maildir.Message{old[0], young[0]} {
		_, err := b.store.MarkRead(agent("witness"), m.ID)
		must(t, err)
		_, err = b.store.Archive(agent("witness"), []string{m.ID})
		must(t, err)
	}
	b.syncOK(t) // committed first: only committed mail is pruned
	a.syncOK(t)
	// Alpha is not the home: it prunes nothing of witness's.
	a.sync.PruneAfter, a.sync.Now = time.Hour, func() time.Time { return time.Now().Add(48 * time.Hour) }
	if rep := a.syncOK(t); len(rep.Pruned) != 0 {
		t.Fatalf("alpha pruned %v", rep.Pruned)
	}
	// On beta, "old" is past the age and "young" is not.
	oldStamp, _ := maildir.ParseStamp(old[0].ID + ".json")
	b.sync.PruneAfter, b.sync.Now = time.Hour, func() time.Time { return oldStamp.Add(time.Hour + time.Nanosecond) }
	rep := b.syncOK(t)
	oldPath := "state/mail/witness/archive/" + old[0].ID + ".json"
	if !slices.Equal(rep.Pruned, []string{oldPath}) {
		t.Fatalf("pruned %v", rep.Pruned)
	}
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		if _, err := os.Stat(filepath.Join(h.store.Dir(), oldPath)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still has %s", h.name, oldPath)
		}
		if _, err := h.store.Get(agent("witness"), young[0].ID); err != nil {
			t.Errorf("%s lost the young message: %v", h.name, err)
		}
	}
	p, err := a.sync.Recall(context.Background(), old[0].ID)
	if err != nil || p != oldPath {
		t.Fatalf("Recall = %q, %v", p, err)
	}
	if m, err := a.store.Get(agent("witness"), old[0].ID); err != nil || !m.Archived || m.Subject != "old" {
		t.Fatalf("recalled message: %v %v", m, err)
	}
	if _, err := a.sync.Recall(context.Background(), "2020-01-01T00-00-00Z-nobody"); !errors.Is(err, gitsync.ErrNotInHistory) {
		t.Fatalf("recall of an unknown id: %v", err)
	}
}

// A host with no name does not sync; a repository without a remote says
// how to give one; a root inside another repository gets its own.
func TestSyncRefusesWhatItCannotDoSafely(t *testing.T) {
	t.Parallel()
	needGit(t)
	dir := t.TempDir()
	s, err := maildir.Open(filepath.Join(dir, ".chipset"))
	must(t, err)
	defer s.Close()
	sy := &gitsync.Syncer{Store: s}
	if _, err := sy.Sync(context.Background()); !errors.Is(err, gitsync.ErrNoHost) {
		t.Fatalf("nameless host: %v", err)
	}
	s.Host = "alpha"
	if _, err := sy.Sync(context.Background()); !errors.Is(err, gitsync.ErrNoRemote) {
		t.Fatalf("no remote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused sync left a repository behind: %v", err)
	}
	outer := t.TempDir()
	gitRun(t, outer, "init", "-q")
	s2, err := maildir.Open(filepath.Join(outer, "town", ".chipset"))
	must(t, err)
	defer s2.Close()
	must(t, os.MkdirAll(filepath.Join(outer, "town", ".chipset"), 0o700))
	// A root inside another repository gets a repository of its own.
	s2.Host = "alpha"
	sy2 := &gitsync.Syncer{Store: s2, Remote: filepath.Join(dir, "none.git")}
	gitRun(t, dir, "init", "-q", "--bare", "none.git")
	if _, err := sy2.Sync(context.Background()); err != nil {
		t.Fatalf("a root inside another repository: %v", err)
	}
	if top := strings.TrimSpace(gitRun(t, s2.Dir(), "rev-parse", "--show-toplevel")); top != s2.Dir() {
		t.Fatalf("the root's repository is %s", top)
	}
}

// A message id that arrives where the same id already is (here a hand-made
// copy in the archive, made on the home itself) is reported after the
// pull. The same copy made on another host is a stale copy to the home,
// which holds the message in the object's other folder: it undoes it,
// and names it.
func TestSyncReportsAMessageInTwoPlaces(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	sent, err := b.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "hi"})
	must(t, err)
	b.syncOK(t)
	a.syncOK(t)
	copyPath := "state/mail/witness/archive/" + sent[0].ID + ".json"
	write(t, b, copyPath, read(t, b, "state/mail/witness/"+sent[0].ID+".json"))
	b.syncOK(t)
	rep := a.syncOK(t)
	if len(rep.Duplicates) != 1 || !strings.HasPrefix(rep.Duplicates[0], sent[0].ID+": ") {
		t.Fatalf("duplicates %v", rep.Duplicates)
	}
	must(t, os.Remove(filepath.Join(b.store.Dir(), filepath.FromSlash(copyPath))))
	b.syncOK(t)
	a.syncOK(t)

	write(t, a, copyPath, read(t, a, "state/mail/witness/"+sent[0].ID+".json"))
	a.syncOK(t)
	rep = b.syncOK(t)
	if !slices.Contains(rep.Reverted, copyPath) || len(rep.Duplicates) != 0 {
		t.Fatalf("the home took another host's copy: reverted %v, duplicates %v", rep.Reverted, rep.Duplicates)
	}
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		if got := placesOf(t, h, sent[0].ID); len(got) != 1 {
			t.Errorf("%s: the message is at %v", h.name, got)
		}
	}
}

// A registration travels: an agent added on one host ("mailfs agent add":
// an empty mailbox, which git does not keep, and a home record) is known
// on the other after both sync, and a first send there is no new mailbox.
func TestRegistrationTravels(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	_, err := a.store.AddAgent("newguy")
	must(t, err)
	must(t, a.store.ClaimHome(agent("newguy")))
	a.syncOK(t)
	b.syncOK(t)
	before, err := b.store.Agents()
	must(t, err)
	if !slices.Contains(before, "newguy") {
		t.Fatalf("beta's agents %v lack newguy, registered on alpha", before)
	}
	sent, err := b.store.Send(&maildir.Message{From: "witness", To: "newguy", Subject: "welcome"})
	must(t, err)
	if w := maildir.NewMailboxes(before, sent); len(w) != 0 {
		t.Fatalf("a first send to a registered agent warns: %v", w)
	}
}

// An arriving message whose name a script took in this mailbox while the
// sync ran (after its snapshot, before the arrivals were put in place)
// never replaces the script's file: that one takes a name carrying this
// host, as for any name added on two hosts, and both messages survive.
func TestArrivalMeetsAScriptsDropOfTheSameName(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	sent, err := a.store.Send(&maildir.Message{From: "mayor", To: "witness", Subject: "from alpha"})
	must(t, err)
	a.syncOK(t)
	name := sent[0].ID + ".json"
	drop := `{"from": "cron", "to": "witness", "subject": "the script's", "body": "dropped mid-sync"}` + "\n"
	dropped := false
	b.sync.Progress = func(step string) {
		if strings.HasPrefix(step, "writing the files that arrived") && !dropped {
			dropped = true
			write(t, b, "state/mail/witness/"+name, drop)
		}
	}
	rep := b.syncOK(t)
	b.sync.Progress = nil
	if !dropped {
		t.Fatal("the sync never wrote arrivals: the test proves nothing")
	}
	// This host's file (the script's) takes a name carrying the host, as
	// for any name added on two hosts; the arrival takes the name.
	if len(rep.Renamed) != 1 || rep.Renamed[0][0] != "state/mail/witness/"+name {
		t.Fatalf("renamed %v; want the script's file renamed", rep.Renamed)
	}
	if got := read(t, b, rep.Renamed[0][1]); got != drop {
		t.Fatalf("the script's file is not whole under its new name: %q", got)
	}
	b.syncOK(t) // commits the renamed file
	a.syncOK(t)
	for _, h := range []*host{a, b} {
		msgs, err := h.store.List(agent("witness"), maildir.ListOptions{All: true})
		must(t, err)
		subjects := map[string]bool{}
		for _, m := range msgs {
			subjects[m.Subject] = true
		}
		if !subjects["from alpha"] || !subjects["the script's"] {
			t.Fatalf("%s: witness holds %v; want both messages", h.name, subjects)
		}
	}
}
