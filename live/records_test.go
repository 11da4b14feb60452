package live_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/live"
)

// place copies a record captured from a real runtime (testdata/records)
// to rel under a fresh folder, and returns the folder.
func place(t *testing.T, name, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "records", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755)
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The runtimes' own records, captured from Gemini CLI 0.61.0 and Codex
// 0.171.0 against the stand-in: a ring mark in a user message the model
// answered is Seen; one the record shows with no answer after it (the
// file as it stands while the request is out) is only Queued; a nonce
// the record never held is neither.
func TestRecordsSayWhatTheModelAnswered(t *testing.T) {
	for _, c := range []struct {
		name, file, rel, nonce string
		confirmer              func(dir string) live.Confirmer
		seen                   bool
	}{
		{"gemini answered", "gemini-answered.jsonl", "proj/chats/session-2026-11-28T01-45-2a6b0a39.jsonl", "9999000011112222",
			func(dir string) live.Confirmer { return &live.GeminiChats{Dir: dir} }, true},
		{"gemini submitted", "gemini-submitted.jsonl", "proj/chats/session-2026-11-28T01-45-2a6b0a39.jsonl", "9999000011112222",
			func(dir string) live.Confirmer { return &live.GeminiChats{Dir: dir} }, false},
		{"codex answered", "codex-answered.jsonl", "2026/11/28/rollout-2026-11-28T02-01-11-01a21fe2-8ef8-7432-9fa4-0632e54588a3.jsonl", "0000111122223333",
			func(dir string) live.Confirmer { return &live.CodexRollouts{Dir: dir} }, true},
		{"codex submitted", "codex-submitted.jsonl", "2026/11/28/rollout-2026-11-28T02-01-11-01a21fe2-8ef8-7432-9fa4-0632e54588a3.jsonl", "0000111122223333",
			func(dir string) live.Confirmer { return &live.CodexRollouts{Dir: dir} }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := place(t, c.file, c.rel)
			const never = "abcdefabcdefabcd"
			ev, err := c.confirmer(dir).Evidence(context.Background(), []string{c.nonce, never})
			if err != nil {
				t.Fatal(err)
			}
			_, seen := ev.Seen[c.nonce]
			if seen != c.seen || ev.Queued[c.nonce] == c.seen {
				t.Fatalf("evidence %+v: seen %v, queued %v; want seen %v, queued %v", ev, seen, ev.Queued[c.nonce], c.seen, !c.seen)
			}
			if _, ok := ev.Seen[never]; ok || ev.Queued[never] {
				t.Fatalf("evidence %+v of a nonce the record never held", ev)
			}
			// A record last written before the session began is not read.
			old := time.Now().Add(-time.Hour)
			os.Chtimes(filepath.Join(dir, c.rel), old, old)
			var late live.Confirmer
			switch cf := c.confirmer(dir).(type) {
			case *live.GeminiChats:
				cf.Since = time.Now()
				late = cf
			case *live.CodexRollouts:
				cf.Since = time.Now()
				late = cf
			}
			if ev, err := late.Evidence(context.Background(), []string{c.nonce}); err != nil || len(ev.Seen)+len(ev.Queued) != 0 {
				t.Fatalf("evidence from a record older than the session: %+v %v", ev, err)
			}
		})
	}
}
