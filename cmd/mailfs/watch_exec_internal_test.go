package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// watch --exec hands the command the message's bytes as read through the
// root's confined walk: a message swapped for a link to a file outside the
// root after its event is refused with a warning, never read.
func TestWatchExecNeverFollowsALink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	var out, errs strings.Builder
	a := &app{ctx: context.Background(), stdio: stdio{in: strings.NewReader(""), out: &out, err: &errs}, rootFlag: dir}
	defer a.close()
	s, err := a.open()
	if err != nil {
		t.Fatal(err)
	}
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	m := sent[0]
	c := &watchCmd{Exec: "cat"}
	ev := watch.Event{Box: m.Box, ID: m.ID, Path: m.Path, Message: m}
	c.run(a, ev)
	if !strings.Contains(out.String(), `"subject": "hello"`) {
		t.Fatalf("--exec got %q, want the message's bytes", out.String())
	}

	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("the secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, filepath.FromSlash(m.Path))
	os.Remove(file)
	if err := os.Symlink(outside, file); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	c.run(a, ev)
	if strings.Contains(out.String(), "secret") {
		t.Fatalf("--exec followed the link out of the root: %q", out.String())
	}
	if !strings.Contains(errs.String(), "mailfs: warning: --exec for "+m.ID) {
		t.Fatalf("no warning for the refused file; stderr %q", errs.String())
	}
}
