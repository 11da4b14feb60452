package townsim

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// An entry is one line of the ledger: an operation the town saw
// acknowledged (or refused, or killed), when and where.
type entry struct {
	at    time.Duration // since the town started
	host  string
	agent string
	op    string
	id    string // the message it made or acted on
	item  string // the work item, w-N
	note  string
}

func (e entry) String() string {
	return fmt.Sprintf("%8.3fs %-5s %-8s %-12s id=%s item=%s %s", e.at.Seconds(), e.host, e.agent, e.op, e.id, e.item, e.note)
}

// A sent message as the ledger knows it: acknowledged by the command.
type sent struct {
	at   time.Time
	host string
}

// The ledger: every acknowledged operation, and what the oracle checks
// against. Safe for concurrent use.
type ledger struct {
	mu      sync.Mutex
	start   time.Time
	entries []entry

	ops       int            // commands run
	kills     int            // commands killed by a fault
	syncs     int            // syncs run
	syncKills int            // sync --every processes killed
	crashes   int            // hosts taken down
	errs      map[string]int // op → exits with an error
	errSample map[string]string

	acked    map[string]sent     // message id → its send's acknowledgement
	deleted  map[string]bool     // ids a delete acknowledged
	posted   map[string]bool     // work items the mayor posted
	merged   map[string][]string // item → MERGED reply ids acknowledged (distinct)
	claims   int
	handed   int                        // claims that handed back a held item
	perHost  map[string]int             // claims by polecats of each host
	items    map[string]int             // per host: claims that took an item (not handed back)
	offWait  []time.Duration            // off-home claims: wanting an item -> held here
	offWork  []time.Duration            // the same from when the item was there to take, if later
	offKnown int                        // off-home claims whose item's send the ledger knows
	waits    map[string][]time.Duration // per host: from needing an item to holding one
	refused  map[string]int

	sameHost, crossHost []time.Duration // send → first seen in an inbox listing
	seenIDs             map[string]bool

	webActs       map[string]int             // "release 303", "reassign 409", ...: the overseer's outcomes
	squashes      int                        // a person's force-push of one commit
	adopts        int                        // sync --adopt run after a refusal named it
	refusedPushes int                        // syncs the remote's hook refused
	syncTimes     map[string][]time.Duration // per host: how long a sync took (those not killed)
	receipts      map[string][]string        // message id -> the receipts send --wait-for delivered printed
	up, down      []time.Duration            // off-home claims: wanting an item -> the home served it; served -> held here
	lastSync      map[string]time.Time       // per host: when its last sync began
	periods       map[string][]time.Duration // per host: from one sync's start to the next's
	offSpans      []offSpan                  // off-home claims: the waits of offWork, when
	faults        []faultEvent               // what may have held an off-home claim up
	cleanSyncs    map[string][]span          // per host: syncs that ended without an error
	wanting       map[string]wanter          // polecat -> since when it wants an item
	pile          pile                       // the home's queue while off-home polecats wanted
}

// syncStart records when a sync of h began: the town's real sync period.
func (l *ledger) syncStart(h *host, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.lastSync[h.name]; ok {
		l.periods[h.name] = append(l.periods[h.name], at.Sub(last))
	}
	l.lastSync[h.name] = at
}

// offHomeClaim records an off-home claim of item id (not handed back):
// the agent wanted an item from wanted on, and held id at held. The wait
// while work was there starts when id was sent to the queue, if that was
// later (the queue was empty: no protocol serves what is not there yet).
func (l *ledger) offHomeClaim(agent, id string, wanted, held time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offWait = append(l.offWait, held.Sub(wanted))
	from := wanted
	if a, ok := l.acked[id]; ok {
		l.offKnown++
		if a.at.After(from) {
			from = a.at
		}
	}
	l.offWork = append(l.offWork, held.Sub(from))
	l.offSpans = append(l.offSpans, offSpan{agent, span{from, held}})
}

// offHome records where an off-home claim's wait went.
func (l *ledger) offHome(up, down time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.up = append(l.up, up)
	l.down = append(l.down, down)
}

// receipt records a receipt a send printed.
func (l *ledger) receipt(r receiptLine) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.receipts[r.ID] = append(l.receipts[r.ID], r.Live)
}

// web records an outcome of an overseer's action.
func (l *ledger) web(action string, code int, says string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := fmt.Sprintf("%s %d", action, code)
	l.webActs[k]++
	if _, ok := l.errSample["web "+k]; !ok && says != "" {
		l.errSample["web "+k] = says
	}
}

func newLedger(start time.Time) *ledger {
	return &ledger{start: start, errs: map[string]int{}, errSample: map[string]string{}, acked: map[string]sent{},
		deleted: map[string]bool{}, posted: map[string]bool{}, merged: map[string][]string{}, refused: map[string]int{},
		seenIDs: map[string]bool{}, perHost: map[string]int{}, items: map[string]int{}, waits: map[string][]time.Duration{},
		webActs: map[string]int{}, syncTimes: map[string][]time.Duration{}, receipts: map[string][]string{},
		lastSync: map[string]time.Time{}, periods: map[string][]time.Duration{},
		cleanSyncs: map[string][]span{}, wanting: map[string]wanter{}}
}

// dump writes every entry of the ledger to path (-soak.keep).
func (l *ledger) dump(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.entries {
		fmt.Fprintln(&b, e)
	}
	_ = os.WriteFile(path, []byte(b.String()), 0o644)
}

func (l *ledger) add(e entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.at = time.Since(l.start)
	l.entries = append(l.entries, e)
}

// ran counts a command and how it ended.
func (l *ledger) ran(op string, r result) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	if op == "sync" {
		l.syncs++
	}
	switch {
	case r.killed:
		l.kills++
	case r.code == exitError:
		l.errs[op]++
		if _, ok := l.errSample[op]; !ok {
			l.errSample[op] = strings.TrimSpace(r.err)
		}
	}
}

// ack records a send the command acknowledged, with the ids it printed.
func (l *ledger) ack(h *host, agent, op, item, out string, note string) []string {
	var ids []string
	for line := range strings.Lines(out) {
		if id := strings.TrimSpace(line); id != "" {
			ids = append(ids, id)
		}
	}
	l.mu.Lock()
	for _, id := range ids {
		if _, ok := l.acked[id]; !ok {
			l.acked[id] = sent{at: time.Now(), host: h.name}
		}
	}
	l.mu.Unlock()
	for _, id := range ids {
		l.add(entry{host: h.name, agent: agent, op: op, id: id, item: item, note: note})
	}
	return ids
}

// seen records that an agent on host h listed message id.
func (l *ledger) seen(h *host, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seenIDs[id] {
		return
	}
	a, ok := l.acked[id]
	if !ok {
		return
	}
	l.seenIDs[id] = true
	d := time.Since(a.at)
	if a.host == h.name {
		l.sameHost = append(l.sameHost, d)
	} else {
		l.crossHost = append(l.crossHost, d)
	}
}

// ackedAt returns when message id's send was acknowledged, if it was, on
// host h.
func (l *ledger) ackedAt(id string, h *host) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.acked[id]
	return a.at, ok && a.host == h.name
}

func (l *ledger) post(item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.posted[item] = true
}

func (l *ledger) merge(item, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.merged[item], id) {
		l.merged[item] = append(l.merged[item], id)
	}
}

func (l *ledger) del(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted[id] = true
}

func (l *ledger) refuse(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused[what]++
}

func (l *ledger) claimed(h *host, handedBack bool, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claims++
	l.perHost[h.name]++
	l.waits[h.name] = append(l.waits[h.name], wait)
	if handedBack {
		l.handed++
	} else {
		l.items[h.name]++
	}
}

// unmerged returns the posted items with no MERGED reply yet, sorted.
func (l *ledger) unmerged() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for item := range l.posted {
		if len(l.merged[item]) == 0 {
			out = append(out, item)
		}
	}
	slices.Sort(out)
	return out
}

// about returns the ledger lines that name any of keys (ids or items).
func (l *ledger) about(keys ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.entries {
		for _, k := range keys {
			if k != "" && (e.id == k || e.item == k || e.agent == k || strings.Contains(e.note, k)) {
				out = append(out, e.String())
				break
			}
		}
	}
	return out
}

// percentiles returns p50, p95 and the max of ds.
func percentiles(ds []time.Duration) (p50, p95, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)*95/100], s[len(s)-1]
}

// errorSummaryLocked lists the ops that exited with an error, with a sample.
func (l *ledger) errorSummaryLocked() string {
	var b strings.Builder
	for _, op := range slices.Sorted(maps.Keys(l.errs)) {
		fmt.Fprintf(&b, "  %s: %d (e.g. %s)\n", op, l.errs[op], l.errSample[op])
	}
	return b.String()
}

// synced records a sync that ran to its end: how long it took, and
// whether the remote refused its push.
func (l *ledger) synced(h *host, took time.Duration, refused, clean bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncTimes[h.name] = append(l.syncTimes[h.name], took)
	if clean {
		now := time.Now()
		l.cleanSyncs[h.name] = append(l.cleanSyncs[h.name], span{now.Add(-took), now})
	}
	if refused {
		l.refusedPushes++
	}
}

// syncKilled records a kill of a host's sync --every.
func (l *ledger) syncKilled() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncKills++
}

// syncP95Locked returns the 95th percentile of the syncs that ran to
// their end, both hosts'.
func (l *ledger) syncP95Locked() time.Duration {
	var all []time.Duration
	for _, ds := range l.syncTimes {
		all = append(all, ds...)
	}
	return quantile(all, 0.95)
}
