package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The transcript's evidence, by the one rule: a mark on an enqueue, a
// user line, an attachment or a request line is submitted; it is
// delivered (seen) only once an assistant line descends from a line that
// holds it — not one Claude Code made up for a failed request, not an
// answer to an earlier request written after the mark, not the model
// quoting a mark. A removal from the queue alone is nothing; a line
// written in two pieces is read whole; a line too long to keep is skipped
// without losing the next one.
func TestTranscriptEvidence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	const (
		a = "aaaaaaaaaaaaaaaa"
		b = "bbbbbbbbbbbbbbbb"
		c = "cccccccccccccccc"
		d = "dddddddddddddddd"
		e = "eeeeeeeeeeeeeeee"
	)
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	tl := newTail(path)
	look := func() {
		t.Helper()
		if err := tl.read(); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"user","uuid":"u0","parentUuid":null,"message":{"content":"START"}}` + "\n")
	write(`{"type":"assistant","uuid":"a0","parentUuid":"u0","message":{"model":"claude-stub","content":[{"type":"tool_use"}]}}` + "\n")
	write(`{"type":"queue-operation","operation":"enqueue","content":"doorbell (ring ` + a + `)."}` + "\n")
	write(`{"type":"queue-operation","operation":"enqueue","content":"doorbell (ring ` + b + `)."}` + "\n")
	look()
	if !tl.queued[a] || !tl.queued[b] || len(tl.seen) != 0 {
		t.Fatalf("after two enqueues: queued %v, seen %v", tl.queued, tl.seen)
	}
	write(`{"type":"queue-operation","operation":"remove","content":"doorbell (ring ` + b + `)."}` + "\n")
	write(`{"type":"user","uuid":"u1","parentUuid":"a0","message":{"content":[{"type":"tool_result"}]}}` + "\n")
	write(`{"type":"attachment","uuid":"q1","parentUuid":"u1","attachment":{"type":"queued_command","prompt":"doorbell (ri`)
	look()
	if tl.queued[b] || len(tl.seen) != 0 {
		t.Fatalf("a removal is not evidence: queued %v, seen %v", tl.queued, tl.seen)
	}
	write(`ng ` + a + `)."}}` + "\n")
	write(`{"type":"api-request-blob","message":"` + strings.Repeat("x", maxTranscriptLine+10) + ` (ring ` + c + `)"}` + "\n")
	// A content block of the earlier answer, written late: not an answer
	// to the mark.
	write(`{"type":"assistant","uuid":"a0b","parentUuid":"a0","message":{"model":"claude-stub"}}` + "\n")
	for range 4 { // the long line takes several reads
		look()
	}
	if _, ok := tl.submitted[a]; !ok || len(tl.seen) != 0 {
		t.Fatalf("a queued command with no answer: submitted %v, seen %v", tl.submitted, tl.seen)
	}
	if _, ok := tl.submitted[c]; ok {
		t.Fatalf("a line over the bound was kept")
	}
	// The endpoint failed: Claude Code writes an answer of its own.
	write(`{"type":"assistant","uuid":"x1","parentUuid":"q1","isApiErrorMessage":true,"message":{"model":"<synthetic>","content":"API Error"}}` + "\n")
	look()
	if len(tl.seen) != 0 {
		t.Fatalf("a synthetic error answer was taken for the model's: seen %v", tl.seen)
	}
	// The model answers the turn holding a's mark, quoting e's.
	write(`{"type":"assistant","uuid":"a1","parentUuid":"q1","message":{"model":"claude-stub","content":"(ring ` + e + `)"}}` + "\n")
	look()
	if _, ok := tl.seen[a]; !ok {
		t.Fatalf("the answer to the turn holding the mark is not evidence: seen %v", tl.seen)
	}
	if _, ok := tl.seen[e]; ok {
		t.Fatalf("a mark the model quoted was taken for input")
	}
	// An idle session's new turn, after a long line: its user line is
	// submitted, its answer delivered.
	write(`{"type":"user","uuid":"u2","parentUuid":"a1","message":{"content":"doorbell (ring ` + d + `)."}}` + "\n")
	look()
	if _, ok := tl.submitted[d]; !ok || len(tl.seen) != 1 {
		t.Fatalf("the user line of a new turn: submitted %v, seen %v", tl.submitted, tl.seen)
	}
	write(`{"type":"assistant","uuid":"a2","parentUuid":"u2","message":{"model":"claude-stub"}}` + "\n")
	look()
	if _, ok := tl.seen[d]; !ok {
		t.Fatalf("the line after a long one was lost: seen %v", tl.seen)
	}
}
