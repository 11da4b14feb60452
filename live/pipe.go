package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// A PipeDoor rings a session through a plugin of mailfs's inside the
// runtime: OpenCode's (.opencode/plugins/mailfs.js, which "mailfs setup
// opencode" writes) or pi's (.pi/extensions/mailfs.ts, "mailfs setup pi").
// The plugin starts the deliverer for a session at its first prompt, as a
// child whose standard input and output are pipes to the plugin, and the
// door speaks JSON lines over them:
//
//	deliverer → plugin  {"type":"ring","id":N,"text":"…"}
//	plugin → deliverer  {"type":"rung","id":N} or {"type":"rung","id":N,"error":"…"}
//	plugin → deliverer  {"type":"status","status":"busy"|"idle"|…}
//
// The plugin hands each ring to the session in-process (OpenCode:
// client.session.promptAsync; pi: sendUserMessage, steered into a busy
// turn): an idle session starts a turn, a busy one takes it after its
// running tool call. No port or token is involved, and the deliverer ends
// with its session by construction: when the runtime exits the pipe
// closes, and the door says ErrGone. The doorbell's evidence is the
// plugin's own: it runs "mailfs hook prompt-submit" on every prompt the
// session takes (or "mailfs live seen" on what the model is sent), the
// doorbell's included.
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
}

// ringTimeout bounds the wait for the plugin to say it handed a doorbell
// on.
const ringTimeout = 10 * time.Second

// NewPipeDoor returns the door of runtime's session id, whose plugin reads
// the deliverer's lines from out and writes its own to in.
func NewPipeDoor(runtime, id string, proc Process, in io.Reader, out io.Writer) *PipeDoor {
	d := &PipeDoor{Runtime: runtime, ID: id, Proc: proc, out: out, acks: map[int]chan error{}, closed: make(chan struct{})}
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
