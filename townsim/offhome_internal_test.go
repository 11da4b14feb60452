package townsim

import (
	"strings"
	"testing"
	"time"
)

// The soak's off-home check: waits no fault touched pass within one
// period and three syncs, and two late in a hundred fail the run naming
// that bound; waits a fault touched pass up to offHomeBound periods and
// syncs, and fail beyond, naming theirs.
func TestOffHomeCheck(t *testing.T) {
	period := *soakPeriod
	sync := period / 4
	strict := period + 3*sync
	loose := offHomeBound * (period + sync)
	for _, tc := range []struct {
		name    string
		faulted bool          // a fault touches every wait
		late    int           // waits of the hundred that take wait
		wait    time.Duration // how long the late ones wait
		fail    string        // the bound a failure names ("": passes)
	}{
		{"all served within a period", false, 0, 0, ""},
		{"one late in a hundred", false, 1, strict + period, ""},
		{"two late in a hundred", false, 2, strict + period, "1 period(s) and 3 syncs"},
		{"two a little past one period and three syncs", false, 2, strict + 50*time.Millisecond, "1 period(s) and 3 syncs"},
		{"a fault held them past one period", true, 100, strict + period, ""},
		{"a fault held two past three periods", true, 2, loose + period, "3 period(s) and 3 syncs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(time.Now())
			l.syncTimes["alpha"] = []time.Duration{sync, sync, sync}
			now := time.Now()
			start := now.Add(-time.Hour)
			for i := range 100 {
				wait := period * 9 / 10
				if i < tc.late {
					wait = tc.wait
				}
				at := start.Add(time.Duration(i) * time.Minute) // apart: a fault's window touches only its own
				l.offHomeClaim("p3", "w-x", at, at.Add(wait))
				if tc.faulted {
					l.fault("sync killed", at.Add(time.Millisecond), at.Add(time.Millisecond), "beta")
					l.cleanSyncs["beta"] = append(l.cleanSyncs["beta"], span{at.Add(wait / 2), at.Add(wait)})
				}
			}
			o := &oracle{tw: &town{led: l}}
			o.offHomeServed()
			if failed := len(o.findings) > 0; failed != (tc.fail != "") {
				t.Fatalf("findings %v, want a failure: %v", o.findings, tc.fail != "")
			}
			if tc.fail != "" && !strings.Contains(o.findings[0].what, tc.fail) {
				t.Errorf("the finding does not name the bound %q: %s", tc.fail, o.findings[0].what)
			}
		})
	}
}

// A fault reaches from its start to the end of the first clean sync of
// each host it hit that began after it ended; a wait is faulted when it
// overlaps such a reach (of its own agent, for a fault of one agent).
func TestFaultWindows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	clean := map[string][]span{
		"alpha": {{at(0), at(1)}, {at(5), at(6)}, {at(20), at(21)}},
		"beta":  {{at(2), at(3)}, {at(9), at(10)}},
	}
	events := []faultEvent{
		{kind: "push refused", hosts: []string{"alpha", "beta"}, from: at(1.5), to: at(4.5)},   // alpha to 6, beta to 10
		{kind: "claim killed", agent: "p4", hosts: []string{"beta"}, from: at(11), to: at(11)}, // no clean sync after: to the end
	}
	ws := faultWindows(events, clean)
	want := []faultWindow{
		{"push refused", "", span{at(1.5), at(6)}},
		{"push refused", "", span{at(1.5), at(10)}},
	}
	if len(ws) != 3 || ws[0] != want[0] || ws[1] != want[1] || ws[2].start != at(11) || ws[2].end.Before(at(1e6)) {
		t.Fatalf("windows %v, want %v and p4's from 11 s to the end", ws, want)
	}
	waits := []offSpan{
		{"p3", span{at(0), at(1.4)}},    // before any fault
		{"p3", span{at(9.5), at(10.5)}}, // overlaps beta's refusal window
		{"p3", span{at(10.5), at(30)}},  // after it; p4's killed claim is not p3's
		{"p4", span{at(10.5), at(12)}},  // its own claim killed
	}
	clean2, faulted, kinds := splitByFaults(waits, ws)
	if len(clean2) != 2 || clean2[0] != 1400*time.Millisecond || clean2[1] != 19500*time.Millisecond || len(faulted) != 2 ||
		kinds["push refused"] != 1 || kinds["claim killed"] != 1 {
		t.Fatalf("clean %v, faulted %v, kinds %v", clean2, faulted, kinds)
	}
}
