package live

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/mailfs/mailfs/hook"
)

// piEntry reads one line of a pi session file (pi 0.73: JSON lines,
// ~/.pi/agent/sessions/<the folder, made a name>/<stamp>_<id>.jsonl) for
// the evidence rule. pi writes a message entry, {"type":"message",
// "message":{"role":…,"content":[{"type":"text","text":…}]}}, as the
// message joins the conversation it sends the model: a doorbell steered
// into a busy turn is written when the turn takes it in, not when it is
// queued. A user entry holds the doorbell's mark; an assistant entry is
// the model's answer unless pi stopped it for an error or an abort
// (stopReason "error", "aborted"). Other entries (tool results, pi's
// custom messages, model changes) are neither.
func piEntry(line []byte) (entry, bool) {
	if !strings.Contains(string(line), `"message"`) {
		return entry{}, false
	}
	var v struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Message   struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			StopReason string          `json:"stopReason"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &v) != nil || v.Type != "message" {
		return entry{}, false
	}
	switch v.Message.Role {
	case "user":
		return entry{Marks: hook.RingMarks(string(v.Message.Content)), At: v.Timestamp}, true
	case "assistant":
		ok := v.Message.StopReason != "error" && v.Message.StopReason != "aborted"
		return entry{Answer: ok, At: v.Timestamp}, ok
	}
	return entry{}, false
}
