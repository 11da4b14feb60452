package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mailfs/mailfs/hook"
)

// Claude Code writes each session's transcript as JSON lines in
// <config>/projects/<the folder, made a name>/<session id>.jsonl. A
// message that reaches its socket is written there as it goes: a
// "queue-operation" enqueue while a turn runs, then a line with a uuid
// that carries its text (the queued_command attachment of a busy turn,
// the user line of an idle session's new turn), and the request lines;
// all of that before the model is called. The model's output is an
// "assistant" line whose parentUuid chain leads back to the line it
// answered. So the evidence rule (docs/live-delivery.md) reads here:
//
//   - answered (delivered): an assistant line, not one Claude Code made up
//     itself (isApiErrorMessage, model "<synthetic>": the endpoint failed)
//     nor a side chain's, descending from a line that holds the ring mark;
//   - submitted: the mark on any other line (enqueue included), while no
//     answer is seen.
//
// Qwen Code's chat record has the same shape (uuid, parentUuid, type
// "assistant" for the model's output), and is read by the same rule.

// maxTranscriptRead bounds what one look reads of a transcript, and
// maxTranscriptLine the longest line kept whole (a longer one is skipped:
// requests carrying the whole system prompt run to a few hundred KB).
const (
	maxTranscriptRead = 16 << 20
	maxTranscriptLine = 32 << 20
)

// tail is what has been read of one transcript.
type tail struct {
	growing
	seen      map[string]time.Time // nonce -> when an answer to it was read: delivered
	submitted map[string]time.Time // nonce -> when it was read on a line that is not an answer
	queued    map[string]bool      // nonce -> read only on an enqueue so far
	nodes     map[string]node      // uuid -> its line's place in the conversation
}

// node is one transcript line with a uuid: its parent, the ring marks it
// holds, and whether an answer's walk up the chain already passed it.
type node struct {
	parent string
	marks  []string
	walked bool
}

// newTail returns the tail of the transcript at path, nothing read yet.
func newTail(path string) *tail {
	return &tail{growing: growing{path: path}, seen: map[string]time.Time{}, submitted: map[string]time.Time{}, queued: map[string]bool{}, nodes: map[string]node{}}
}

// read takes in what was appended since the last read.
func (t *tail) read() error {
	now := time.Now()
	var lines [][]byte
	restarted, err := t.next(maxTranscriptRead, maxTranscriptLine, func(line []byte) { lines = append(lines, line) })
	if restarted {
		t.nodes = map[string]node{} // rewritten from the start
	}
	for _, line := range lines {
		t.line(line, now)
	}
	return err
}

// transcriptLine is what tail reads of a line.
type transcriptLine struct {
	Type      string `json:"type"`
	Operation string `json:"operation"`
	UUID      string `json:"uuid"`
	Parent    string `json:"parentUuid"`
	Sidechain bool   `json:"isSidechain"`
	APIError  bool   `json:"isApiErrorMessage"`
	Model     string `json:"model"` // Qwen Code's
	Message   struct {
		Model string `json:"model"` // Claude Code's
	} `json:"message"`
}

// answer reports whether the line is the model's own output.
func (v *transcriptLine) answer() bool {
	return v.Type == "assistant" && !v.Sidechain && !v.APIError && v.Message.Model != "<synthetic>" && v.Model != "<synthetic>"
}

// line takes in one transcript line.
func (t *tail) line(line []byte, now time.Time) {
	marked := bytes.Contains(line, []byte("(ring "))
	// Only lines that carry a mark, or could be part of a chain an
	// answer walks, are decoded.
	if !marked && !bytes.Contains(line, []byte(`"uuid"`)) {
		return
	}
	var v transcriptLine
	if json.Unmarshal(line, &v) != nil {
		return
	}
	var marks []string
	if marked {
		marks = hook.RingMarks(string(line))
	}
	if v.UUID != "" && !v.Sidechain && len(t.nodes) < maxNodes {
		t.nodes[v.UUID] = node{parent: v.Parent, marks: marks}
	}
	if v.answer() {
		t.walk(v.Parent, now)
	}
	for _, n := range marks {
		switch {
		case v.answer():
			// The model's own words quote a mark: not evidence of input.
		case v.Type != "queue-operation":
			if _, ok := t.submitted[n]; !ok {
				t.submitted[n] = now
			}
			delete(t.queued, n)
		case v.Operation == "enqueue":
			if _, ok := t.submitted[n]; !ok {
				t.queued[n] = true
			}
		default: // out of the queue: a line of another type says whether it went on
			delete(t.queued, n)
		}
	}
}

// maxNodes bounds the lines a tail remembers: a session past it is read
// for what a ring mark's line and its answers say, on lines after it only
// as far as they were remembered.
const maxNodes = 1 << 20

// walk goes up the conversation from uuid: every mark held above an
// answer was answered. A line walked before stops the walk: what is
// above it was taken in then.
func (t *tail) walk(uuid string, now time.Time) {
	for uuid != "" {
		nd, ok := t.nodes[uuid]
		if !ok || nd.walked {
			return
		}
		for _, n := range nd.marks {
			if _, ok := t.seen[n]; !ok {
				t.seen[n] = now
			}
		}
		nd.walked = true
		t.nodes[uuid] = nd
		uuid = nd.parent
	}
}

// Evidence reads the session's transcript (see the comment at the top of
// transcript.go) for the nonces: Seen those the model answered, Queued
// those the session took in or queued and the model has not answered yet.
func (d *ClaudeDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	return d.tr.evidence(ctx, d, d.transcript, nonces)
}

// earlierSessions tells the door the ids its session had before (a
// deliverer before this one served them: their transcripts hold the
// evidence of its doorbells).
func (d *ClaudeDoor) earlierSessions(ids []string) { d.tr.remember(ids) }

// A sessionHistory is a door whose evidence is kept per session id: the
// deliverer tells it the ids its session had before it (see takeOver).
type sessionHistory interface {
	earlierSessions(ids []string)
}

// transcripts is what a door keeps of its session's transcripts: what was
// read of each, and the session ids it has had, the last one last (read
// after the session ended too: its last turn may have answered a
// doorbell; and after /clear, the transcript before holds the answers to
// the doorbells rung before).
type transcripts struct {
	tails []*tail
	ids   []string
}

// maxTails bounds the transcripts a door follows: its session's last ids.
const maxTails = 4

// remember adds ids to those the session has had.
func (tr *transcripts) remember(ids []string) {
	for _, id := range ids {
		if id != "" && !slices.Contains(tr.ids, id) {
			tr.ids = append(tr.ids, id)
		}
	}
	if n := len(tr.ids) - maxTails; n > 0 {
		tr.ids = slices.Delete(tr.ids, 0, n)
	}
}

// evidence reads the transcripts at path(session id), for each id the
// session has had, for the nonces.
func (tr *transcripts) evidence(ctx context.Context, door Door, path func(id string) string, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	info, err := door.Session(ctx)
	switch {
	case err == nil:
		tr.remember([]string{info.ID})
	case errors.Is(err, ErrGone) && len(tr.ids) > 0:
	default:
		return ev, err
	}
	var keep []*tail
	for _, id := range tr.ids {
		p := path(id)
		if p == "" {
			continue // not written yet
		}
		i := slices.IndexFunc(tr.tails, func(t *tail) bool { return t.path == p })
		t := newTail(p)
		if i >= 0 {
			t = tr.tails[i]
		}
		keep = append(keep, t)
		if err := t.read(); err != nil && !errors.Is(err, os.ErrNotExist) {
			return ev, err
		}
	}
	tr.tails = keep
	for _, n := range nonces {
		for _, t := range tr.tails {
			if at, ok := t.seen[n]; ok {
				ev.Seen[n] = at
			} else if _, ok := t.submitted[n]; ok || t.queued[n] {
				ev.Queued[n] = true
			}
		}
	}
	for n := range ev.Seen {
		delete(ev.Queued, n)
	}
	return ev, nil
}

// glob1 is the one file matching pattern, or "".
func glob1(pattern string) string {
	m, _ := filepath.Glob(pattern)
	if len(m) == 1 {
		return m[0]
	}
	return ""
}

// transcript is the path of session id's transcript: in Transcripts when
// the hook input named it, else found among the projects' folders (a
// session id is a UUID: one file at most); "" if there is none yet.
func (d *ClaudeDoor) transcript(id string) string {
	if d.Transcripts != "" {
		return filepath.Join(d.Transcripts, id+".jsonl")
	}
	return glob1(filepath.Join(d.Config, "projects", "*", id+".jsonl"))
}
