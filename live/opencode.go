package live

import (
	"cmp"
	"slices"
	"time"

	"github.com/mailfs/mailfs/hook"
)

// An ocMessage is one of an OpenCode session's messages, as mailfs's
// plugin passes it on (see PipeDoor): a doorbell's user message with its
// text, or an assistant message once OpenCode recorded it completed.
type ocMessage struct {
	ID     string `json:"-"`    // OpenCode's message id: ids sort in the order OpenCode made the messages
	Role   string `json:"role"` // user or assistant
	Text   string `json:"text"` // a user message's text
	At     int64  `json:"at"`   // an assistant message's completion, in Unix milliseconds
	Failed string `json:"-"`    // an assistant message's error, "" if none
}

// maxMessages bounds the messages a door keeps of an OpenCode session.
const maxMessages = 100_000

// openCodeRecord puts OpenCode's messages in the order OpenCode gave them
// to the model, for the evidence rule: by id. OpenCode loads a session's
// messages afresh for each request and begins an assistant message (a new
// id) for each, so an assistant message with a later id than a doorbell's
// user message answered a request that held it; one with an earlier id (the
// tool call the doorbell queued behind) did not, whenever it completed. An
// assistant message that completed with an error is no answer.
func openCodeRecord(msgs map[string]ocMessage) []entry {
	ids := make([]string, 0, len(msgs))
	for id := range msgs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(a, b) })
	var rec []entry
	for _, id := range ids {
		m := msgs[id]
		switch m.Role {
		case "user":
			rec = keepEntry(rec, entry{Marks: hook.RingMarks(m.Text)})
		case "assistant":
			rec = keepEntry(rec, entry{Answer: m.Failed == "" && m.At > 0, At: time.UnixMilli(m.At).UTC()})
		}
	}
	return rec
}
