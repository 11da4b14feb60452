package live_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/live"
)

// submitsThroughTmux checks the tmux door against a real runtime (rt) idle
// in pane %0 of the tmux server at sock, the door a person would start
// with "mailfs live tmux": it finds the runtime's prompt; a person's text
// in the box (half-typed, two lines, below the cursor) is never sent nor mixed with a
// doorbell;
// a doorbell typed into the empty box is submitted once, whole, and
// reaches the model in one request; the box empties; and, the runtime
// keeping no record mailfs reads from a tmux pane, the door's evidence
// says submitted (the mark shown off the box), never delivered.
// requests is the model stand-in's log.
func submitsThroughTmux(t *testing.T, rt, sock string, tmux func(...string) string, requests func() []stubmodel.Request, nonce string) {
	t.Helper()
	door, err := live.FindTmux("", sock, "%0")
	if err != nil {
		t.Fatal(err)
	}
	if door.Prompt.Runtime != rt {
		t.Fatalf("the door found %q in the pane, want %s", door.Prompt.Runtime, rt)
	}
	door.TypingQuiet = time.Nanosecond
	input := boxOf(t, tmux, door)
	until(t, "the empty input box", 30*time.Second, func() bool { return input() == "" })
	bell := "mailfs doorbell for toast: 1 new message(s), 1 URGENT.\n- [urgent] x from mayor: WAKE UP\nThe mail stays in your mailbox until you read it; this note is only a doorbell " + hook.RingMark(nonce) + "."
	// Three of the person cases (the Codex and Gemini CLI tests run all;
	// the box as these two runtimes draw it is table-tested from their
	// screens): text left of the cursor, a second line, and text below
	// the cursor's blank row.
	neverOverAPerson(t, tmux, door, bell, "half-typed", "multi-line", "text below the cursor")
	for _, r := range requests() {
		if strings.Contains(r.Raw, "PERSON") || strings.Contains(r.Raw, nonce) {
			t.Fatalf("a person's text or the doorbell reached the model:\n%.3000s", r.Raw)
		}
	}
	n := len(requests())
	if err := door.Ring(context.Background(), bell); err != nil {
		t.Fatalf("Ring into %s's empty box: %v", rt, err)
	}
	var got stubmodel.Request
	until(t, "the doorbell to reach the model", 60*time.Second, func() bool {
		for _, r := range requests()[n:] {
			if strings.Contains(r.Raw, hook.RingMark(nonce)) {
				got = r
				return true
			}
		}
		return false
	})
	if c := strings.Count(got.Raw, hook.RingMark(nonce)); c != 1 {
		t.Fatalf("the request carries the doorbell %d times, want once:\n%.3000s", c, got.Raw)
	}
	if !strings.Contains(got.Raw, "this note is only a doorbell") {
		t.Fatalf("the doorbell reached the model cut:\n%.3000s", got.Raw)
	}
	until(t, "the box to empty", 10*time.Second, func() bool { return input() == "" })
	var ev live.Evidence
	until(t, "the door's evidence", 10*time.Second, func() bool {
		ev, err = door.Evidence(context.Background(), []string{nonce})
		return err == nil && ev.Queued[nonce]
	})
	if _, ok := ev.Seen[nonce]; ok {
		t.Fatalf("the tmux door says %s's doorbell delivered: it reads no record of the model's answers", rt)
	}
	t.Logf("%s in tmux: 3 person cases never sent; the doorbell submitted once, in request %d", rt, got.N)
}
