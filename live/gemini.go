package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/hook"
)

// GeminiChats reads Gemini CLI's own record of its sessions, the chat
// files it keeps under its home (~/.gemini/tmp/<project>/chats/
// session-*.jsonl, $GEMINI_CLI_HOME for ~): a doorbell is Seen when a
// "gemini" message (the model's answer) follows the user message that
// held its ring mark, and Queued when the user message is there with no
// answer after it (Gemini CLI writes the user message before it calls the
// model: it says only that the doorbell was submitted).
type GeminiChats struct {
	Dir   string    // Gemini CLI's tmp folder: <home>/.gemini/tmp
	Since time.Time // chat files last written before this are not read
}

// Evidence implements Confirmer.
func (g *GeminiChats) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	files, _ := filepath.Glob(filepath.Join(g.Dir, "*", "chats", "session-*.jsonl"))
	for _, f := range files {
		if ctx.Err() != nil {
			return ev, ctx.Err()
		}
		if st, err := os.Stat(f); err != nil || st.ModTime().Before(g.Since) {
			continue
		}
		if err := readGeminiChat(f, nonces, ev); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ev, err
		}
	}
	return ev, nil
}

// geminiMessage is one message of a Gemini CLI chat file.
type geminiMessage struct {
	Type      string          `json:"type"` // user, gemini, info, error, …
	Timestamp time.Time       `json:"timestamp"`
	Content   json.RawMessage `json:"content"` // a string, or parts [{"text": …}]
}

// readGeminiChat reads one chat file into ev. The file is a log of
// records: a header, messages, and {"$set": {"messages": […]}} which
// replaces the messages so far (a rewind, a restore).
func readGeminiChat(path string, nonces []string, ev Evidence) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var msgs []geminiMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var rec struct {
			geminiMessage
			Set *struct {
				Messages *[]geminiMessage `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal(line, &rec) != nil {
			continue // a line cut by a write in progress
		}
		switch {
		case rec.Set != nil && rec.Set.Messages != nil:
			msgs = *rec.Set.Messages
		case rec.Type != "":
			msgs = append(msgs, rec.geminiMessage)
		}
	}
	var record []entry
	for _, m := range msgs {
		switch m.Type {
		case "user":
			record = keepEntry(record, entry{Marks: hook.RingMarks(string(m.Content)), At: m.Timestamp})
		case string(agentrt.Gemini): // the model's messages carry the runtime's name
			record = keepEntry(record, entry{Answer: true, At: m.Timestamp})
		}
	}
	ev.merge(answered(record, nonces))
	return sc.Err()
}
