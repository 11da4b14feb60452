package townsim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An agent of the town: a name, the host it runs on, its own random
// source. It runs the command as a careful agent does.
type agent struct {
	tw   *town
	name string
	h    *host
	rng  *rand.Rand
}

func (tw *town) agent(name string, h *host) *agent {
	return &agent{tw: tw, name: name, h: h, rng: tw.rngFor(name)}
}

// fault returns when to kill the agent's next command (0: never): about
// one command in twelve, after 1 to 40 ms, which lands anywhere from the
// start-up to the last fsync of most commands.
func (a *agent) fault() time.Duration {
	if !a.tw.faults || a.rng.IntN(12) != 0 {
		return 0
	}
	return time.Duration(1+a.rng.IntN(40)) * time.Millisecond
}

// pause sleeps about d (scaled by 0.5 to 1.5 from the agent's source), or
// until ctx ends.
func (a *agent) pause(ctx context.Context, d time.Duration) {
	d = d/2 + time.Duration(a.rng.Int64N(int64(d)+1))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// do runs a step as a careful agent does: killed by a fault, or failed
// with an error, it runs again (the step must be safe to repeat: a keyed
// send, a mark, a claim that hands back what it holds), until ok says the
// result is an answer or ctx ends. faults says whether this step may be
// killed.
func (a *agent) do(ctx context.Context, op string, faults bool, ok func(result) bool, args ...string) (result, bool) {
	for try := 0; ; try++ {
		var kill time.Duration
		if faults {
			kill = a.fault()
		}
		r := a.tw.run(ctx, a.h, kill, args...)
		a.tw.led.ran(op, r)
		if ctx.Err() != nil {
			return r, false
		}
		if r.killed {
			if op == "claim" && a.h != a.tw.alpha {
				// The waiting agent's own request may be made late.
				a.tw.led.agentFault("claim killed", a.name, a.h)
			}
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: op, note: "killed; retrying: " + strings.Join(args, " ")})
			continue
		}
		if ok(r) {
			return r, true
		}
		a.tw.led.add(entry{host: a.h.name, agent: a.name, op: op, note: r.String()})
		a.pause(ctx, 100*time.Millisecond)
	}
}

func exit0(r result) bool { return r.code == exitOK }

// exitOKOrGone takes a success, or the answer that the message is not in
// the mailbox (an overseer released or reassigned it meanwhile).
func exitOKOrGone(r result) bool {
	return r.code == exitOK || (r.code == exitError && strings.Contains(r.err, "not found"))
}

// inbox lists the agent's unread mail, recording what it sees.
func (a *agent) inbox(ctx context.Context) []msg {
	r, ok := a.do(ctx, "inbox", true, exit0, "inbox", a.name, "--json")
	if !ok {
		return nil
	}
	ms, err := parseMsgs(r.out)
	if err != nil {
		a.tw.t.Errorf("%s: %v", a.name, err)
		return nil
	}
	for _, m := range ms {
		a.tw.led.seen(a.h, m.ID)
	}
	return ms
}

// markRead marks id read (done), retrying as needed.
func (a *agent) markRead(ctx context.Context, id string) bool {
	_, ok := a.do(ctx, "mark-read", true, exit0, "mark-read", a.name, id)
	return ok
}

// send makes a keyed send (retried until acknowledged) and records it.
func (a *agent) send(ctx context.Context, op, item string, args ...string) []string {
	r, ok := a.do(ctx, op, true, exit0, args...)
	if !ok {
		return nil
	}
	return a.tw.led.ack(a.h, a.name, op, item, r.out, "")
}

// mayor posts WORK items until post ends, and answers and deletes the
// escalations that reach it until ctx ends.
func (a *agent) mayor(ctx, post context.Context) {
	n := 0
	for ctx.Err() == nil {
		if post.Err() == nil {
			n++
			item := "w-" + strconv.Itoa(n)
			ids := a.send(ctx, "post", item, "send", "queue:work", "--from", "mayor", "-s", "WORK "+item,
				"--type", "work_assignment", "--field", "Item="+item, "--field", "Attempt=1", "-m", "do "+item,
				"--idempotency-key", "work-"+item)
			if len(ids) > 0 {
				a.tw.led.post(item)
			}
		}
		for _, m := range a.inbox(ctx) {
			if !strings.HasPrefix(m.Subject, "ESCALATION") {
				a.markRead(ctx, m.ID)
				continue
			}
			a.send(ctx, "reply", "", "reply", "mayor", m.ID, "-m", "noted", "--idempotency-key", "ack-"+m.ID)
			// A delete acknowledged, or one whose retry finds the message gone
			// (the killed try had deleted it). It runs to its answer even
			// when the town stops meanwhile: a delete the stop cut short may
			// have deleted, and the ledger must know, or the oracle counts
			// the message lost (seed 201 found one "lost" on both hosts, sent
			// 4 s before the town stopped, and nothing else about it).
			// (At most drainMax past the stop: a delete that fails that long
			// is a finding of its own.)
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainMax)
			_, ok := a.do(dctx, "delete", true, func(r result) bool {
				return r.code == exitOK || strings.Contains(r.err, "not found") || strings.Contains(r.err, "no message")
			}, "delete", "mayor", m.ID)
			cancel()
			if ok {
				a.tw.led.del(m.ID)
				a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "delete", id: m.ID})
			}
		}
		a.pause(ctx, 500*time.Millisecond)
	}
}

// polecat claims work, does it, reports POLECAT_DONE to the witness and
// marks the item done; now and then it escalates, hands off, drains its
// nudges, or loses the id of what it claimed (as if killed just after the
// claim) and claims again.
func (a *agent) polecat(ctx context.Context) {
	home := a.h == a.tw.alpha
	need := time.Now() // since when the polecat wants an item
	a.tw.led.want(a.h, a.name, need)
	for k := 0; ctx.Err() == nil; k++ {
		args := []string{"claim", "queue:work", "--as", a.name, "--id"}
		if !home {
			args = append(args, "--timeout", "3s")
		}
		r, ok := a.do(ctx, "claim", true, func(r result) bool {
			return r.code == exitOK || r.code == exitNothing || r.code == exitTimeout
		}, args...)
		if !ok {
			return
		}
		if r.code != exitOK {
			a.pause(ctx, 300*time.Millisecond)
			continue
		}
		id := firstLine(r.out)
		handed := strings.Contains(r.err, "still holds")
		held, wanted := time.Now(), need
		a.tw.led.want(a.h, a.name, time.Time{})
		a.tw.led.claimed(a.h, handed, held.Sub(wanted))
		a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "claim", id: id, note: map[bool]string{true: "handed back"}[handed]})
		if a.tw.faults && a.rng.IntN(20) == 0 {
			// Killed after the claim moved the item, before the id was
			// read: the next claim must hand the same item back.
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "lost-id", id: id})
			a.tw.led.want(a.h, a.name, need)
			continue
		}
		a.seeMine(ctx)
		r, ok = a.do(ctx, "show", true, exitOKOrGone, "show", a.name, id, "--json")
		if !ok {
			return
		}
		if r.code != exitOK {
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "taken-away", id: id, note: "released or reassigned before it was read"})
			continue
		}
		ms, err := parseMsgs(r.out)
		if err != nil || len(ms) != 1 {
			a.tw.t.Errorf("%s: show %s: %v %q", a.name, id, err, r.out)
			return
		}
		item, attempt := ms[0].field("Item"), ms[0].field("Attempt")
		if !home && !handed {
			a.tw.led.offHomeClaim(a.name, id, wanted, held)
			// Where an off-home wait goes: up to the home's serving it
			// (the request's trip, and a wait for an item), and down.
			var c struct {
				At time.Time `json:"at"`
			}
			if json.Unmarshal(ms[0].Claim, &c) == nil && !c.At.IsZero() {
				a.tw.led.offHome(c.At.Sub(wanted), held.Sub(c.At))
			}
		}
		a.pause(ctx, 150*time.Millisecond) // the work
		// Done first, then reported: an overseer may release or reassign
		// the item while the polecat works, and a mark that finds it gone
		// means the work is someone else's now (reporting it too would
		// merge it twice). Once marked done, no release may take it back.
		r, ok = a.do(ctx, "mark-read", true, exitOKOrGone, "mark-read", a.name, id)
		if !ok {
			return
		}
		if r.code != exitOK {
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "taken-away", id: id, item: item, note: "released or reassigned while worked on: not reported"})
			need = time.Now()
			a.tw.led.want(a.h, a.name, need)
			continue
		}
		a.send(ctx, "done", item, "send", "witness", "--from", a.name, "-s", "POLECAT_DONE "+item,
			"--type", "completion_report", "--field", "Item="+item, "--field", "Attempt="+attempt,
			"--field", "Claimed="+id, "--field", "Polecat="+a.name, "-m", "done", "--idempotency-key", "done-"+id)
		a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "finished", id: id, item: item})
		need = time.Now()
		a.tw.led.want(a.h, a.name, need)
		switch a.rng.IntN(10) {
		case 0:
			a.send(ctx, "escalate", item, "send", "mayor", "--from", a.name, "-s", "ESCALATION "+item,
				"--type", "health_escalation", "--priority", "high", "-m", "stuck on "+item,
				"--idempotency-key", fmt.Sprintf("esc-%s-%d", a.name, k))
		case 1:
			a.send(ctx, "handoff", item, "send", a.name, "--from", a.name, "-s", "HANDOFF "+a.name,
				"--type", "handoff", "-m", "context for the next session", "--idempotency-key", fmt.Sprintf("handoff-%s-%d", a.name, k))
		case 2:
			a.do(ctx, "drain", false, func(r result) bool { return r.code == exitOK || r.code == exitNothing }, "drain", a.name)
		}
	}
}

// seeMine reads the agent's mail other than work items — replies, its own
// handoffs — and marks it read.
func (a *agent) seeMine(ctx context.Context) {
	for _, m := range a.inbox(ctx) {
		if len(m.Claim) == 0 && (strings.HasPrefix(m.Subject, "Re:") || strings.HasPrefix(m.Subject, "HANDOFF")) {
			a.markRead(ctx, m.ID)
		}
	}
}

// witness waits for POLECAT_DONE, sends MERGE_READY to the refinery and
// nudges the polecat; it reads the refinery's answers.
func (a *agent) witness(ctx context.Context) {
	for ctx.Err() == nil {
		for _, m := range a.wait(ctx) {
			if strings.HasPrefix(m.Subject, "POLECAT_DONE") {
				item := m.field("Item")
				a.send(ctx, "merge-ready", item, "send", "refinery", "--from", a.name, "-s", "MERGE_READY "+item,
					"--type", "merge_notification", "--field", "Item="+item, "--field", "Attempt="+m.field("Attempt"),
					"--field", "Done="+m.ID, "-m", "ready", "--idempotency-key", "mr-"+m.ID)
				a.nudge(ctx, m.field("Polecat"), "MERGE_READY "+item)
			}
			if !a.markRead(ctx, m.ID) {
				return
			}
		}
	}
}

// waitMiss is how long before a wait's timeout mail sent on its host must
// have landed for the timeout to be a miss: far more than a watcher takes
// to hear of a file, so only a wait that never looked counts.
const waitMiss = 1500 * time.Millisecond

// wait blocks in "mailfs wait" (at most 3 s) and returns the agent's
// unread mail. A wait that timed out though mail sent on this host was
// unread more than waitMiss before the end is a finding: it had been
// there before the wait began (its first look must see it), or it landed
// while the wait watched.
func (a *agent) wait(ctx context.Context) []msg {
	r, ok := a.do(ctx, "wait", false, func(r result) bool { return r.code == exitOK || r.code == exitTimeout },
		"wait", a.name, "--timeout", "3s")
	ended := time.Now()
	ms := a.inbox(ctx)
	if !ok || r.code != exitTimeout {
		return ms
	}
	for _, m := range ms {
		if at, ok := a.tw.led.ackedAt(m.ID, a.h); ok && at.Before(ended.Add(-waitMiss)) {
			a.tw.led.refuse("wait timed out with mail waiting")
			a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "wait", id: m.ID,
				note: fmt.Sprintf("timed out (3s) though this was sent here %v before it ended, and is unread", ended.Sub(at).Round(time.Millisecond))})
		}
	}
	return ms
}

// nudge nudges polecat; a nudge to a polecat homed on beta must be
// refused (it would never arrive), never kept.
func (a *agent) nudge(ctx context.Context, polecat, text string) {
	if polecat == "" {
		return
	}
	r, ok := a.do(ctx, "nudge", false, func(r result) bool { return r.code == exitOK || r.code == exitError }, "nudge", polecat, text, "--from", a.name)
	if !ok {
		return
	}
	remote := a.tw.hostOf(polecat) != a.h
	switch {
	case remote && r.code == exitOK:
		a.tw.led.refuse("remote nudge kept")
		a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "nudge", note: "to " + polecat + " (homed on beta): exit 0, kept where it never arrives"})
	case remote:
		a.tw.led.refuse("remote nudge refused")
	case r.code != exitOK:
		a.tw.led.refuse("nudge failed")
		a.tw.led.add(entry{host: a.h.name, agent: a.name, op: "nudge", note: r.String()})
	}
}

// refinery waits for MERGE_READY and answers MERGED, or MERGE_FAILED with
// the item sent back to the queue for rework (at most twice per item); the
// choice is a function of the seed and the message, so a retry makes it
// the same way.
func (a *agent) refinery(ctx context.Context) {
	for ctx.Err() == nil {
		for _, m := range a.wait(ctx) {
			if strings.HasPrefix(m.Subject, "MERGE_READY") {
				item := m.field("Item")
				attempt, _ := strconv.Atoi(m.field("Attempt"))
				if attempt < 3 && a.tw.chance("merge/"+m.ID) < 15 {
					a.send(ctx, "rework", item, "send", "queue:work", "--from", a.name, "-s", "WORK "+item+" (rework)",
						"--type", "work_assignment", "--field", "Item="+item, "--field", "Attempt="+strconv.Itoa(attempt+1),
						"-m", "rework "+item, "--idempotency-key", "rework-"+m.ID)
					a.reply(ctx, "merge-failed", item, m.ID, "MERGE_FAILED "+item, "failed-"+m.ID)
				} else {
					for _, id := range a.reply(ctx, "merged", item, m.ID, "MERGED "+item, "merged-"+m.ID) {
						a.tw.led.merge(item, id)
					}
				}
			}
			if !a.markRead(ctx, m.ID) {
				return
			}
		}
	}
}

// syncer keeps one "mailfs sync --every period --json" running on host
// h, as docs/machines.md tells a town to (a service the machine restarts
// when it dies), until ctx ends, then stops it as a person does (SIGINT:
// a clean stop, exit 0). With faults it is killed (kill -9) at random,
// about once in every four periods: a third of its runs within 300 ms of
// their start, so mid-way through the sync it starts at once, the rest
// after 1 to 12 periods, wherever it then is; a host crash kills it too.
// Each sync is counted from the line it prints. A sync refused after a
// person's squash names the recovery (sync --adopt): the syncer is
// stopped, the one-shot "mailfs sync --adopt" runs, as the person would,
// and the syncer starts again.
func (tw *town) syncer(ctx context.Context, h *host, period time.Duration) {
	a := tw.agent("sync-"+h.name, h)
	for ctx.Err() == nil {
		var kill time.Duration
		if tw.faults {
			if a.rng.IntN(3) == 0 {
				kill = time.Duration(1+a.rng.IntN(300)) * time.Millisecond
			} else {
				kill = period + time.Duration(a.rng.Int64N(int64(11*period)))
			}
		}
		run, stop := context.WithCancel(ctx)
		var mu sync.Mutex
		adopt := ""
		tw.led.add(entry{host: h.name, agent: "sync", op: "sync-start", note: fmt.Sprintf("sync --every %v (killed after %v)", period, kill)})
		r := tw.runLines(run, h, kill, func(line string, stderr bool) {
			if strings.Contains(line, "mailfs sync --adopt") {
				mu.Lock()
				adopt = line
				mu.Unlock()
				stop()
			}
			if stderr {
				return
			}
			tw.syncLine(h, line)
		}, "sync", "--every", period.String(), "--json")
		stop()
		switch {
		case r.killed:
			tw.led.syncKilled()
			tw.led.fault("sync killed", time.Now(), time.Now(), h.name)
			tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: "sync --every killed"})
		case adopt != "":
			tw.adoptIfAsked(ctx, h, adopt)
		case ctx.Err() != nil && r.code != exitOK:
			tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: "sync --every did not stop cleanly on SIGINT: " + r.String()})
			tw.led.refuse("sync --every unclean stop")
		case ctx.Err() == nil:
			// It ended by itself: a loop must not.
			tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: "sync --every ended by itself: " + r.String()})
			tw.led.refuse("sync --every ended by itself")
			a.pause(ctx, period)
		}
	}
}

// syncLine records one sync's report, as sync --every --json prints it
// when the sync ends.
func (tw *town) syncLine(h *host, line string) {
	var rep struct {
		Seconds   float64  `json:"seconds"`
		Error     string   `json:"error"`
		Served    []string `json:"served"`
		Committed int      `json:"committed"`
		Pulled    int      `json:"pulled"`
	}
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: "not a report: " + line})
		return
	}
	took := time.Duration(rep.Seconds * float64(time.Second))
	tw.led.syncStart(h, time.Now().Add(-took))
	r := result{}
	if rep.Error != "" {
		r = result{code: exitError, err: rep.Error}
		tw.led.add(entry{host: h.name, agent: "sync", op: "sync", note: r.String()})
	}
	tw.led.ran("sync", r)
	tw.led.synced(h, took, strings.Contains(rep.Error, "refused by the remote"), rep.Error == "")
	tw.led.add(entry{host: h.name, agent: "sync", op: "synced", note: fmt.Sprintf("took %v: committed %d, pulled %d, served %v", took.Round(time.Millisecond), rep.Committed, rep.Pulled, rep.Served)})
}

// keeper runs the sweep and fsck --repair on host h on timers, killing
// some of them.
func (tw *town) keeper(ctx context.Context, h *host) {
	a := tw.agent("keeper-"+h.name, h)
	for k := 0; ctx.Err() == nil; k++ {
		args := []string{"archive", "--older-than", "2s"}
		op := "sweep"
		if k%2 == 1 {
			args, op = []string{"fsck", "--repair"}, "fsck-repair"
		}
		r := tw.run(ctx, h, a.fault(), args...)
		tw.led.ran(op, r)
		a.pause(ctx, 2*time.Second)
	}
}

// reply answers message id with a keyed reply. A command without reply
// --idempotency-key (exit 80) is a finding; the refinery then does what a
// careful agent had to: read the thread, and reply (unkeyed, never
// killed) only if no reply to id is there yet.
func (a *agent) reply(ctx context.Context, op, item, id, subject, key string) []string {
	args := []string{"reply", a.name, id, "-s", subject, "--type", "merge_notification", "--field", "Item=" + item, "-m", op}
	r, ok := a.do(ctx, op, true, func(r result) bool { return r.code == exitOK || r.code == exitUsage },
		append(args, "--idempotency-key", key)...)
	if !ok {
		return nil
	}
	if r.code == exitOK {
		return a.tw.led.ack(a.h, a.name, op, item, r.out, "")
	}
	a.tw.led.refuse("reply without --idempotency-key")
	t, ok := a.do(ctx, "thread", true, exit0, "thread", id, "--json")
	if !ok {
		return nil
	}
	ms, _ := parseMsgs(t.out)
	for _, m := range ms {
		if m.ReplyTo == id && m.From == a.name {
			return nil // answered before the crash
		}
	}
	r, ok = a.do(ctx, op, false, exit0, args...)
	if !ok {
		return nil
	}
	return a.tw.led.ack(a.h, a.name, op, item, r.out, "unkeyed reply, after reading the thread")
}
