package live

import (
	"testing"
	"time"
)

// The gate keeps Spacing after the last doorbell and PerMinute doorbells
// in any minute, whichever is later, and forgets rings a minute old.
func TestGateSpacingAndCeiling(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	st := &run{rec: &Record{}, spacing: 2 * time.Second, perMinute: 3}
	if g := st.gate(t0); !g.IsZero() {
		t.Fatalf("before any doorbell the gate is %v, want open", g)
	}
	ring := func(at time.Time) {
		st.gate(at)
		st.rec.LastRing = at
		st.recent = append(st.recent, at)
	}
	for _, c := range []struct {
		ring time.Duration // a doorbell at t0+ring
		want time.Duration // then the gate, at t0+want
	}{
		{0, 2 * time.Second},                       // spacing after the first
		{2 * time.Second, 4 * time.Second},         // and the second
		{4 * time.Second, time.Minute},             // the third in a minute: a minute after the first
		{time.Minute, time.Minute + 2*time.Second}, // the first has left the minute: spacing again
	} {
		ring(t0.Add(c.ring))
		if g := st.gate(t0.Add(c.ring)); !g.Equal(t0.Add(c.want)) {
			t.Fatalf("after a ring at +%v the gate is +%v, want +%v", c.ring, g.Sub(t0), c.want)
		}
	}
	if got := len(st.recent); got != 3 {
		t.Fatalf("the gate remembers %d rings of the last minute, want 3", got)
	}
}
