package maildir

import (
	"strings"
	"testing"
)

// Gas Town's built-in groups, decided from what was read of a town (no
// I/O): with the town's layout, and with the mailboxes alone.
func TestTownGroupMembers(t *testing.T) {
	gt := &town{
		found: true, overseer: true, deacon: true,
		rigs:     []string{"beads", "gastown"},
		polecats: map[string][]string{"gastown": {"gastown.nux", "gastown.toast"}, "beads": {"beads.furiosa"}},
		crew:     map[string][]string{"gastown": {"gastown.max"}},
		dogs:     []string{"deacon.dogs.alpha"},
	}
	boxes := &town{boxes: []string{"beads.witness", "deacon", "gastown.nux", "gastown.refinery", "gastown.witness", "human", "mayor"}}
	for _, tc := range []struct {
		t         *town
		group     string
		want, err string
	}{
		{gt, "town", "deacon mayor", ""},
		{gt, "overseer", "overseer", ""},
		{gt, "witnesses", "beads.witness gastown.witness", ""},
		{gt, "refineries", "beads.refinery gastown.refinery", ""},
		{gt, "deacons", "deacon", ""},
		{gt, "dogs", "deacon.dogs.alpha", ""},
		{gt, "rig.gastown", "gastown.max gastown.nux gastown.refinery gastown.toast gastown.witness", ""},
		{gt, "polecats.gastown", "gastown.nux gastown.toast", ""},
		{gt, "crew.gastown", "gastown.max", ""},
		{gt, "crew.beads", "", ""},
		{gt, "rig.nosuch", "", `no rig "nosuch"`},
		{gt, "rig.town", "deacon.dogs.alpha", ""}, // dog beads say "rig: town"
		{&town{found: true}, "overseer", "", "no overseer"},
		{boxes, "town", "deacon mayor", ""},
		{boxes, "witnesses", "beads.witness gastown.witness", ""},
		{boxes, "refineries", "gastown.refinery", ""},
		{boxes, "rig.gastown", "gastown.nux gastown.refinery gastown.witness", ""},
		{boxes, "overseer", "overseer", ""},
		{boxes, "polecats.gastown", "", "needs the Gas Town town"},
		{boxes, "dogs", "", "needs the Gas Town town"},
	} {
		kind, rig, ok := builtinGroup(tc.group)
		if !ok {
			t.Fatalf("%s: not a built-in group", tc.group)
		}
		got, err := tc.t.members(kind, rig)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("@%s (town found %v): err %v, want %q", tc.group, tc.t.found, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("@%s (town found %v): %q, %v; want %q", tc.group, tc.t.found, got, err, tc.want)
		}
	}
	for _, name := range []string{"all", "rig", "rig.", "polecats", "mayor", "witness"} {
		if _, _, ok := builtinGroup(name); ok {
			t.Errorf("%q taken for a built-in group", name)
		}
	}
}

// Gas Town's own table of group addresses (internal/mail/router_test.go,
// TestParseGroupAddress, gagecane/gastown 57bcb59d), through mailfs's
// address parsing: the same ones are built-in groups, of the same kind
// and rig; the invalid ones are not.
func TestGasTownsGroupAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr, kind, rig string
		invalid         bool
	}{
		{"@overseer", "overseer", "", false},
		{"@town", "town", "", false},
		{"@witnesses", "witnesses", "", false},
		{"@dogs", "dogs", "", false},
		{"@refineries", "refineries", "", false},
		{"@deacons", "deacons", "", false},
		{"@rig/gastown", "rig", "gastown", false},
		{"@rig/beads", "rig", "beads", false},
		{"@crew/gastown", "crew", "gastown", false},
		{"@polecats/gastown", "polecats", "gastown", false},
		{"@invalid", "", "", true},
		{"@crew/", "", "", true},
		{"@rig", "", "", true},
	} {
		a, err := ParseAddress(tc.addr)
		if err != nil || a.Kind != KindGroup {
			t.Fatalf("%s: %+v, %v", tc.addr, a, err)
		}
		kind, rig, ok := builtinGroup(a.Name)
		if ok == tc.invalid || kind != tc.kind || rig != tc.rig {
			t.Errorf("%s: %q %q %v; want %q %q, built in %v", tc.addr, kind, rig, ok, tc.kind, tc.rig, !tc.invalid)
		}
	}
}
