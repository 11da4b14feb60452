package townsim

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Off-home claims, measured two ways besides their wait: whether the
// wait overlapped a fault (faults hold the tail; the promise is for the
// waits they did not touch), and whether work piled up on the home while
// an off-home agent wanted an item.

// A faultEvent is a fault of the town that can hold an off-home claim
// up: on hosts, from from until to (an instant: the same time).
type faultEvent struct {
	kind     string // "sync killed", "power cut", "host crash", "push refused", "squash", "claim killed"
	agent    string // the one agent it holds up ("": every agent on hosts)
	hosts    []string
	from, to time.Time
}

// A span is a stretch of time: a sync that ran from start to end, or a
// fault's reach.
type span struct{ start, end time.Time }

// An offSpan is an off-home claim's wait while work was there: whose, and
// when.
type offSpan struct {
	agent string
	span
}

// A faultWindow is how long a fault reaches: from its start until the
// end of the first sync of each host it hit that began after it ended
// and brought no error (the sync that undoes what the fault held up).
type faultWindow struct {
	kind, agent string
	span
}

// faultWindows returns the reach of each event on each of its hosts,
// given each host's syncs that ended without an error. A host with no
// clean sync after the fault is held up until the end (far future).
func faultWindows(events []faultEvent, clean map[string][]span) []faultWindow {
	never := time.Unix(1<<40, 0)
	var out []faultWindow
	for _, e := range events {
		for _, h := range e.hosts {
			end := never
			for _, s := range clean[h] {
				if !s.start.Before(e.to) && s.end.Before(end) {
					end = s.end
				}
			}
			out = append(out, faultWindow{e.kind, e.agent, span{e.from, end}})
		}
	}
	return out
}

// splitByFaults splits waits into those that overlapped a fault window
// and those that did not, returning their durations and, for the
// former, how many overlapped each kind of fault.
func splitByFaults(waits []offSpan, windows []faultWindow) (clean, faulted []time.Duration, kinds map[string]int) {
	kinds = map[string]int{}
	for _, w := range waits {
		var hit []string
		for _, f := range windows {
			if (f.agent == "" || f.agent == w.agent) && f.start.Before(w.end) && w.start.Before(f.end) && !slices.Contains(hit, f.kind) {
				hit = append(hit, f.kind)
			}
		}
		if len(hit) == 0 {
			clean = append(clean, w.end.Sub(w.start))
			continue
		}
		faulted = append(faulted, w.end.Sub(w.start))
		for _, k := range hit {
			kinds[k]++
		}
	}
	return clean, faulted, kinds
}

// fault records a fault event that holds up every agent of hosts.
func (l *ledger) fault(kind string, from, to time.Time, hosts ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.faults = append(l.faults, faultEvent{kind: kind, hosts: hosts, from: from, to: to})
}

// want records that a polecat of host h wants an item from at on (zero:
// it holds one).
func (l *ledger) want(h *host, agent string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.IsZero() {
		delete(l.wanting, agent)
		return
	}
	l.wanting[agent] = wanter{h.name, at}
}

type wanter struct {
	host  string
	since time.Time
}

// offHomeSplitLocked splits the off-home waits while work was there by
// whether a fault touched them.
func (l *ledger) offHomeSplitLocked() (clean, faulted []time.Duration, kinds map[string]int) {
	return splitByFaults(l.offSpans, faultWindows(l.faults, l.cleanSyncs))
}

// A pile is what the home's queue held while off-home agents wanted an
// item: sampled every pileEvery.
type pile struct {
	wanted    time.Duration            // time some off-home polecat wanted an item
	withItems time.Duration            // of that, time the home's queue held items
	depths    []time.Duration          // the queue's depth at each such sample (as a count, for quantile)
	sat       map[string]time.Duration // item file -> how long it sat in the home's queue while wanted
	atHome    time.Duration            // time a request was in the home's tree
	atHomeAnd time.Duration            // of that, time the home's queue held items too
	satAtHome map[string]time.Duration // item file -> how long it sat while a request was at the home
}

const pileEvery = 100 * time.Millisecond

// watchPile samples alpha's queue and requests, and the off-home
// polecats' wants, until ctx ends.
func (tw *town) watchPile(ctx context.Context) {
	p := &tw.led.pile
	tw.led.mu.Lock()
	p.sat, p.satAtHome = map[string]time.Duration{}, map[string]time.Duration{}
	tw.led.mu.Unlock()
	queue := filepath.Join(tw.alpha.root(), "state", "queue", "work")
	requests := filepath.Join(tw.alpha.root(), "state", "requests", "work")
	tick := time.NewTicker(pileEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		items := jsonNames(queue)
		reqs := len(jsonNames(requests))
		tw.led.mu.Lock()
		wanted := false
		for _, w := range tw.led.wanting {
			wanted = wanted || w.host != tw.alpha.name
		}
		if wanted {
			p.wanted += pileEvery
			if len(items) > 0 {
				p.withItems += pileEvery
				p.depths = append(p.depths, time.Duration(len(items)))
			}
			for _, it := range items {
				p.sat[it] += pileEvery
			}
		}
		if reqs > 0 {
			p.atHome += pileEvery
			if len(items) > 0 {
				p.atHomeAnd += pileEvery
			}
			for _, it := range items {
				p.satAtHome[it] += pileEvery
			}
		}
		tw.led.mu.Unlock()
	}
}

// jsonNames lists the messages' names in dir (not temp files).
func jsonNames(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

// durations returns the values of m.
func durations(m map[string]time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range m {
		out = append(out, d)
	}
	return out
}

// agentFault records a fault that holds up one agent of host h: its own
// command killed.
func (l *ledger) agentFault(kind, agent string, h *host) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.faults = append(l.faults, faultEvent{kind: kind, agent: agent, hosts: []string{h.name}, from: now, to: now})
}

// countSummary lists counts by name, sorted ("refused 2, killed 5"), or
// "none".
func countSummary(counts map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
