package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"
)

// A PipeDoor rings a session through a plugin of mailfs's inside the
// runtime: OpenCode's (.opencode/plugins/mailfs.js, which "mailfs setup
// opencode" writes) or pi's (.pi/extensions/mailfs.ts, "mailfs setup pi").
// The plugin starts the deliverer for a session, as a child whose
// standard input and output are pipes to the plugin, and the door speaks
// JSON lines over them:
//
//	deliverer → plugin  {"type":"ring","id":N,"text":"…"}
//	plugin → deliverer  {"type":"rung","id":N} or {"type":"rung","id":N,"error":"…"}
//	plugin → deliverer  {"type":"status","status":"busy"|"idle"|…}
//	plugin → deliverer  {"type":"message","id":"msg_…","role":"user","text":"…"}
//	plugin → deliverer  {"type":"message","id":"msg_…","role":"assistant","at":MS,"error":"…"}
//	plugin → deliverer  {"type":"record","path":"…/session.jsonl"}
//
// The plugin hands each ring to the session in-process (OpenCode:
// client.session.promptAsync; pi: sendUserMessage, steered into a busy
// turn): an idle session starts a turn, a busy one takes it after its
// running tool call. No port or token is involved, and the deliverer ends
// with its session by construction: when the runtime exits the pipe
// closes, and the door says ErrGone.
//
// The door is a [Confirmer], by the evidence rule (see answered) over the
// runtime's own record of the session. OpenCode keeps its messages in a
// database of its own; the plugin passes on, as OpenCode records them,
// each doorbell's user message (chat.message: its id and text) and each
// assistant message once it completed (message.updated: its id, its
// completion time, its error), and the door orders them by id, as
// OpenCode does: a doorbell taken while a tool call runs is answered only
// by an assistant message begun after it, not by the tool call's own.
// pi keeps a session file of JSON lines; the extension names it (a
// "record" line) and the door reads it (see piEntry).
type PipeDoor struct {
	Runtime string  // opencode, pi
	ID      string  // the runtime's session id
	Proc    Process // the runtime's process (the plugin's, the deliverer's parent)

	out io.Writer

	mu     sync.Mutex
	status string
	next   int
	acks   map[int]chan error
	closed chan struct{}
	msgs   map[string]ocMessage // OpenCode: the messages the plugin passed on, by id
	file   *recordFile          // pi: the session file, once the extension named it
}

// ringTimeout bounds the wait for the plugin to say it handed a doorbell
// on.
const ringTimeout = 10 * time.Second

// NewPipeDoor returns the door of runtime's session id, whose plugin reads
// the deliverer's lines from out and writes its own to in.
func NewPipeDoor(runtime, id string, proc Process, in io.Reader, out io.Writer) *PipeDoor {
	d := &PipeDoor{Runtime: runtime, ID: id, Proc: proc, out: out, acks: map[int]chan error{}, closed: make(chan struct{}), msgs: map[string]ocMessage{}}
	go d.read(in)
	return d
}

// read takes in the plugin's lines until the pipe closes.
func (d *PipeDoor) read(in io.Reader) {
	defer close(d.closed)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var m struct {
			Type   string          `json:"type"`
			ID     json.RawMessage `json:"id"`
			Error  string          `json:"error"`
			Status string          `json:"status"`
			Path   string          `json:"path"`
			ocMessage
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		d.mu.Lock()
		switch m.Type {
		case "status":
			d.status = m.Status
		case "record":
			if d.file == nil || d.file.path != m.Path {
				d.file = &recordFile{growing: growing{path: m.Path}}
			}
		case "message":
			if json.Unmarshal(m.ID, &m.ocMessage.ID) == nil && m.ocMessage.ID != "" && len(d.msgs) < maxMessages {
				m.ocMessage.Failed = m.Error
				d.msgs[m.ocMessage.ID] = m.ocMessage
			}
		case "rung":
			var id int
			json.Unmarshal(m.ID, &id)
			if ch, ok := d.acks[id]; ok {
				delete(d.acks, id)
				if m.Error != "" {
					ch <- fmt.Errorf("live: %s session %s: %s", d.Runtime, d.ID, m.Error)
				} else {
					ch <- nil
				}
			}
		}
		d.mu.Unlock()
	}
}

// Session reports the session: gone once the plugin's pipe closed or
// OpenCode's process ended.
func (d *PipeDoor) Session(context.Context) (Info, error) {
	select {
	case <-d.closed:
		return Info{}, fmt.Errorf("%w: %s session %s (its plugin closed the pipe)", ErrGone, d.Runtime, d.ID)
	default:
	}
	if d.Proc.PID != 0 && !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: %s process %d", ErrGone, d.Runtime, d.Proc.PID)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return Info{Runtime: d.Runtime, Process: d.Proc, ID: d.ID, Status: d.status, Where: "plugin pipe"}, nil
}

// Ring hands the doorbell to the plugin and waits for it to say the
// session took it.
func (d *PipeDoor) Ring(ctx context.Context, text string) error {
	if _, err := d.Session(ctx); err != nil {
		return err
	}
	ack := make(chan error, 1)
	d.mu.Lock()
	d.next++
	id := d.next
	d.acks[id] = ack
	line, err := marshal(map[string]any{"type": "ring", "id": id, "text": text})
	if err == nil {
		_, err = d.out.Write(line)
	}
	d.mu.Unlock()
	if err != nil {
		d.forget(id)
		return fmt.Errorf("live: %s session %s: writing to its plugin: %w", d.Runtime, d.ID, err)
	}
	timer := time.NewTimer(ringTimeout)
	defer timer.Stop()
	select {
	case err := <-ack:
		return err
	case <-d.closed:
		return fmt.Errorf("%w: %s session %s (its plugin closed the pipe)", ErrGone, d.Runtime, d.ID)
	case <-ctx.Done():
		d.forget(id)
		return ctx.Err()
	case <-timer.C:
		d.forget(id)
		return fmt.Errorf("live: %s's plugin did not answer the doorbell within 10s", d.Runtime)
	}
}

func (d *PipeDoor) forget(id int) {
	d.mu.Lock()
	delete(d.acks, id)
	d.mu.Unlock()
}

// The evidence rule, one for every runtime whose record mailfs reads
// (OpenCode's session messages, pi's session file, Qwen Code's chat
// record): a doorbell reached the model when the runtime's own record of
// the conversation holds an entry carrying its ring mark and, after it,
// the model's answer. A record that holds the mark with no answer after
// it shows the doorbell taken, not answered: queued. A prompt hook seeing
// the mark, a paste, a queued prompt: none is an answer.

// An entry is one entry of a runtime's record of a conversation, as the
// evidence rule reads it.
type entry struct {
	Marks  []string  // the ring marks a prompt entry (the user's side) holds
	Answer bool      // the model's output: an assistant entry, not an error or an abort
	At     time.Time // when the runtime wrote it
}

// answered applies the evidence rule to record, its entries in the order
// the runtime gave them to the model: of nonces, Seen holds those with an
// answer after their mark (at the first such answer's time), Queued those
// whose mark has no answer after it yet. An answer's own marks count for
// nothing: a model quoting a doorbell is not the runtime giving it one.
func answered(record []entry, nonces []string) Evidence {
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	want := map[string]bool{}
	for _, n := range nonces {
		want[n] = true
	}
	var open []string
	for _, e := range record {
		if e.Answer {
			for _, n := range open {
				if _, ok := ev.Seen[n]; !ok {
					ev.Seen[n] = e.At
				}
			}
			open = open[:0]
			continue
		}
		for _, n := range e.Marks {
			if want[n] {
				open = append(open, n)
			}
		}
	}
	for _, n := range open {
		if _, ok := ev.Seen[n]; !ok {
			ev.Queued[n] = true
		}
	}
	return ev
}

// merge adds to ev what another record of the session showed: an answer
// in any record wins, at its earliest; queued only where none answered.
func (ev Evidence) merge(got Evidence) {
	for n, at := range got.Seen {
		if was, ok := ev.Seen[n]; !ok || at.Before(was) {
			ev.Seen[n] = at
		}
		delete(ev.Queued, n)
	}
	for n := range got.Queued {
		if _, ok := ev.Seen[n]; !ok {
			ev.Queued[n] = true
		}
	}
}

// keepEntry appends e to a record kept for the evidence rule, leaving out
// what cannot change its verdict: entries with no mark and no answer, and
// an answer right after an answer.
func keepEntry(record []entry, e entry) []entry {
	switch {
	case !e.Answer && len(e.Marks) == 0:
		return record
	case e.Answer && (len(record) == 0 || record[len(record)-1].Answer):
		return record
	}
	return append(record, e)
}

// maxRecordRead bounds what one look reads of a runtime's record file,
// and maxRecordLine the longest line taken in (a longer one, a tool's
// large output, is skipped: it is neither a doorbell nor the model's
// answer to one).
const (
	maxRecordRead = 16 << 20
	maxRecordLine = 8 << 20
)

// A recordFile is a runtime's record of a session kept as JSON lines,
// read as it grows: each look takes in the lines appended since the last.
type recordFile struct {
	growing
	entries []entry
}

// more reads what was appended to the file since the last look, handing
// each whole line to parse; the entries it returns are kept (see
// keepEntry). A file that shrank is read again from its start.
func (r *recordFile) more(parse func(line []byte) (entry, bool)) error {
	var got []entry
	restarted, err := r.next(maxRecordRead, maxRecordLine, func(line []byte) {
		if e, ok := parse(line); ok {
			got = append(got, e)
		}
	})
	if restarted {
		r.entries = nil
	}
	for _, e := range got {
		r.entries = keepEntry(r.entries, e)
	}
	return err
}

// Evidence applies the evidence rule to what the door has of the runtime's
// record: the messages OpenCode's plugin passed on, or pi's session file.
// A door with neither yet has no evidence (and no error).
func (d *PipeDoor) Evidence(_ context.Context, nonces []string) (Evidence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.file != nil {
		err := d.file.more(piEntry)
		if errors.Is(err, fs.ErrNotExist) {
			err = nil // pi writes the file with the first answer
		}
		return answered(d.file.entries, nonces), err
	}
	return answered(openCodeRecord(d.msgs), nonces), nil
}
