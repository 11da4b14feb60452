package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkCLI times whole mailfs processes, as hooks and scripts start
// them, against the per-process floor: testdata/floor, a minimal Go
// program making the same system calls, built the same way (static, no
// cgo). Each iteration runs the mailfs process and then the floor's, so
// that both see the same moment of a shared machine; the metrics are each
// one's mean time and their ratio:
//
//   - send: one message, durably, into a mailbox of its own (the floor's
//     too), which grows from empty over the run;
//   - send-big: the same into a mailbox of 2,000 messages, where mailfs
//     also notes its add for readers;
//   - inbox: a mailbox of 10 unread messages;
//   - read: one unread message, printed and marked read (rewritten
//     durably) — a different one each iteration, for each of the two;
//   - check: "check --inject" of a mailbox of 10 read messages and no
//     nudges: nothing to say; check-slim, the same through mailfs-hook;
//   - prompt: the prompt hook (hook prompt-submit) of that mailbox, which
//     also records the turn in the hook's state; prompt-slim, the same
//     through mailfs-hook, as the hooks setup writes run it.
//
// The rows named kong/ time the floor built with kong, which parses the
// call's command line with kong first, against the floor: what kong costs
// a program's start, linked and parsing, in the same ratio (see
// docs/performance.md).
func BenchmarkCLI(b *testing.B) {
	dir := b.TempDir()
	bins := buildCLI(b, dir)
	root := filepath.Join(dir, ".chipset")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ids := map[string][]string{}
	for _, agent := range []string{"unread", "quiet"} {
		box := filepath.Join(root, "state", "mail", agent)
		os.MkdirAll(box, 0o700)
		for i := range 10 {
			m := &maildir.Message{From: "mayor", To: agent, Subject: fmt.Sprintf("WORK gt-%d", i), Body: "Branch: b\n\ndo it",
				Type: "work_assignment", Priority: maildir.Normal, Timestamp: base.Add(time.Duration(i) * time.Second), Read: agent == "quiet"}
			id := maildir.NewID(m.Timestamp, "mayor")
			os.WriteFile(filepath.Join(box, id+".json"), m.Encode(), 0o600)
			ids[agent] = append(ids[agent], id)
		}
	}
	mailfs, slim, floor, floorKong := bins["mailfs"], bins["mailfs-hook"], bins["floor"], bins["floor-kong"]
	pair := func(b *testing.B, mf, fl func(i int) []string) {
		var tm, tf time.Duration
		i := 0
		for b.Loop() {
			tm += runTimed(b, root, mf(i))
			tf += runTimed(b, root, fl(i))
			i++
		}
		b.ReportMetric(float64(tm)/float64(i)/1e6, "mailfs-ms")
		b.ReportMetric(float64(tf)/float64(i)/1e6, "floor-ms")
		b.ReportMetric(float64(tm)/float64(tf), "ratio")
	}
	// Each program sends into a folder of its own, so that both folders
	// hold the same number of files as the run goes on.
	send := func(b *testing.B, to string) {
		start := time.Now() // the floor's ids: new in each run (-count)
		pair(b, func(int) []string {
			return []string{mailfs, "send", to, "--from", "mayor", "-s", "hi", "-m", "there"}
		}, func(i int) []string {
			return []string{floor, "send", root, "floor" + to, maildir.NewID(start.Add(time.Duration(i)), "mayor")}
		})
	}
	b.Run("send", func(b *testing.B) { send(b, "sink") })
	// send-big: into a mailbox of 2,000 messages, where a send also notes
	// what it added for readers (see the folder index's adds log), and
	// pays for the witness that lets it.
	for _, box := range []string{"big", "floorbig"} {
		dir := filepath.Join(root, "state", "mail", box)
		os.MkdirAll(dir, 0o700)
		for i := range 2000 {
			m := &maildir.Message{From: "mayor", To: box, Subject: "old", Body: "b", Read: true, Timestamp: base.Add(time.Duration(i) * time.Second)}
			os.WriteFile(filepath.Join(dir, maildir.NewID(m.Timestamp, "mayor")+".json"), m.Encode(), 0o600)
		}
	}
	b.Run("send-big", func(b *testing.B) { send(b, "big") })
	// A send with an idempotency key (a new key each time), against a
	// plain send: what the key's lock, lookup and record cost.
	b.Run("send-keyed", func(b *testing.B) {
		pair(b, func(i int) []string {
			return []string{mailfs, "send", "sink", "--from", "mayor", "-s", "hi", "-m", "there", "--idempotency-key", fmt.Sprint("bench-", i)}
		}, func(int) []string {
			return []string{mailfs, "send", "sink", "--from", "mayor", "-s", "hi", "-m", "there"}
		})
	})
	b.Run("inbox", func(b *testing.B) {
		pair(b, func(int) []string { return []string{mailfs, "inbox", "unread"} },
			func(int) []string { return []string{floor, "inbox", root, "unread"} })
	})
	// read reads a message delivered (untimed) just before, never one
	// already read: mailfs rewrites an unread message and nothing else.
	fresh := func(agent string, i int) string {
		t := base.Add(time.Hour + time.Duration(i)*time.Millisecond)
		m := &maildir.Message{From: "mayor", To: agent, Subject: fmt.Sprintf("WORK gt-%d", i), Body: "Branch: b\n\ndo it",
			Type: "work_assignment", Priority: maildir.Normal, Timestamp: t}
		id := maildir.NewID(t, "mayor")
		box := filepath.Join(root, "state", "mail", agent)
		if err := os.MkdirAll(box, 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(box, id+".json"), m.Encode(), 0o600); err != nil {
			b.Fatal(err)
		}
		return id
	}
	b.Run("read", func(b *testing.B) {
		pair(b, func(i int) []string { return []string{mailfs, "read", "reader", fresh("reader", i)} },
			func(i int) []string { return []string{floor, "read", root, "floorreader", fresh("floorreader", i)} })
	})
	b.Run("check", func(b *testing.B) {
		pair(b, func(int) []string { return []string{mailfs, "check", "quiet", "--inject"} },
			func(int) []string { return []string{floor, "check", root, "quiet"} })
	})
	b.Run("check-slim", func(b *testing.B) {
		pair(b, func(int) []string { return []string{slim, "check", "quiet", "--inject"} },
			func(int) []string { return []string{floor, "check", root, "quiet"} })
	})
	b.Run("prompt", func(b *testing.B) {
		pair(b, func(int) []string { return []string{mailfs, "hook", "prompt-submit", "quiet"} },
			func(int) []string { return []string{floor, "check", root, "quiet"} })
	})
	b.Run("prompt-slim", func(b *testing.B) {
		pair(b, func(int) []string { return []string{slim, "hook", "prompt-submit", "quiet"} },
			func(int) []string { return []string{floor, "check", root, "quiet"} })
	})
	// kong/: the floor with kong, against the floor, each call's own.
	withKong := func(call []string, floorArgs func(i int) []string) func(i int) []string {
		return func(i int) []string {
			return slices.Concat([]string{floorKong, "kong"}, call, []string{"--"}, floorArgs(i)[1:])
		}
	}
	b.Run("kong/send", func(b *testing.B) {
		start := time.Now() // the ids: new in each run
		sendFloor := func(box string) func(i int) []string {
			return func(i int) []string {
				return []string{floor, "send", root, box, maildir.NewID(start.Add(time.Duration(i)), "mayor")}
			}
		}
		pair(b, withKong([]string{"send", "sink", "--from", "mayor", "-s", "hi", "-m", "there"}, sendFloor("kongsink")), sendFloor("floorkongsink"))
	})
	inbox := func(int) []string { return []string{floor, "inbox", root, "unread"} }
	b.Run("kong/inbox", func(b *testing.B) { pair(b, withKong([]string{"inbox", "unread"}, inbox), inbox) })
	check := func(int) []string { return []string{floor, "check", root, "quiet"} }
	b.Run("kong/check", func(b *testing.B) { pair(b, withKong([]string{"check", "quiet", "--inject"}, check), check) })
	b.Run("kong/prompt", func(b *testing.B) { pair(b, withKong([]string{"hook", "prompt-submit", "quiet"}, check), check) })
}

// runTimed runs one process with MAILFS_ROOT=root (and the hooks' state
// beside it, in state-dir), fails the benchmark
// unless it exits 0, and returns how long it took.
func runTimed(b *testing.B, root string, args []string) time.Duration {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root, "MAILFS_STATE_DIR="+filepath.Join(filepath.Dir(root), "state-dir"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", args, err, out)
	}
	return took
}

// buildCLI builds mailfs, mailfs-hook and the floor program into dir,
// static, and the floor with kong (floor-kong), and returns their paths
// by name.
func buildCLI(b *testing.B, dir string) map[string]string {
	bins := map[string]string{}
	for name, build := range map[string][]string{"mailfs": {"."}, "mailfs-hook": {"../mailfs-hook"}, "floor": {"./testdata/floor"}, "floor-kong": {"-tags", "kong", "./testdata/floor"}} {
		bins[name] = filepath.Join(dir, name)
		cmd := exec.Command("go", slices.Concat([]string{"build", "-o", bins[name]}, build)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", name, err, out)
		}
	}
	return bins
}

// BenchmarkHookCost times "check --inject" as a process — what a prompt
// hook runs — on mailboxes of different sizes, to show that its cost
// follows what changed, not what is stored (the folder index,
// maildir.IndexDir):
//
//   - empty: a mailbox with nothing in it, the baseline;
//   - read10k: 10,000 read messages, nothing to say, the index current;
//   - read10k+1, read10k+100: the same with 1 or 100 new unread messages
//     moved in before each call (and out again after it, untimed), so
//     that every call finds the folder changed;
//   - read10k-noindex: read10k with $MAILFS_INDEX=off, every file read.
func BenchmarkHookCost(b *testing.B) {
	dir := b.TempDir()
	mailfs := buildCLI(b, dir)["mailfs"]
	root := filepath.Join(dir, ".chipset")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(box string, n int, read bool, t0 time.Time) {
		if err := os.MkdirAll(box, 0o700); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			m := &maildir.Message{From: "mayor", To: "x", Subject: fmt.Sprintf("WORK gt-%d", i), Body: "Branch: b\n\ndo it",
				Type: "work_assignment", Priority: maildir.Normal, Timestamp: t0.Add(time.Duration(i) * time.Millisecond), Read: read}
			if err := os.WriteFile(filepath.Join(box, maildir.NewID(m.Timestamp, "mayor")+".json"), m.Encode(), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	mail := filepath.Join(root, "state", "mail")
	write(filepath.Join(mail, "empty"), 0, false, base)
	write(filepath.Join(mail, "full"), 10000, true, base)
	spare := filepath.Join(dir, "spare")
	write(spare, 100, false, base.Add(time.Hour))
	spares, err := os.ReadDir(spare)
	if err != nil {
		b.Fatal(err)
	}
	move := func(n int, from, to string) {
		for _, e := range spares[:n] {
			if err := os.Rename(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
				b.Fatal(err)
			}
		}
	}
	// A folder changed less than RacyWindow ago is listed again at each
	// call (see maildir.RacyWindow); the steady state is an older one.
	time.Sleep(maildir.RacyWindow + 100*time.Millisecond)
	state := b.TempDir() // the hooks' state, the benchmark's own: never the user's
	check := func(b *testing.B, agent string, env ...string) {
		cmd := exec.Command(mailfs, "check", agent, "--inject")
		cmd.Env = append(append(os.Environ(), "MAILFS_ROOT="+root, "MAILFS_STATE_DIR="+state), env...)
		if out, err := cmd.CombinedOutput(); err != nil || bytes.Contains(out, []byte("error")) {
			b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
		}
	}
	check(b, "full") // the first call writes the index
	b.Run("empty", func(b *testing.B) {
		for b.Loop() {
			check(b, "empty")
		}
	})
	b.Run("read10k", func(b *testing.B) {
		for b.Loop() {
			check(b, "full")
		}
	})
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("read10k+%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				move(n, spare, filepath.Join(mail, "full"))
				b.StartTimer()
				check(b, "full")
				b.StopTimer()
				move(n, filepath.Join(mail, "full"), spare)
				b.StartTimer()
			}
		})
	}
	b.Run("read10k-noindex", func(b *testing.B) {
		for b.Loop() {
			check(b, "full", "MAILFS_INDEX=off")
		}
	})
}

// BenchmarkHookAfterQuietSpell times the prompt hook (check --inject, as
// a process) after one new message sent two minutes after its mailbox
// was last listed, in mailboxes of 10,000 and 100,000 read messages: the
// sender's note is followed, not the folder listed, so the two should
// cost about the same (send/). drop/ is the same with the message dropped
// as a script drops one, which leaves no note: the hook lists the folder. The quiet spell is the index's mtime set two
// minutes back (what the one-minute rule of before looked at), not a
// sleep. Each iteration, untimed: list the folder (the index made
// current), age the index, send; then the timed hook; then, untimed, the
// message deleted. It reports the hook process's CPU time too.
func BenchmarkHookAfterQuietSpell(b *testing.B) {
	dir := b.TempDir()
	mailfs := buildCLI(b, dir)["mailfs"]
	root := filepath.Join(dir, ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{10_000, 100_000} {
		agent := fmt.Sprintf("read%dk", n/1000)
		box := maildir.Address{Kind: maildir.KindAgent, Name: agent}
		folder := filepath.Join(root, "state", "mail", agent)
		if err := os.MkdirAll(folder, 0o700); err != nil {
			b.Fatal(err)
		}
		for i := range n {
			at := t0.Add(time.Duration(i) * time.Millisecond)
			m := &maildir.Message{From: "mayor", To: agent, Subject: fmt.Sprintf("WORK gt-%d", i), Body: "do it", Timestamp: at, Read: true}
			if err := os.WriteFile(filepath.Join(folder, maildir.NewID(at, "mayor")+".json"), m.Encode(), 0o600); err != nil {
				b.Fatal(err)
			}
		}
		index := filepath.Join(root, maildir.IndexDir, "state~mail~"+agent)
		for _, how := range []string{"send", "drop"} {
			b.Run(fmt.Sprintf("%s/read=%d", how, n), func(b *testing.B) {
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					if _, err := s.Count(box); err != nil { // lists the folder: the index is current
						b.Fatal(err)
					}
					long := time.Now().Add(-2 * time.Minute)
					if err := os.Chtimes(index, long, long); err != nil {
						b.Fatal(err)
					}
					id := maildir.NewID(time.Now(), "script")
					if how == "send" {
						sent, err := s.Send(&maildir.Message{From: "mayor", To: agent, Subject: "WORK new", Body: "do it"})
						if err != nil {
							b.Fatal(err)
						}
						id = sent[0].ID
					} else { // as a script drops a file: written beside, renamed in; no note
						m := &maildir.Message{From: "script", To: agent, Subject: "WORK new", Body: "do it", Timestamp: time.Now()}
						tmp := filepath.Join(folder, ".drop")
						if err := os.WriteFile(tmp, m.Encode(), 0o600); err != nil {
							b.Fatal(err)
						}
						if err := os.Rename(tmp, filepath.Join(folder, id+".json")); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					cmd := exec.Command(mailfs, "check", agent, "--inject")
					cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root, "XDG_STATE_HOME="+dir)
					if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("WORK new")) {
						b.Fatalf("%v: %v\n%s", cmd.Args, err, out)
					}
					b.StopTimer()
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
					if err := s.Delete(box, id); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				// CPU time moves less than wall time on a shared machine.
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
