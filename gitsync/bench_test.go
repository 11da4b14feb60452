package gitsync_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkSyncCycle is one host's sync cycle — ten new messages and one
// delete committed (the delete buried: a tombstone written), the remote
// fetched, the commit replayed and pushed — with 10k and 100k live files
// in the tree, against its floor: the same cycle as bare git commands
// (add, commit, fetch, rebase, push) on the same repository. The files
// are written and removed outside the timer.
func BenchmarkSyncCycle(b *testing.B) {
	for _, live := range []int{10_000, 100_000} {
		if live > 10_000 && testing.Short() {
			continue
		}
		tw := newTown(b, "alpha")
		h := tw.hosts["alpha"]
		must(b, h.store.ClaimHome(maildir.Address{Kind: maildir.KindAgent, Name: "witness"}))
		fill(b, h.store.Dir(), live)
		must(b, os.MkdirAll(filepath.Join(h.store.Dir(), "state/mail/witness"), 0o700))
		h.syncOK(b)
		n := 0
		path := func(n int) string {
			return filepath.Join(h.store.Dir(), "state/mail/witness", maildir.NewID(time.Unix(1e9, int64(n)), "bench")+".json")
		}
		drop := func(b *testing.B) {
			b.StopTimer()
			if n > 0 {
				must(b, os.Remove(path(n-5))) // one of the last round's, deleted
			}
			for range 10 {
				n++
				must(b, os.WriteFile(path(n), []byte(`{"from":"bench","subject":"s"}`+"\n"), 0o600))
			}
			b.StartTimer()
		}
		b.Run(fmt.Sprintf("live=%dk/mailfs", live/1000), func(b *testing.B) {
			for b.Loop() {
				drop(b)
				h.syncOK(b)
			}
		})
		b.Run(fmt.Sprintf("live=%dk/floor", live/1000), func(b *testing.B) {
			git := func(args ...string) {
				cmd := exec.Command("git", args...)
				cmd.Dir = h.store.Dir()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			for b.Loop() {
				drop(b)
				git("add", "-A")
				git("commit", "-q", "-m", "floor")
				git("fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
				git("rebase", "-q", "origin/main")
				git("push", "-q", "origin", "HEAD:refs/heads/main")
			}
		})
	}
}

// fill writes n messages into ten mailboxes, as fast as the disk takes
// them (no fsync: this is set-up).
func fill(b testing.TB, root string, n int) {
	b.Helper()
	for i := range n {
		dir := filepath.Join(root, "state/mail", fmt.Sprintf("agent%d", i%10))
		if i < 10 {
			must(b, os.MkdirAll(dir, 0o700))
		}
		p := filepath.Join(dir, maildir.NewID(time.Unix(1e9, int64(i)), "fill")+".json")
		must(b, os.WriteFile(p, []byte(fmt.Sprintf(`{"from":"fill","subject":"%d"}`+"\n", i)), 0o600))
	}
}

// BenchmarkFirstSync is a new host's first sync of a town of 10k messages
// (an empty root: every file arrives, written durably), against its
// floor: git clone of the same remote, which writes the same files
// without an fsync.
func BenchmarkFirstSync(b *testing.B) {
	live := 10_000
	if testing.Short() {
		live = 2_000
	}
	tw := newTown(b, "alpha")
	h := tw.hosts["alpha"]
	fill(b, h.store.Dir(), live)
	h.syncOK(b)
	b.Run(fmt.Sprintf("live=%dk/mailfs", live/1000), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), ".chipset")
			s, err := maildir.Open(dir)
			must(b, err)
			s.Host = "beta"
			sy := &gitsync.Syncer{Store: s, Remote: tw.remote}
			b.StartTimer()
			if _, err := sy.Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	b.Run(fmt.Sprintf("live=%dk/floor", live/1000), func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dir := filepath.Join(b.TempDir(), "clone")
			b.StartTimer()
			if out, err := exec.Command("git", "clone", "-q", tw.remote, dir).CombinedOutput(); err != nil {
				b.Fatalf("git clone: %v\n%s", err, out)
			}
		}
	})
}

// BenchmarkFirstPush is the first sync of a host that already holds a
// town of 10k messages, to an empty remote (the repository made, every
// file committed and pushed), against its floor: git init, add, commit
// and push of the same tree.
func BenchmarkFirstPush(b *testing.B) {
	live := 10_000
	if testing.Short() {
		live = 2_000
	}
	run := func(b *testing.B, push func(root, remote string)) {
		for b.Loop() {
			b.StopTimer()
			base := b.TempDir()
			remote := filepath.Join(base, "remote.git")
			if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", remote).CombinedOutput(); err != nil {
				b.Fatalf("%v\n%s", err, out)
			}
			root := filepath.Join(base, ".chipset")
			fill(b, root, live)
			b.StartTimer()
			push(root, remote)
		}
	}
	b.Run(fmt.Sprintf("live=%dk/mailfs", live/1000), func(b *testing.B) {
		run(b, func(root, remote string) {
			s, err := maildir.Open(root)
			must(b, err)
			defer s.Close()
			s.Host = "alpha"
			if _, err := (&gitsync.Syncer{Store: s, Remote: remote}).Sync(context.Background()); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run(fmt.Sprintf("live=%dk/floor", live/1000), func(b *testing.B) {
		run(b, func(root, remote string) {
			for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "floor"}, {"push", "-q", remote, "HEAD:refs/heads/main"}} {
				cmd := exec.Command("git", args...)
				cmd.Dir = root
				cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=f", "GIT_AUTHOR_EMAIL=f@f", "GIT_COMMITTER_NAME=f", "GIT_COMMITTER_EMAIL=f@f")
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
		})
	})
}

// BenchmarkCompaction: a town of three hosts does 10,000 operations —
// sends to each other and to themselves, a script's drops, marks,
// archives, deletes — each host syncing after every 30 of its own, then
// alpha runs mailfs sync --compact and the others sync. It checks that
// every host converges with nothing lost or brought back, and reports
// the remote's packed size before and after (KiB, after git gc), the
// commits replaced and the compacting sync's seconds; and alpha's sync
// cycle (ten new messages and one delete, as BenchmarkSyncCycle) before
// and after the compaction, each timed beside its floor — bare git's
// add, commit, fetch, rebase and push — in the same iterations, so the
// ratio holds on a loaded machine. -short: 600 operations. Run it with
// -benchtime=20x or so: each iteration is one sync and one floor.
func BenchmarkCompaction(b *testing.B) {
	ops := 10_000
	if testing.Short() {
		ops = 600
	}
	tw := newTown(b, "alpha", "beta", "gamma")
	a, be, c := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	hosts := []*host{a, be, c}
	who := map[*host]string{a: "mayor", be: "witness", c: "furiosa"}
	for _, h := range hosts {
		must(b, h.store.ClaimHome(agent(who[h])))
		h.syncOK(b)
	}
	l := newLedger()
	start := time.Now()
	syncs := 0
	// One ledger round is six operations: two sends, a drop, a mark, an
	// archive and a delete; a host syncs after five of its rounds.
	for round := 0; round*6 < ops; round++ {
		h := hosts[round%3]
		l.work(b, h, who[h], who[hosts[(round+1)%3]], 1)
		if (round/3)%5 == 4 {
			h.syncOK(b)
			syncs++
		}
	}
	converge := func() {
		for range 2 {
			for _, h := range hosts {
				h.syncOK(b)
				syncs++
			}
		}
		l.check(b, hosts...)
	}
	converge()
	commits := strings.TrimSpace(gitRun(b, tw.remote, "rev-list", "--count", "main"))
	b.Logf("%d operations, %d syncs in %s: %s commits on the remote, %d messages in the ledger", ops, syncs, time.Since(start).Round(time.Second), commits, len(l.want))

	// A cycle is alpha's sync, timed beside its floor: each iteration
	// runs one of each, so that a machine's load weighs on both alike;
	// ratio is the sync's time over the floor's. The floor runs on a twin
	// of alpha's root and of the remote, copied as they are when the
	// cycles start: run in alpha's own repository, each of its commits
	// and pushes was a person's commit to the sync after it (a branch
	// moved by hand, another's commit to read the town's clock from), not
	// the quiet town these cycles are about.
	twin := func(b *testing.B) (root string) {
		b.StopTimer()
		defer b.StartTimer()
		// Both start packed: a git gc --auto that one of them happens to
		// cross during the timed cycles (the sync's after a push, the
		// floor's git commit) is seconds, and no part of a cycle.
		gitRun(b, a.store.Dir(), "gc", "-q")
		base := b.TempDir()
		root, remote := filepath.Join(base, "alpha"), filepath.Join(base, "remote.git")
		for _, cp := range [][2]string{{a.store.Dir(), root}, {tw.remote, remote}} {
			if out, err := exec.Command("cp", "-a", cp[0], cp[1]).CombinedOutput(); err != nil {
				b.Fatalf("cp -a %s: %v\n%s", cp[0], err, out)
			}
		}
		gitRun(b, root, "remote", "set-url", "origin", remote)
		// The copy's index no longer matches its files' inodes and change
		// times: refreshed here, or the floor's first add reads every file.
		gitRun(b, root, "status", "--porcelain")
		return root
	}
	n := 0
	cycles := func(b *testing.B) {
		floorRoot := twin(b)
		drop := func(b *testing.B, root string) {
			b.StopTimer()
			path := func(n int) string {
				return filepath.Join(root, "state/mail/mayor", maildir.NewID(time.Unix(1e9, int64(n)), "bench")+".json")
			}
			if n > 0 {
				must(b, os.Remove(path(n-5)))
			}
			for i := range 10 {
				must(b, os.WriteFile(path(n+i+1), []byte(`{"from":"bench","subject":"s"}`+"\n"), 0o600))
			}
			b.StartTimer()
		}
		git := func(b *testing.B, args ...string) {
			cmd := exec.Command("git", args...)
			cmd.Dir = floorRoot
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		var sync, floor time.Duration
		for b.Loop() {
			drop(b, a.store.Dir())
			t := time.Now()
			a.syncOK(b)
			sync += time.Since(t)
			drop(b, floorRoot)
			n += 10
			t = time.Now()
			git(b, "add", "-A")
			git(b, "commit", "-q", "-m", "floor")
			git(b, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
			git(b, "rebase", "-q", "origin/main")
			git(b, "push", "-q", "origin", "HEAD:refs/heads/main")
			floor += time.Since(t)
		}
		b.ReportMetric(float64(sync.Milliseconds())/float64(b.N), "sync-ms")
		b.ReportMetric(float64(floor.Milliseconds())/float64(b.N), "floor-ms")
		b.ReportMetric(sync.Seconds()/floor.Seconds(), "ratio")
	}
	b.Run("before", cycles)
	for _, h := range hosts[1:] {
		h.syncOK(b)
	}

	before := packSize(b, tw.remote)
	a.sync.Compact = true
	took := time.Now()
	rep := a.syncOK(b)
	compactS := time.Since(took).Seconds()
	a.sync.Compact = false
	for _, h := range []*host{be, c, a} {
		if rep, err := h.sync.Sync(context.Background()); err != nil {
			b.Fatalf("%s after the compaction: %v", h.name, err)
		} else if len(rep.Renamed)+len(rep.Duplicates) > 0 {
			b.Errorf("%s: renamed %v, duplicates %v", h.name, rep.Renamed, rep.Duplicates)
		}
	}
	converge()
	after := packSize(b, tw.remote)
	if after >= before {
		b.Errorf("the remote's pack did not shrink: %d KiB before, %d KiB after", before, after)
	}
	b.Logf("compacted %d commits (the newest %d listed) in %.2fs: the remote's pack %d KiB before, %d KiB after (%.2fx)", rep.Compacted, rep.Compacted, compactS, before, after, float64(after)/float64(before))

	b.Run("after", func(b *testing.B) {
		cycles(b)
		b.ReportMetric(float64(before), "pack-KiB-before")
		b.ReportMetric(float64(after), "pack-KiB-after")
		b.ReportMetric(float64(rep.Compacted), "commits-replaced")
		b.ReportMetric(compactS, "compact-s")
	})
}
