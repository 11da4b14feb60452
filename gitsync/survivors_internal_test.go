package gitsync

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// The rules by which what a rewrite dropped survives (issue 59, Why item
// 9), each a pure function with a table: every row guards one rule, so
// that breaking the rule fails a row.

// changes renders a list of changes as "A path" lines, sorted.
func changes(cs []change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%c %s %s", c.status, c.path, c.blob))
	}
	slices.Sort(out)
	return out
}

// Which outbox entries go back on a tree that lacks them.
func TestUnsentOf(t *testing.T) {
	const (
		inbox    = "state/mail/witness/m1.json"
		archived = "state/mail/witness/archive/m1.json"
		queued   = "state/queue/work/q1.json"
		claimed  = "state/mail/nux/q1.json"
	)
	entry := func(p string) outboxEntry { return outboxEntry{Path: p, Blob: "b-" + p, Home: "beta"} }
	for _, c := range []struct {
		what    string
		entries []outboxEntry
		files   map[string]string
		graves  tombstones
		want    []string
	}{
		{"lacked: back", []outboxEntry{entry(inbox)}, nil, nil, []string{"A " + inbox + " b-" + inbox}},
		{"there: stays", []outboxEntry{entry(inbox)}, map[string]string{inbox: "x"}, nil, nil},
		{"its home moved it on (archived): stays out", []outboxEntry{entry(inbox)}, map[string]string{archived: "x"}, nil, nil},
		{"its home buried it: stays out", []outboxEntry{entry(inbox)}, nil, tombstones{graveOf(inbox): "beta"}, nil},
		{"an item its queue's home buried: stays out",
			[]outboxEntry{entry(queued)}, nil, tombstones{graveOf(queued): "alpha"}, nil},
		{"elsewhere only where its home buried it: back", []outboxEntry{entry(claimed)},
			map[string]string{queued: "x"}, tombstones{graveOf(queued): "alpha"}, []string{"A " + claimed + " b-" + claimed}},
	} {
		if got := changes(unsentOf(c.entries, c.files, c.graves)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

// Which of what a wound-back remote lost goes back on it.
func TestLostOf(t *testing.T) {
	const (
		inbox    = "state/mail/witness/m1.json"
		archived = "state/mail/witness/archive/m1.json"
		other    = "state/mail/mayor/m2.json"
		group    = "state/groups/crew.json"
	)
	for _, c := range []struct {
		what        string
		mine, since []change
		graves      tombstones
		want        []string
	}{
		{"a send the remote lost: back", []change{add(inbox, "s")}, nil, nil, []string{"A " + inbox + " s"}},
		{"a path changed since: the newer stands", []change{add(group, "g1")}, []change{add(group, "g2")}, nil, nil},
		{"its home buried it since: stays out", []change{add(inbox, "s")}, nil, tombstones{graveOf(inbox): "beta"}, nil},
		{"its home moved it on since (archived in up): stays out", []change{add(inbox, "s")}, []change{add(archived, "s")}, nil, nil},
		{"a move whose add is buried: its remove stays out too",
			[]change{del(other, "o"), add("state/mail/mayor/archive/m2.json", "o")}, nil,
			tombstones{graveOf(other): "alpha"}, nil},
		{"a move: both halves back", []change{del(inbox, "s"), add(archived, "s")}, nil, nil,
			[]string{"A " + archived + " s", "D " + inbox + " " + zeroID}},
	} {
		if got := changes(lostOf(byPath(c.mine...), byPath(c.since...), c.graves)); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, got, c.want)
		}
	}
}

// Which outbox entries a history above their push acknowledges: only
// their own home's sync, never another host's.
func TestAckedBy(t *testing.T) {
	log := "mailfs sync from gamma: 3 files\nsquashed by a person\nmailfs sync from beta: 0 files, 2 sends to its homes received\n"
	synced := syncedHosts(log)
	if !synced["gamma"] || !synced["beta"] || len(synced) != 2 {
		t.Fatalf("synced %v", synced)
	}
	entries := []outboxEntry{{Path: "a", Home: "beta"}, {Path: "b", Home: "delta"}, {Path: "c", Home: "gamma"}}
	got := ackedBy(slices.Clone(entries), synced)
	if len(got) != 1 || got[0].Path != "b" {
		t.Errorf("pending %v, want only delta's", got)
	}
	if got := ackedBy(slices.Clone(entries), syncedHosts("a person's commit\n")); len(got) != 3 {
		t.Errorf("no sync above: pending %v, want all", got)
	}
}

// What an adopt keeps of this host's homes as it last synced them.
func TestKeepHomes(t *testing.T) {
	const (
		inbox    = "state/mail/mayor/m1.json"
		archived = "state/mail/mayor/archive/m1.json"
		deleted  = "state/mail/mayor/m3.json"
		fresh    = "state/mail/mayor/m4.json"
		theirs   = "state/mail/nux/n1.json"
		grave    = "state/gone/alpha/2026-05-01.txt"
	)
	mine := func(a maildir.Address) bool { return a.Name == "mayor" }
	mod := func(p, old, now string) change {
		return change{path: p, status: 'M', mode: "100644", omode: "100644", blob: now, old: old}
	}
	for _, c := range []struct {
		what      string
		d         []change
		homeAt    map[string]string
		graves    tombstones
		keep, add []string
	}{
		{"a home file the rewrite lacks: back as known", []change{del(inbox, "k")}, nil, nil, []string{"M " + inbox + " k"}, nil},
		{"a home file the rewrite holds older: back as known", []change{mod(inbox, "k", "r")}, nil, nil, []string{"M " + inbox + " k"}, nil},
		{"another home's file: the rewrite's", []change{del(theirs, "k")}, nil, nil, nil, nil},
		{"this host's tombstones: as known", []change{mod(grave, "k", "r")}, nil, nil, []string{"M " + grave + " k"}, nil},
		{"this host's record of its name: as known", []change{del(HostsDir+"/alpha.json", "k")}, nil, nil, []string{"M " + HostsDir + "/alpha.json k"}, nil},
		{"a message its home archived since: out of the inbox", []change{add(inbox, "r")}, map[string]string{"m1": archived}, nil,
			[]string{"D " + inbox + " " + zeroID}, nil},
		{"a message its home deleted: out", []change{add(deleted, "r")}, nil, tombstones{graveOf(deleted): "alpha"},
			[]string{"D " + deleted + " " + zeroID}, nil},
		{"a new add: for history to judge", []change{add(fresh, "r")}, nil, nil, nil, []string{fresh}},
	} {
		keep, added := keepHomes("alpha", byPath(c.d...), c.homeAt, c.graves, mine)
		if got := changes(keep); !slices.Equal(got, c.keep) || !slices.Equal(added, c.add) {
			t.Errorf("%s: keep %v, look up %v; want %v, %v", c.what, got, added, c.keep, c.add)
		}
	}
}
