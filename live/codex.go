package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailfs/mailfs/hook"
)

// CodexRollouts reads Codex's own record of its sessions, the rollout
// files under its home ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl,
// ~/.codex by default): a doorbell is Seen when a response item of the
// model (an assistant message, a tool call, reasoning) follows the user
// message that held its ring mark — a new turn's or one steered into a
// running turn — and Queued when the user message is there with no
// answer after it.
type CodexRollouts struct {
	Dir   string    // <codex home>/sessions
	Since time.Time // rollouts last written before this are not read
}

// Evidence implements Confirmer.
func (c *CodexRollouts) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	// Day folders are in local time; a day before Since's covers a clock
	// or zone that differs.
	oldest := ""
	if !c.Since.IsZero() {
		oldest = c.Since.AddDate(0, 0, -1).Format("2006/01/02")
	}
	err := filepath.WalkDir(c.Dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == c.Dir {
				return fs.SkipAll // no sessions yet
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(c.Dir, path)
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			if rel != "." && len(rel) <= len(oldest) && rel < oldest[:len(rel)] {
				return fs.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(e.Name(), "rollout-") || !strings.HasSuffix(e.Name(), ".jsonl") {
			return nil
		}
		if st, err := e.Info(); err != nil || st.ModTime().Before(c.Since) {
			return nil
		}
		if err := readRollout(path, nonces, ev); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	return ev, err
}

// readRollout reads one rollout file into ev.
func readRollout(path string, nonces []string, ev Evidence) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var record []entry
	for sc.Scan() {
		var rec struct {
			Timestamp time.Time `json:"timestamp"`
			Type      string    `json:"type"`
			Payload   struct {
				Type    string          `json:"type"`
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"payload"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Type != "response_item" {
			continue
		}
		switch p := rec.Payload; {
		case p.Type == "message" && p.Role == "user":
			record = keepEntry(record, entry{Marks: hook.RingMarks(string(p.Content)), At: rec.Timestamp})
		case p.Role == "assistant" || p.Type != "message" && !strings.HasSuffix(p.Type, "_output"):
			// the model's output: a message, a tool call, reasoning (not
			// a tool's output, nor context Codex adds)
			record = keepEntry(record, entry{Answer: true, At: rec.Timestamp})
		}
	}
	ev.merge(answered(record, nonces))
	return sc.Err()
}
