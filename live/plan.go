package live

import (
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A situation is what the deliverer knows when it decides whether to ring:
// no file, socket or clock is read while deciding, so the decision can be
// tested by a table (see plan).
type situation struct {
	now      time.Time
	waiting  map[string]pending // the mail not yet rung, by id
	dnd      bool               // do not disturb is on
	gate     time.Time          // the first moment a doorbell may ring (see run.gate)
	lastRing time.Time          // the last doorbell, zero if none
	every    time.Duration      // the least time between doorbells of normal mail
}

// A decision is what a step does with the mail, before nudges: ring or
// not, what the doorbell would name, what waits and why, when to look
// again.
type decision struct {
	// urgent: a pressing message is due (urgent mail, high mail outside do
	// not disturb, or mail rung before and never confirmed), past its
	// coalescing window, and the gate is open.
	urgent bool
	// normal: normal or low mail waits, the gate is open and Every has
	// passed since the last doorbell.
	normal bool
	// mail is what a doorbell rung now names: every pressing message when
	// urgent, however young (mail that lands together rings together), and
	// the normal and low mail (outside do not disturb).
	mail []*maildir.Message
	// held says why each message that waits is not in mail: "spacing"
	// (pressing, held by the gate), "dnd".
	held map[string]string
	// batched are the normal messages in mail that wait when nothing
	// rings, and batchedAt when they are due.
	batched   []string
	batchedAt time.Time
	// next is when a pressing message not yet due becomes due.
	next time.Time
}

// pressing reports whether p rings as soon as the gate allows: urgent mail
// always; high mail, and mail rung before with no evidence, outside do not
// disturb.
func pressing(p pending, dnd bool) bool {
	if dnd {
		return !DNDHolds(p.m)
	}
	return p.m.Priority == maildir.Urgent || p.m.Priority == maildir.High || p.again
}

// plan decides, from the situation alone. A doorbell is due once the
// oldest pressing message has waited the coalescing window and the gate
// allows; it then takes every pressing message waiting, however young.
// Normal and low mail ring at most once per every, and ride any doorbell
// that rings; under do not disturb only urgent mail rings.
func plan(s situation) decision {
	d := decision{held: map[string]string{}}
	for _, p := range s.waiting {
		if pressing(p, s.dnd) && !s.now.Before(later(p.since.Add(coalesce), s.gate)) {
			d.urgent = true
		}
	}
	var normalSince time.Time
	for id, p := range s.waiting {
		switch {
		case pressing(p, s.dnd):
			if !d.urgent {
				if !s.now.Before(p.since.Add(coalesce)) {
					d.held[id] = "spacing"
				}
				d.next = minTime(d.next, later(p.since.Add(coalesce), s.gate))
				continue
			}
		case s.dnd:
			d.held[id] = "dnd"
			continue
		default:
			if normalSince.IsZero() || p.since.Before(normalSince) {
				normalSince = p.since
			}
			d.batched = append(d.batched, id)
		}
		d.mail = append(d.mail, p.m)
	}
	if !normalSince.IsZero() {
		d.batchedAt = later(s.lastRing.Add(s.every), s.gate)
		d.normal = !s.now.Before(s.gate) && (s.lastRing.IsZero() || !s.now.Before(s.lastRing.Add(s.every)))
	}
	return d
}
