package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The transcript's evidence: a nonce on an enqueue is queued, on a line of
// any other type seen; a removal from the queue alone is neither; a line
// written in two pieces is read whole; a line too long to keep is skipped
// without losing the next one.
func TestTranscriptEvidence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	const (
		a = "aaaaaaaaaaaaaaaa"
		b = "bbbbbbbbbbbbbbbb"
		c = "cccccccccccccccc"
		d = "dddddddddddddddd"
	)
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	tl := &tail{path: path, seen: map[string]time.Time{}, queued: map[string]bool{}}
	look := func() {
		t.Helper()
		if err := tl.read(); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"type":"queue-operation","operation":"enqueue","content":"doorbell (ring ` + a + `)."}` + "\n")
	write(`{"type":"queue-operation","operation":"enqueue","content":"doorbell (ring ` + b + `)."}` + "\n")
	look()
	if !tl.queued[a] || !tl.queued[b] || len(tl.seen) != 0 {
		t.Fatalf("after two enqueues: queued %v, seen %v", tl.queued, tl.seen)
	}
	write(`{"type":"queue-operation","operation":"remove","content":"doorbell (ring ` + b + `)."}` + "\n")
	write(`{"type":"attachment","attachment":{"type":"queued_command","prompt":"doorbell (ri`)
	look()
	if tl.queued[b] || len(tl.seen) != 0 {
		t.Fatalf("a removal is not evidence: queued %v, seen %v", tl.queued, tl.seen)
	}
	write(`ng ` + a + `)."}}` + "\n")
	write(`{"type":"api-request-blob","message":"` + strings.Repeat("x", maxTranscriptLine+10) + ` (ring ` + c + `)"}` + "\n")
	write(`{"type":"user","message":{"content":"doorbell (ring ` + d + `)."}}` + "\n")
	for range 4 { // the long line takes several reads
		look()
	}
	if _, ok := tl.seen[a]; !ok {
		t.Fatalf("a line written in two pieces was not read whole: seen %v", tl.seen)
	}
	if _, ok := tl.seen[c]; ok {
		t.Fatalf("a line over the bound was kept")
	}
	if _, ok := tl.seen[d]; !ok {
		t.Fatalf("the line after a long one was lost: seen %v", tl.seen)
	}
}
