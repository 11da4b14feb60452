package nudgeq_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/nudgeq"
)

// gastownNudge writes a nudge file exactly as Gas Town's nudge.Enqueue
// does: "<unixnano>-<8 hex>.json", json.MarshalIndent of its QueuedNudge
// (omitempty fields left out), the mtime the write gave it.
func gastownNudge(t *testing.T, f *fixture, agent string, at time.Time, hex, body string) string {
	t.Helper()
	name := fmt.Sprintf("%d-%s.json", at.UnixNano(), hex)
	dir := f.box(agent)
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, name), at, at)
	return name
}

// A queue shared with Gas Town: its files, priorities, deferrals and claim
// names are read by Gas Town's rules, and mailfs's claims do not look
// orphaned to Gas Town's mtime-based recovery.
func TestSharedQueueWithGasTown(t *testing.T) {
	f := newFixture(t)
	now := t0
	f.set(now)
	ts := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }

	// An old nudge (queued an hour ago), with a priority word mailfs does
	// not write and no expires_at: drained, as normal, with the default TTL
	// counted from its timestamp (so still alive at 20 minutes old).
	old := gastownNudge(t, f, "toast", now.Add(-20*time.Minute), "a1b2c3d4",
		`{
  "sender": "gastown/witness",
  "message": "status?",
  "priority": "high",
  "kind": "health_check",
  "timestamp": "`+ts(-20*time.Minute)+`"
}`)
	// A deferred reminder: held back until deliver_after.
	gastownNudge(t, f, "toast", now.Add(-time.Minute), "0badcafe",
		`{
  "sender": "deacon",
  "message": "remember the release",
  "priority": "normal",
  "timestamp": "`+ts(-time.Minute)+`",
  "expires_at": "`+ts(time.Hour)+`",
  "deliver_after": "`+ts(10*time.Minute)+`"
}`)
	// A nudge Gas Town claimed a moment ago (its claim name carries no
	// time; the rename kept the enqueue mtime, then Gas Town is reading it).
	held := gastownNudge(t, f, "toast", now.Add(-time.Second), "feedf00d",
		`{"sender":"mayor","message":"held by gas town","priority":"urgent","timestamp":"`+ts(-time.Second)+`","expires_at":"`+ts(time.Hour)+`"}`)
	os.Rename(filepath.Join(f.box("toast"), held), filepath.Join(f.box("toast"), held+".claimed.deadbeef"))
	// A Gas Town claim whose drainer died long ago: an orphan, by mtime.
	dead := gastownNudge(t, f, "toast", now.Add(-30*time.Minute), "00c0ffee",
		`{"sender":"mayor","message":"orphaned by gas town","priority":"urgent","timestamp":"`+ts(-30*time.Minute)+`","expires_at":"`+ts(time.Hour)+`"}`)
	os.Rename(filepath.Join(f.box("toast"), dead), filepath.Join(f.box("toast"), dead+".claimed.0dead0ed"))
	os.Chtimes(filepath.Join(f.box("toast"), dead+".claimed.0dead0ed"), now.Add(-10*time.Minute), now.Add(-10*time.Minute))

	b, err := f.q.Claim("toast")
	if err != nil {
		t.Fatal(err)
	}
	got := messages(b.Nudges)
	slices.Sort(got)
	if want := []string{"orphaned by gas town", "status?"}; !slices.Equal(got, want) {
		t.Fatalf("drained %q, want %q (not the held claim, not the deferred one)", got, want)
	}
	for _, n := range b.Nudges {
		if n.Message == "status?" && (n.Priority != nudgeq.Normal || !n.ExpiresAt.Equal(now.Add(-20*time.Minute).Add(nudgeq.DefaultTTL))) {
			t.Fatalf("Gas Town's nudge read as %+v", n)
		}
	}
	// mailfs's own claim is fresh by its mtime, which Gas Town reads: its
	// recovery (mtime older than five minutes) would not steal it.
	ents, _ := os.ReadDir(f.box("toast"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), old+".claimed.") {
			info, _ := e.Info()
			if now.Sub(info.ModTime()) >= 5*time.Minute {
				t.Fatalf("mailfs's claim of an old nudge keeps an mtime %v old: Gas Town would take it for an orphan", now.Sub(info.ModTime()))
			}
		}
	}
	b.Commit()
	if _, err := os.Stat(filepath.Join(f.box("toast"), held+".claimed.deadbeef")); err != nil {
		t.Fatalf("mailfs touched Gas Town's live claim: %v", err)
	}
	// Gas Town, alive, finishes its claim (it removes the file).
	os.Remove(filepath.Join(f.box("toast"), held+".claimed.deadbeef"))
	// The deferred nudge is delivered once its time comes, and only once.
	f.set(now.Add(11 * time.Minute))
	b, _ = f.q.Drain("toast")
	if got := messages(b.Nudges); !slices.Equal(got, []string{"remember the release"}) {
		t.Fatalf("after deliver_after: %q", got)
	}
	if b, _ := f.q.Drain("toast"); len(b.Nudges) != 0 {
		t.Fatalf("delivered twice: %q", messages(b.Nudges))
	}
}
