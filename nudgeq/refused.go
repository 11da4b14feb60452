package nudgeq

import (
	"encoding/json"
	"errors"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// A refusal note records one nudge refused because the queue was full, so
// that the recipient learns of it at its next drain. Notes are files named
// like nudges in the queue's refused/ folder, claimed and committed with the
// nudges of a Batch.
type refusalNote struct {
	Sender    string    `json:"sender"`
	Timestamp time.Time `json:"timestamp"`
}

// noteRefusal leaves a note in the queue folder queue; failing to is
// reported to Warn, as the sender already gets the refusal as an error.
func (q *Queue) noteRefusal(queue *durable.Dir, sender string, now time.Time) {
	d, err := queue.MkSub(refusedDir)
	if err != nil {
		q.warn(queue.Join(refusedDir), err)
		return
	}
	defer d.Close()
	if l, err := list(d); err != nil || len(l.nudges) >= maxRefusals {
		return // enough notes to say the queue overflowed
	}
	data, _ := json.Marshal(refusalNote{Sender: sender, Timestamp: now.UTC()})
	for {
		err := d.CreateEphemeral(newName(now), append(data, '\n'))
		if !errors.Is(err, fs.ErrExist) {
			if err != nil {
				q.warn(d.Path(), err)
			}
			return
		}
	}
}

// claimRefusals claims agent's refusal notes into b and summarises them.
func (q *Queue) claimRefusals(b *Batch, now time.Time) error {
	d, err := b.dir.Sub(refusedDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	b.notes = d
	l, err := list(d)
	if err != nil {
		return err
	}
	if q.returnOrphans(d, l.claims, now, q.orphanAfterFor(b.Agent)) {
		if l, err = list(d); err != nil {
			return err
		}
	}
	var sum Refusals
	for _, name := range l.nudges {
		data, _, err := d.ReadFile(name, 4096)
		var note refusalNote
		if err == nil {
			err = json.Unmarshal(data, &note)
		}
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				q.warn(d.Join(name), err)
			}
			continue
		}
		claim, ok, err := claimFile(d, name, now)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		b.noted = append(b.noted, claim)
		sum.Count++
		if !note.Timestamp.Before(sum.At) {
			sum.At, sum.Sender = note.Timestamp, note.Sender
		}
	}
	if sum.Count > 0 {
		b.Refused = &sum
	}
	return nil
}
