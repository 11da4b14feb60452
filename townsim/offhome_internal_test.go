package townsim

import (
	"strings"
	"testing"
	"time"
)

// The soak's off-home check: claims within offHomeBound periods and
// syncs pass, one of a hundred late does not move the 99th percentile,
// and two late by a period past the bound fail the run, naming the
// bound.
func TestOffHomeCheck(t *testing.T) {
	period := *soakPeriod
	sync := period / 4
	bound := offHomeBound * (period + sync)
	for _, tc := range []struct {
		name string
		late int // claims of the hundred that wait bound + one period
		fail bool
	}{
		{"all served within a period", 0, false},
		{"one late in a hundred", 1, false},
		{"two late in a hundred", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(time.Now())
			l.syncTimes["alpha"] = []time.Duration{sync, sync, sync}
			now := time.Now()
			for i := range 100 {
				wait := period * 9 / 10
				if i < tc.late {
					wait = bound + period
				}
				l.offHomeClaim("w-x", now.Add(-wait), now)
			}
			o := &oracle{tw: &town{led: l}}
			o.offHomeServed()
			if failed := len(o.findings) > 0; failed != tc.fail {
				t.Fatalf("findings %v, want a failure: %v", o.findings, tc.fail)
			}
			if tc.fail && !strings.Contains(o.findings[0].what, "3 periods and 3 syncs") {
				t.Errorf("the finding does not name the bound: %s", o.findings[0].what)
			}
		})
	}
}
