package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkCLI times whole mailfs processes, as hooks and scripts start
// them, against the per-process floor: testdata/floor, a minimal Go
// program making the same system calls, built the same way (static, no
// cgo). Each pair runs in the same process of the benchmark, one after the
// other:
//
//   - send: one message, durably;
//   - inbox: a mailbox of 10 unread messages;
//   - read: one message, printed and marked read (rewritten durably);
//   - check: "check --inject" of a mailbox of 10 read messages and no
//     nudges: nothing to say.
func BenchmarkCLI(b *testing.B) {
	dir := b.TempDir()
	bins := map[string]string{"mailfs": filepath.Join(dir, "mailfs"), "floor": filepath.Join(dir, "floor")}
	for name, pkg := range map[string]string{"mailfs": ".", "floor": "./testdata/floor"} {
		cmd := exec.Command("go", "build", "-o", bins[name], pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
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
	call := func(b *testing.B, want int, args func(i int) []string) {
		i := 0
		for b.Loop() {
			cmd := exec.Command(args(i)[0], args(i)[1:]...)
			cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root)
			out, err := cmd.CombinedOutput()
			if code := cmd.ProcessState.ExitCode(); code != want {
				b.Fatalf("%v: status %d (%v)\n%s", cmd.Args, code, err, out)
			}
			i++
		}
	}
	mailfs, floor := bins["mailfs"], bins["floor"]
	n := 0
	b.Run("send/mailfs", func(b *testing.B) {
		call(b, 0, func(int) []string {
			return []string{mailfs, "send", "sink", "--from", "mayor", "-s", "hi", "-m", "there"}
		})
	})
	b.Run("send/floor", func(b *testing.B) {
		call(b, 0, func(int) []string {
			n++
			return []string{floor, "send", root, "sink", maildir.NewID(base.Add(time.Duration(n)), "mayor")}
		})
	})
	b.Run("inbox/mailfs", func(b *testing.B) { call(b, 0, func(int) []string { return []string{mailfs, "inbox", "unread"} }) })
	b.Run("inbox/floor", func(b *testing.B) { call(b, 0, func(int) []string { return []string{floor, "inbox", root, "unread"} }) })
	// read marks read; reading the same message again rewrites it again.
	b.Run("read/mailfs", func(b *testing.B) {
		call(b, 0, func(int) []string { return []string{mailfs, "read", "unread", ids["unread"][3]} })
	})
	b.Run("read/floor", func(b *testing.B) {
		call(b, 0, func(int) []string { return []string{floor, "read", root, "unread", ids["unread"][4]} })
	})
	b.Run("check/mailfs", func(b *testing.B) {
		call(b, 0, func(int) []string { return []string{mailfs, "check", "quiet", "--inject"} })
	})
	b.Run("check/floor", func(b *testing.B) { call(b, 0, func(int) []string { return []string{floor, "check", root, "quiet"} }) })
}
