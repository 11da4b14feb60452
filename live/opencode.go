package live

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// OpenCodeDoor rings an OpenCode session through mailfs's OpenCode plugin
// (.opencode/plugins/mailfs.js, which "mailfs setup opencode" writes). The
// plugin starts the deliverer for a session at its first prompt, as a
// child whose standard input and output are pipes to the plugin, and the
// door speaks JSON lines over them:
//
//	deliverer → plugin  {"type":"ring","id":N,"text":"…"}
//	plugin → deliverer  {"type":"rung","id":N} or {"type":"rung","id":N,"error":"…"}
//	plugin → deliverer  {"type":"status","status":"busy"|"idle"|…}
//
// The plugin hands each ring to the session in-process
// (client.session.promptAsync): an idle session starts a turn, a busy one
// takes it after its running tool call. No port or token is involved, and
// the deliverer ends with its session by construction: when OpenCode exits
// the pipe closes, and the door says ErrGone. The doorbell's evidence is
// the plugin's chat.message hook, which runs "mailfs hook prompt-submit"
// on every prompt the session takes, the doorbell's included.
type OpenCodeDoor struct {
	ID   string  // the OpenCode session id
	Proc Process // the OpenCode process (the plugin's, the deliverer's parent)

	out io.Writer

	mu     sync.Mutex
	status string
	next   int
	acks   map[int]chan error
	closed chan struct{}
}

// ringTimeout bounds the wait for the plugin to say it handed a doorbell
// on.
const ringTimeout = 10 * time.Second

// NewOpenCodeDoor returns the door of OpenCode session id, whose plugin
// reads the deliverer's lines from out and writes its own to in.
func NewOpenCodeDoor(id string, proc Process, in io.Reader, out io.Writer) *OpenCodeDoor {
	d := &OpenCodeDoor{ID: id, Proc: proc, out: out, acks: map[int]chan error{}, closed: make(chan struct{})}
	go d.read(in)
	return d
}

// read takes in the plugin's lines until the pipe closes.
func (d *OpenCodeDoor) read(in io.Reader) {
	defer close(d.closed)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		var m struct {
			Type   string `json:"type"`
			ID     int    `json:"id"`
			Error  string `json:"error"`
			Status string `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		d.mu.Lock()
		switch m.Type {
		case "status":
			d.status = m.Status
		case "rung":
			if ch, ok := d.acks[m.ID]; ok {
				delete(d.acks, m.ID)
				if m.Error != "" {
					ch <- fmt.Errorf("live: OpenCode session %s: %s", d.ID, m.Error)
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
func (d *OpenCodeDoor) Session(context.Context) (Info, error) {
	select {
	case <-d.closed:
		return Info{}, fmt.Errorf("%w: OpenCode session %s (its plugin closed the pipe)", ErrGone, d.ID)
	default:
	}
	if d.Proc.PID != 0 && !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: OpenCode process %d", ErrGone, d.Proc.PID)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return Info{Runtime: "opencode", Process: d.Proc, ID: d.ID, Status: d.status, Where: "plugin pipe"}, nil
}

// Ring hands the doorbell to the plugin and waits for it to say the
// session took it.
func (d *OpenCodeDoor) Ring(ctx context.Context, text string) error {
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
		return fmt.Errorf("live: OpenCode session %s: writing to its plugin: %w", d.ID, err)
	}
	timer := time.NewTimer(ringTimeout)
	defer timer.Stop()
	select {
	case err := <-ack:
		return err
	case <-d.closed:
		return fmt.Errorf("%w: OpenCode session %s (its plugin closed the pipe)", ErrGone, d.ID)
	case <-ctx.Done():
		d.forget(id)
		return ctx.Err()
	case <-timer.C:
		d.forget(id)
		return errors.New("live: OpenCode's plugin did not answer the doorbell within 10s")
	}
}

func (d *OpenCodeDoor) forget(id int) {
	d.mu.Lock()
	delete(d.acks, id)
	d.mu.Unlock()
}
