package live

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/maildir"
)

// The confirmation, by table: what the evidence means for each doorbell
// awaiting an answer, with no file, socket or clock read (see judge).
func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wait := 15 * time.Second
	bell := func(nonce string, ago time.Duration, ids ...string) Bell {
		return Bell{Nonce: nonce, At: t0.Add(-ago), IDs: ids}
	}
	at := func(ago time.Duration) time.Time { return t0.Add(-ago) }
	type want struct {
		confirmed   map[string]time.Time
		submitted   []string
		again       []string
		unconfirmed []string
		forgotten   []string
		bells       []string // nonces still awaited
		done        []string
	}
	for _, c := range []struct {
		name      string
		bells     []Bell
		answered  map[string]time.Time
		submitted map[string]time.Time
		busy      bool
		tries     map[string]int
		last      map[string]string
		delivered map[string]time.Time
		want      want
	}{
		{name: "no evidence yet, young: waits",
			bells: []Bell{bell("n1", time.Second, "a")}, last: map[string]string{"a": "n1"}, tries: map[string]int{"a": 1},
			want: want{bells: []string{"n1"}}},
		{name: "answered: its messages are delivered, the bell done",
			bells: []Bell{bell("n1", time.Second, "a", "b")}, answered: map[string]time.Time{"n1": at(0)},
			want: want{confirmed: map[string]time.Time{"a": at(0), "b": at(0)}, done: []string{"n1"}}},
		{name: "submitted only (the hook saw it, the endpoint is down): submitted, never rung again, never delivered",
			bells: []Bell{bell("n1", time.Minute, "a")}, submitted: map[string]time.Time{"n1": at(50 * time.Second)},
			last: map[string]string{"a": "n1"}, tries: map[string]int{"a": 1},
			want: want{submitted: []string{"a"}, bells: []string{"n1"}}},
		{name: "no evidence after the wait, idle: rings again",
			bells: []Bell{bell("n1", time.Minute, "a")}, last: map[string]string{"a": "n1"}, tries: map[string]int{"a": 1},
			want: want{again: []string{"a"}, bells: []string{"n1"}}},
		{name: "no evidence after the wait, busy: waits for the turn",
			bells: []Bell{bell("n1", time.Minute, "a")}, busy: true, last: map[string]string{"a": "n1"}, tries: map[string]int{"a": 1},
			want: want{bells: []string{"n1"}}},
		{name: "past MaxRings: given up, unconfirmed",
			bells: []Bell{bell("n3", time.Minute, "a")}, last: map[string]string{"a": "n3"}, tries: map[string]int{"a": 3},
			want: want{unconfirmed: []string{"a"}, bells: []string{"n3"}}},
		{name: "a message a later doorbell named is not rung again for the earlier one",
			bells: []Bell{bell("n1", time.Minute, "a", "b"), bell("n2", time.Second, "b")},
			last:  map[string]string{"a": "n1", "b": "n2"}, tries: map[string]int{"a": 1, "b": 2},
			want: want{again: []string{"a"}, bells: []string{"n1", "n2"}}},
		{name: "a message already delivered is neither confirmed again nor rung again",
			bells: []Bell{bell("n1", time.Minute, "a", "b")}, answered: map[string]time.Time{"n1": at(0)},
			delivered: map[string]time.Time{"a": at(time.Hour)},
			want:      want{confirmed: map[string]time.Time{"b": at(0)}, done: []string{"n1"}}},
		{name: "the later of two answered bells does not move a delivery's time",
			bells:    []Bell{bell("n1", time.Minute, "a"), bell("n2", time.Second, "a")},
			answered: map[string]time.Time{"n1": at(30 * time.Second), "n2": at(0)},
			want:     want{confirmed: map[string]time.Time{"a": at(30 * time.Second)}, done: []string{"n1", "n2"}}},
		{name: "a bell unanswered for bellLife is forgotten, its last-named messages given up",
			bells: []Bell{bell("n1", bellLife+time.Second, "a", "b")}, last: map[string]string{"a": "n1", "b": "n9"},
			want: want{forgotten: []string{"a"}, done: []string{"n1"}}},
		{name: "an answer after a submission: delivered, not submitted",
			bells:     []Bell{bell("n1", time.Minute, "a")},
			submitted: map[string]time.Time{"n1": at(40 * time.Second)}, answered: map[string]time.Time{"n1": at(0)},
			want: want{confirmed: map[string]time.Time{"a": at(0)}, done: []string{"n1"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := judge(look{now: t0, bells: c.bells, answered: c.answered, submitted: c.submitted, busy: c.busy,
				tries: c.tries, last: c.last, delivered: c.delivered, wait: wait, maxRings: 3})
			var bells []string
			for _, b := range v.bells {
				bells = append(bells, b.Nonce)
			}
			sub := slices.Sorted(maps.Keys(v.submitted))
			if !maps.Equal(v.confirmed, orEmpty(c.want.confirmed)) || !slices.Equal(sub, c.want.submitted) ||
				!slices.Equal(v.again, c.want.again) || !slices.Equal(v.unconfirmed, c.want.unconfirmed) ||
				!slices.Equal(v.forgotten, c.want.forgotten) || !slices.Equal(bells, c.want.bells) || !slices.Equal(v.done, c.want.done) {
				t.Fatalf("got confirmed %v submitted %v again %v unconfirmed %v forgotten %v bells %v done %v\nwant %+v",
					v.confirmed, sub, v.again, v.unconfirmed, v.forgotten, bells, v.done, c.want)
			}
			// The input is not changed: the deliverer acts on the verdict.
			for i, b := range c.bells {
				if b.Again || b.Queued || !b.Submitted.IsZero() {
					t.Fatalf("judge changed bell %d of its input: %+v", i, b)
				}
			}
		})
	}
}

func orEmpty(m map[string]time.Time) map[string]time.Time {
	if m == nil {
		return map[string]time.Time{}
	}
	return m
}

// A receipt, by table: what one record answers of a copy (answer), and
// the answers of all the agent's records merged (best). Final answers
// never turn non-final: while a session runs, only delivered, given up,
// and mail that was there before its deliverer began are final.
func TestAnswerAndBest(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	mark := now.Add(-time.Hour / 2)
	rec := func(f func(r *Record)) *Record {
		r := &Record{Agent: "toast", Mark: mark, Updated: now.Add(-time.Minute), Rung: map[string]time.Time{}, Held: map[string]string{},
			Confirmed: map[string]time.Time{}, Submitted: map[string]time.Time{}, Unconfirmed: map[string]time.Time{}}
		r.Session.Runtime, r.Session.Process.PID = "claude", 42
		f(r)
		return r
	}
	none := func(*Record) {}
	for _, c := range []struct {
		name               string
		rec                *Record
		session, deliverer bool
		arrived            time.Time
		live               string // "" : no answer
		final              bool
	}{
		{"delivered", rec(func(r *Record) { r.Confirmed["m"] = now }), true, true, now, Delivered, true},
		{"submitted, awaiting the model", rec(func(r *Record) { r.Submitted["m"] = now; r.Rung["m"] = now }), true, true, now, Submitted, false},
		{"submitted, given up", rec(func(r *Record) { r.Submitted["m"] = now; r.Unconfirmed["m"] = now }), true, true, now, Submitted, true},
		{"rung", rec(func(r *Record) { r.Rung["m"] = now }), true, true, now, Rung, false},
		{"rung, given up", rec(func(r *Record) { r.Rung["m"] = now; r.Unconfirmed["m"] = now }), true, true, now, Rung, true},
		{"refused while the session runs: tried again, not final", rec(func(r *Record) { r.Held["m"] = refusedWhy }), true, true, now, Refused, false},
		{"held", rec(func(r *Record) { r.Held["m"] = "dnd" }), true, true, now, Held, false},
		{"not yet rung", rec(none), true, true, now, Held, false},
		{"in the mailbox before the deliverer began: no doorbell will name it", rec(none), true, true, mark.Add(-time.Second), Held, true},
		{"the deliverer was killed, the session runs: not none", rec(none), true, false, now, Held, false},
		{"the deliverer was killed, the session runs, rung: not final", rec(func(r *Record) { r.Rung["m"] = now }), true, false, now, Rung, false},
		{"the session ended: rung is final", rec(func(r *Record) { r.Rung["m"] = now }), false, false, now, Rung, true},
		{"the session ended: submitted is final", rec(func(r *Record) { r.Submitted["m"] = now }), false, false, now, Submitted, true},
		{"the session ended: refused is final", rec(func(r *Record) { r.Held["m"] = refusedWhy }), false, false, now, Refused, true},
		{"the session ended: what it never rang is not its to answer", rec(none), false, false, now, "", false},
		{"the session ended past keptFor: nothing", rec(func(r *Record) { r.Confirmed["m"] = now; r.Updated = now.Add(-2 * keptFor) }), false, false, now, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, ok := answer(seen{rec: c.rec, session: c.session, deliverer: c.deliverer, arrived: c.arrived, now: now}, "m")
			if c.live == "" {
				if ok {
					t.Fatalf("answered %+v, want nothing", r)
				}
				return
			}
			if !ok || r.Live != c.live || r.Final != c.final {
				t.Fatalf("answered %+v (%v), want %s final=%v", r, ok, c.live, c.final)
			}
		})
	}
	r := func(live string, final bool) Receipt { return Receipt{Live: live, Final: final} }
	for _, c := range []struct {
		name    string
		answers []Receipt
		live    string
		final   bool
	}{
		{"no record: none, final", nil, NoSession, true},
		{"the most advanced wins", []Receipt{r(Rung, true), r(Delivered, true), r(Held, false)}, Delivered, true},
		{"a running session's answer keeps an ended one's open", []Receipt{r(Rung, true), r(Held, false)}, Rung, false},
		{"all final", []Receipt{r(Rung, true), r(Held, true)}, Rung, true},
		{"submitted beats rung", []Receipt{r(Rung, false), r(Submitted, false)}, Submitted, false},
	} {
		t.Run("best: "+c.name, func(t *testing.T) {
			got := best("toast", "m", c.answers)
			if got.Live != c.live || got.Final != c.final {
				t.Fatalf("best = %+v, want %s final=%v", got, c.live, c.final)
			}
		})
	}
}

// A session's next deliverer (after a kill, at /clear) goes on from its
// record: nothing it held goes back; a record of another session, or of
// one that ended, is not taken over.
func TestTakeOver(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	proc := Process{PID: 42, Start: "7"}
	was := &Record{Agent: "toast", Session: Info{Runtime: "claude", Process: proc, ID: "s1"}, Started: t0, Rings: 3, LastRing: t0.Add(time.Minute),
		Rung:        map[string]time.Time{"a": t0, "b": t0, "c": t0},
		Confirmed:   map[string]time.Time{"a": t0.Add(time.Second)},
		Submitted:   map[string]time.Time{"b": t0.Add(time.Second)},
		Unconfirmed: map[string]time.Time{"c": t0.Add(time.Minute)},
		Bells:       []Bell{{Nonce: "n2", At: t0, IDs: []string{"b"}}},
		SessionIDs:  []string{"s1"}}
	now := &Record{Agent: "toast", Session: Info{Runtime: "claude", Process: proc, ID: "s2"}, Started: t0.Add(time.Hour),
		Rung: map[string]time.Time{}, Held: map[string]string{"d": "not yet rung"}, Confirmed: map[string]time.Time{},
		Submitted: map[string]time.Time{}, Unconfirmed: map[string]time.Time{}, SessionIDs: []string{"s2"}}
	got := takeOver(was, now)
	if len(got.Rung) != 3 || got.Confirmed["a"] != t0.Add(time.Second) || got.Submitted["b"].IsZero() || got.Unconfirmed["c"].IsZero() ||
		len(got.Bells) != 1 || got.Rings != 3 || !slices.Equal(got.SessionIDs, []string{"s1", "s2"}) || got.Held["d"] == "" || got.Started != now.Started {
		t.Fatalf("taken over: %+v", got)
	}
	other := *was
	other.Session.Process = Process{PID: 43}
	if got := takeOver(&other, now); got != now {
		t.Fatalf("another session's record was taken over: %+v", got)
	}
	ended := *was
	ended.Ended = t0
	if got := takeOver(&ended, now); got != now {
		t.Fatalf("an ended session's record was taken over: %+v", got)
	}
}

// Evidence files go with their record: a record no receipt needs any more
// (its session gone, ended over keptFor ago) is pruned, and with it the
// evidence no remaining record awaits; the evidence a record still awaits
// stays, as does a file of the last moment (its bell may not be saved
// yet). An earlier release's <nonce>.seen is read as submitted.
func TestEvidenceIsPrunedWithItsRecord(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, Dir, "toast")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const gone, kept, awaited, fresh = "1111111111111111", "2222222222222222", "3333333333333333", "4444444444444444"
	old := time.Now().Add(-2 * keptFor)
	write := func(name string, data []byte, at time.Time) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, at, at)
	}
	rec := func(pid int, ended time.Time, nonce string) []byte {
		r := Record{Agent: "toast", Ended: ended, Updated: ended, Bells: []Bell{{Nonce: nonce, At: ended}}}
		r.Session.Runtime, r.Session.Process.PID = "claude", pid
		data, _ := json.Marshal(r)
		return data
	}
	write("claude-1.json", rec(1, old, gone), old)                             // ended long ago
	write("claude-2.json", rec(2, time.Now().Add(-time.Minute), awaited), old) // ended a minute ago: kept
	stamp := func(at time.Time) []byte { return []byte(at.UTC().Format(time.RFC3339Nano) + "\n") }
	write(gone+hook.SubmittedSuffix, stamp(old), old)
	write(gone+hook.AnsweredSuffix, stamp(old), old)
	write(kept+hook.SeenSuffix, stamp(old), old) // no record awaits it
	write(awaited+hook.SeenSuffix, stamp(old), old)
	write(fresh+hook.SubmittedSuffix, stamp(time.Now()), time.Now())
	if err := Prune(s, "toast"); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{awaited + hook.SeenSuffix, fresh + hook.SubmittedSuffix, "claude-2.json"}
	if !slices.Equal(left, want) {
		t.Fatalf("after the prune: %v, want %v", left, want)
	}
	c, err := chipset.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := recordDir(c, "toast", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	answered, submitted := evidenceFiles(d)
	if len(answered) != 0 || submitted[awaited].IsZero() || submitted[fresh].IsZero() {
		t.Fatalf("evidence read: answered %v, submitted %v", answered, submitted)
	}
}
