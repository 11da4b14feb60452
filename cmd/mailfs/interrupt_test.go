package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// A long command stopped by ^C or SIGTERM (its context ended) says that
// it was interrupted and how far it got, prints what it found so far, and
// exits 130, never 0 as if it were done, never "context canceled".
func TestLongCommandsStopWhenAsked(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "work"}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"fsck", "--repair"}, "fsck interrupted after checking 0 folders"},
		{[]string{"search", "--archived", "work"}, "search interrupted: the 0 messages above are those found before it stopped"},
		{[]string{"archive", "--older-than", "1ns", "--include-unread"}, "interrupted"},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out, errs bytes.Buffer
			code := run(ctx, append([]string{"--root", root}, tc.args...), stdio{in: strings.NewReader(""), out: &out, err: &errs})
			if code != exitInterrupted || !strings.Contains(errs.String(), tc.stderr) || strings.Contains(errs.String(), "context canceled") {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errs.String(), exitInterrupted, tc.stderr)
			}
		})
	}
	// Nothing was moved by the interrupted sweep.
	s, err = maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, err := s.Count(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}); err != nil || c.Total != 3 {
		t.Fatalf("toast after the interrupted sweep: %+v %v", c, err)
	}
}

// A wait stopped by ^C or SIGTERM before mail came exits 130, not 0 (which
// a "while mailfs wait" loop reads as mail there); a send, reply or
// escalation interrupted while it reads its body from standard input sends
// nothing, even when the body then arrives (a person who forgot the pipe
// and typed at the terminal presses ^C to cancel).
func TestInterruptedWaitAndSendDoNothing(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "work"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, args := range [][]string{
		{"wait", "nobody-yet", "--timeout", "1h"},
		{"wait", "nobody-yet"},
		{"send", "toast", "--from", "mayor", "-s", "cancelled", "-m", "-"},
		{"reply", "toast", sent[0].ID, "-m", "-"},
		{"escalate", "--from", "mayor", "-s", "cancelled", "--severity", "high", "-m", "-"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out, errs bytes.Buffer
			code := run(ctx, append([]string{"--root", root}, args...), stdio{in: strings.NewReader("typed, then ^C\n"), out: &out, err: &errs})
			if code != exitInterrupted || out.Len() != 0 || !strings.Contains(errs.String(), "interrupted") {
				t.Fatalf("exit %d, stdout %q, stderr %q; want %d, nothing on stdout, \"interrupted\"", code, out.String(), errs.String(), exitInterrupted)
			}
		})
	}
	// Nothing was sent: toast holds the one message, mayor and the
	// escalations none.
	s, err = maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"toast", "mayor"} {
		want := 0
		if name == "toast" {
			want = 1
		}
		if c, err := s.Count(maildir.Address{Kind: maildir.KindAgent, Name: name}); err != nil || c.Total != want {
			t.Fatalf("%s after the interrupted sends: %+v %v; want %d", name, c, err, want)
		}
	}
}

// A demo stopped by ^C or SIGTERM exits 130, saying it was interrupted, not
// 2 as if a step of the tour were broken, and leaves no scratch root
// behind (nothing an in-process hook call started outlives it).
func TestInterruptedDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errs bytes.Buffer
	code := run(ctx, []string{"demo"}, stdio{in: strings.NewReader(""), out: &out, err: &errs})
	if code != exitInterrupted || !strings.Contains(errs.String(), "interrupted") || strings.Contains(errs.String(), "not 0") {
		t.Fatalf("exit %d, stderr %q; want %d, \"interrupted\"", code, errs.String(), exitInterrupted)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("the interrupted demo left %v in $TMPDIR", left)
	}
}
