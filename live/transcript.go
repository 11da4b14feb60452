package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/hook"
)

// Claude Code writes each session's transcript as JSON lines in
// <config>/projects/<the folder, made a name>/<session id>.jsonl, and
// writes there what it does with a message that reaches its socket: a
// "queue-operation" line when it queues it ("enqueue"), and, when the
// message becomes model input, lines of other types that carry its text
// (the queued_command attachment of a busy turn, the user message of an
// idle session's new turn, the request it sends the model). So the
// transcript is the session's own record of which doorbells the model
// was given: a doorbell's nonce on a line that is not a queue operation
// is the evidence; one seen only on an enqueue is queued.

// maxTranscriptRead bounds what one look reads of a transcript, and
// maxTranscriptLine the longest line kept whole (a longer one is skipped:
// requests carrying the whole system prompt run to a few hundred KB).
const (
	maxTranscriptRead = 16 << 20
	maxTranscriptLine = 32 << 20
)

// tail is what has been read of one transcript.
type tail struct {
	path    string
	off     int64
	partial []byte
	skip    bool // inside a line too long to keep: drop up to its end
	seen    map[string]time.Time
	queued  map[string]bool
}

// read takes in what was appended since the last read.
func (t *tail) read() error {
	f, err := os.Open(t.path)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < t.off {
		t.off, t.partial, t.skip = 0, nil, false // rewritten from the start
	}
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	buf, err := io.ReadAll(io.LimitReader(f, maxTranscriptRead))
	if err != nil {
		return err
	}
	t.off += int64(len(buf))
	now := time.Now()
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			if !t.skip {
				t.partial = append(t.partial, buf...)
				if len(t.partial) > maxTranscriptLine {
					t.partial, t.skip = nil, true
				}
			}
			break
		}
		line := buf[:i]
		buf = buf[i+1:]
		if t.skip {
			t.skip = false
			continue
		}
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = nil
		}
		if len(line) <= maxTranscriptLine {
			t.line(line, now)
		}
	}
	return nil
}

// line takes in one transcript line.
func (t *tail) line(line []byte, now time.Time) {
	if !bytes.Contains(line, []byte("(ring ")) {
		return
	}
	var v struct {
		Type      string `json:"type"`
		Operation string `json:"operation"`
	}
	if json.Unmarshal(line, &v) != nil {
		return
	}
	for _, n := range hook.RingMarks(string(line)) {
		switch {
		case v.Type != "queue-operation":
			if _, ok := t.seen[n]; !ok {
				t.seen[n] = now
			}
		case v.Operation == "enqueue":
			t.queued[n] = true
		default: // removed from the queue; a line of another type says whether the model got it
			delete(t.queued, n)
		}
	}
}

// Evidence reads the session's transcript (see the comment at the top of
// transcript.go) for the nonces.
func (d *ClaudeDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	return d.tr.evidence(ctx, d, d.transcript, nonces)
}

// transcripts is what a door keeps of its session's transcript: what was
// read, and the session id it last had (read after the session ended: its
// last turn may have taken a doorbell in).
type transcripts struct {
	tail   *tail
	lastID string
}

// evidence reads the transcript at path(session id) for the nonces.
func (tr *transcripts) evidence(ctx context.Context, door Door, path func(id string) string, nonces []string) (Evidence, error) {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	info, err := door.Session(ctx)
	switch {
	case err == nil && info.ID != "":
		tr.lastID = info.ID
	case errors.Is(err, ErrGone) && tr.lastID != "":
	default:
		return ev, err
	}
	p := path(tr.lastID)
	if p == "" {
		return ev, nil // not written yet
	}
	if tr.tail == nil || tr.tail.path != p {
		tr.tail = &tail{path: p, seen: map[string]time.Time{}, queued: map[string]bool{}}
	}
	if err := tr.tail.read(); err != nil && !errors.Is(err, os.ErrNotExist) {
		return ev, err
	}
	for _, n := range nonces {
		if at, ok := tr.tail.seen[n]; ok {
			ev.Seen[n] = at
		} else if tr.tail.queued[n] {
			ev.Queued[n] = true
		}
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
