package live

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// The deliverer's decision, by table: priorities, do not disturb, the
// coalescing window, batching by Every, the gate (spacing and the
// per-minute ceiling), and mail rung again for want of evidence.
func TestPlan(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	every := 30 * time.Second
	msg := func(id string, p maildir.Priority, ago time.Duration, again bool) pending {
		return pending{m: &maildir.Message{ID: id, Priority: p}, since: t0.Add(-ago), again: again}
	}
	type want struct {
		urgent, normal bool
		mail           []string          // what a doorbell now names
		held           map[string]string // what waits, why
		batched        []string
		next           time.Duration // from t0; -1: none
	}
	for _, c := range []struct {
		name     string
		waiting  []pending
		dnd      bool
		gate     time.Duration // from t0; 0: open
		lastRing time.Duration // ago; 0: never
		want     want
	}{
		{name: "urgent after a quiet spell rings at once",
			waiting: []pending{msg("u", maildir.Urgent, time.Second, false)},
			want:    want{urgent: true, mail: []string{"u"}, next: -1}},
		{name: "urgent within its coalescing window waits for mail landing with it",
			waiting: []pending{msg("u", maildir.Urgent, 5*time.Millisecond, false)},
			want:    want{next: coalesce - 5*time.Millisecond}},
		{name: "a due urgent doorbell takes young pressing mail and the normal mail too",
			waiting:  []pending{msg("u", maildir.Urgent, time.Second, false), msg("h", maildir.High, time.Millisecond, false), msg("n", maildir.Normal, time.Second, false), msg("l", maildir.Low, time.Second, false)},
			lastRing: 5 * time.Second,
			want:     want{urgent: true, mail: []string{"h", "l", "n", "u"}, batched: []string{"l", "n"}, next: -1}},
		{name: "the gate holds urgent mail: spacing",
			waiting: []pending{msg("u", maildir.Urgent, time.Second, false)},
			gate:    2 * time.Second, lastRing: time.Second,
			want: want{held: map[string]string{"u": "spacing"}, next: 2 * time.Second}},
		{name: "under do not disturb high and normal wait, urgent rings",
			waiting: []pending{msg("u", maildir.Urgent, time.Second, false), msg("h", maildir.High, time.Second, false), msg("n", maildir.Normal, time.Second, false)},
			dnd:     true,
			want:    want{urgent: true, mail: []string{"u"}, held: map[string]string{"h": "dnd", "n": "dnd"}, next: -1}},
		{name: "high alone under do not disturb does not ring",
			waiting: []pending{msg("h", maildir.High, time.Second, false)},
			dnd:     true,
			want:    want{held: map[string]string{"h": "dnd"}, next: -1}},
		{name: "normal mail with no doorbell before rings at once",
			waiting: []pending{msg("n", maildir.Normal, time.Second, false)},
			want:    want{normal: true, mail: []string{"n"}, batched: []string{"n"}, next: -1}},
		{name: "normal mail within Every of the last doorbell is batched",
			waiting:  []pending{msg("n", maildir.Normal, time.Second, false)},
			lastRing: 10 * time.Second,
			want:     want{mail: []string{"n"}, batched: []string{"n"}, next: -1}},
		{name: "normal mail past Every rings",
			waiting:  []pending{msg("n", maildir.Normal, time.Second, false)},
			lastRing: every,
			want:     want{normal: true, mail: []string{"n"}, batched: []string{"n"}, next: -1}},
		{name: "normal mail past Every still waits for the gate (the per-minute ceiling)",
			waiting:  []pending{msg("n", maildir.Normal, time.Second, false)},
			lastRing: every, gate: 20 * time.Second,
			want: want{mail: []string{"n"}, batched: []string{"n"}, next: -1}},
		{name: "normal mail rung before with no evidence rings at the gate, not after Every",
			waiting:  []pending{msg("n", maildir.Normal, time.Second, true)},
			lastRing: 3 * time.Second,
			want:     want{urgent: true, mail: []string{"n"}, next: -1}},
		{name: "mail rung again waits under do not disturb",
			waiting: []pending{msg("n", maildir.Normal, time.Second, true)},
			dnd:     true,
			want:    want{held: map[string]string{"n": "dnd"}, next: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := situation{now: t0, waiting: map[string]pending{}, dnd: c.dnd, every: every}
			for _, p := range c.waiting {
				s.waiting[p.m.ID] = p
			}
			if c.gate > 0 {
				s.gate = t0.Add(c.gate)
			}
			if c.lastRing > 0 {
				s.lastRing = t0.Add(-c.lastRing)
			}
			d := plan(s)
			var mail []string
			for _, m := range d.mail {
				mail = append(mail, m.ID)
			}
			slices.Sort(mail)
			slices.Sort(d.batched)
			var next time.Duration = -1
			if !d.next.IsZero() {
				next = d.next.Sub(t0)
			}
			held := c.want.held
			if held == nil {
				held = map[string]string{}
			}
			if d.urgent != c.want.urgent || d.normal != c.want.normal || !slices.Equal(mail, c.want.mail) || !maps.Equal(d.held, held) || !slices.Equal(d.batched, c.want.batched) || next != c.want.next {
				t.Errorf("plan: urgent %v normal %v mail %v held %v batched %v next %v\nwant urgent %v normal %v mail %v held %v batched %v next %v",
					d.urgent, d.normal, mail, d.held, d.batched, next, c.want.urgent, c.want.normal, c.want.mail, held, c.want.batched, c.want.next)
			}
		})
	}
}

// Under do not disturb the deliverer holds exactly what DNDHolds says, and
// so what "mailfs dnd status" counts (DNDHeld): every priority, rung
// before or not.
func TestPlanHoldsWhatDNDHoldsSays(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	waiting := map[string]pending{}
	var mail []*maildir.Message
	for _, p := range []maildir.Priority{maildir.Urgent, maildir.High, maildir.Normal, maildir.Low} {
		for _, again := range []bool{false, true} {
			m := &maildir.Message{ID: string(p) + map[bool]string{false: "", true: "-again"}[again], Priority: p}
			waiting[m.ID] = pending{m: m, since: t0.Add(-time.Second), again: again}
			mail = append(mail, m)
		}
	}
	d := plan(situation{now: t0, waiting: waiting, dnd: true, every: 30 * time.Second})
	for id, p := range waiting {
		if held := d.held[id] == "dnd"; held != DNDHolds(p.m) {
			t.Errorf("%s: held for dnd %v, DNDHolds %v", id, held, DNDHolds(p.m))
		}
	}
	if n, _ := DNDHeld(mail, nil); n != len(d.held) || n != 6 {
		t.Errorf("DNDHeld counts %d, the plan holds %d (%v)", n, len(d.held), d.held)
	}
}
