package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// BenchmarkGasCity times whole provider calls, as Gas City makes them (one
// process per call), in a root of 100 mailboxes with 100 unread messages
// each, for the slim cmd/mailfs-gascity binary ("slim") and for the mailfs
// binary under that name ("mailfs"). The floor is a process that only
// starts and exits: /bin/true, the cheapest exec provider there could be,
// and a Go program that does nothing, the cheapest Go one.
func BenchmarkGasCity(b *testing.B) {
	dir := b.TempDir()
	bins := map[string]string{"mailfs": filepath.Join(dir, "mailfs", "mailfs-gascity"), "slim": filepath.Join(dir, "slim", "mailfs-gascity")}
	for name, pkg := range map[string]string{"mailfs": ".", "slim": "../mailfs-gascity"} {
		if out, err := exec.Command("go", "build", "-o", bins[name], pkg).CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	nop := filepath.Join(dir, "nop")
	os.WriteFile(filepath.Join(dir, "nop.go"), []byte("package main\nfunc main() {}\n"), 0o600)
	if out, err := exec.Command("go", "build", "-o", nop, filepath.Join(dir, "nop.go")).CombinedOutput(); err != nil {
		b.Fatalf("building the Go floor: %v\n%s", err, out)
	}
	root := filepath.Join(dir, ".chipset")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var someID string
	for a := range 100 {
		agent := fmt.Sprintf("polecat%03d", a)
		box := filepath.Join(root, "state", "mail", agent)
		os.MkdirAll(box, 0o700)
		for i := range 100 {
			m := &maildir.Message{From: "mayor", To: agent, Subject: fmt.Sprintf("WORK gt-%d", i), Body: "Branch: b\n\ndo it",
				Type: "work_assignment", Priority: maildir.Normal, Timestamp: base.Add(time.Duration(a*100+i) * time.Second)}
			id := maildir.NewID(m.Timestamp, "mayor")
			os.WriteFile(filepath.Join(box, id+".json"), m.Encode(), 0o600)
			if a == 99 && i == 50 {
				someID = id
			}
		}
	}
	call := func(b *testing.B, stdin []byte, name string, args ...string) {
		for b.Loop() {
			cmd := exec.Command(name, args...)
			cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root)
			if stdin != nil {
				cmd.Stdin = bytes.NewReader(stdin)
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
		}
	}
	b.Run("floor-true", func(b *testing.B) { call(b, nil, "/bin/true") })
	b.Run("floor-go", func(b *testing.B) { call(b, nil, nop) })
	for _, name := range []string{"slim", "mailfs"} {
		bin := bins[name]
		b.Run(name+"/send", func(b *testing.B) {
			call(b, []byte(`{"from":"mayor","subject":"WORK gt-9","body":"go"}`), bin, "send", "polecat050")
		})
		b.Run(name+"/inbox-100", func(b *testing.B) { call(b, nil, bin, "inbox", "polecat042") })
		b.Run(name+"/get", func(b *testing.B) { call(b, nil, bin, "get", someID) })
	}
}
