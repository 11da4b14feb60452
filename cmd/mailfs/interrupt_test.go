package main

import (
	"bytes"
	"context"
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
