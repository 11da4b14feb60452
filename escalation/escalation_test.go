package escalation_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mailfs/mailfs/escalation"
	"github.com/mailfs/mailfs/maildir"
)

func TestRaiseBumpAckClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	os.WriteFile(filepath.Join(dir, escalation.ConfigFile),
		[]byte(`{"routes": {"critical": ["mayor", "gastown/witness"]}, "resend_after": "10m", "max_resends": 2}`), 0o600)
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	d := &escalation.Desk{Store: s, Now: func() time.Time { return now }}

	if _, _, err := d.Raise("nux", "apocalyptic", "x", ""); !errors.Is(err, escalation.ErrBadSeverity) {
		t.Fatalf("bad severity: %v", err)
	}
	r, sent, err := d.Raise("gastown/polecats/nux", "critical", "refinery down", "merges stuck")
	if err != nil || len(sent) != 2 || r.Status != "open" {
		t.Fatalf("raise: %+v %v %v", r, sent, err)
	}
	for _, m := range sent {
		if m.Type != "escalation" || m.Priority != maildir.Urgent {
			t.Fatalf("copy %+v", m)
		}
		if v, _ := m.Field("Severity"); v != "critical" {
			t.Fatalf("severity field %q", v)
		}
	}
	// A medium one goes to the default route, the mayor.
	if r2, _, err := d.Raise("nux", "medium", "slow tests", ""); err != nil || len(r2.To) != 1 || r2.To[0] != "mayor" {
		t.Fatalf("default route: %+v, %v", r2, err)
	}

	bump := func() int {
		t.Helper()
		b, err := d.Bump()
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	if n := bump(); n != 0 {
		t.Fatalf("bumped %d right away", n)
	}
	now = now.Add(11 * time.Minute)
	if n := bump(); n != 2 {
		t.Fatalf("bumped %d after the wait, want both", n)
	}
	if n := bump(); n != 0 {
		t.Fatalf("bumped %d again at once", n)
	}
	// Acknowledged: never again. Unacknowledged: at most max_resends.
	if _, err := d.Ack(r.ID, "mayor"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		now = now.Add(11 * time.Minute)
		bump()
	}
	recs, _ := d.List(false)
	for _, rec := range recs {
		switch rec.ID {
		case r.ID:
			if rec.Status != "acked" || rec.Resends != 1 || rec.AckedBy != "mayor" {
				t.Fatalf("acked: %+v", rec)
			}
		default:
			if rec.Resends != 2 {
				t.Fatalf("unacked: resent %d times, want max_resends = 2", rec.Resends)
			}
		}
	}
	mayor, _ := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "mayor"}, maildir.ListOptions{})
	if len(mayor) != 2+1+2 { // two raised, one bump of the first, two of the second
		t.Fatalf("the mayor got %d messages", len(mayor))
	}
	if _, err := d.Close(r.ID, "mayor", "fixed"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Ack(r.ID, "mayor"); !errors.Is(err, escalation.ErrClosed) {
		t.Fatalf("ack of a closed one: %v", err)
	}
	if open, _ := d.List(false); len(open) != 1 {
		t.Fatalf("%d open after closing one", len(open))
	}
	if _, err := d.Ack("no-such-id", "x"); !errors.Is(err, escalation.ErrNotFound) {
		t.Fatalf("ack of nothing: %v", err)
	}
}

// In a town of named hosts only the host that raised an escalation acks,
// closes or re-sends it; the others' bumps pass it over.
func TestEscalationBelongsToTheHostThatRaisedIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	open := func(host string) *maildir.Store {
		s, err := maildir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		s.Host = host
		return s
	}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	alpha := &escalation.Desk{Store: open("alpha"), Now: clock}
	beta := &escalation.Desk{Store: open("beta"), Now: clock}
	r, _, err := alpha.Raise("nux", "critical", "refinery down", "")
	if err != nil || r.Host != "alpha" {
		t.Fatalf("raise: %+v %v", r, err)
	}
	now = now.Add(time.Hour)
	if b, err := beta.Bump(); err != nil || len(b) != 0 {
		t.Fatalf("beta bumped alpha's escalation: %v %v", b, err)
	}
	if _, err := beta.Ack(r.ID, "mayor"); !errors.Is(err, maildir.ErrNotHome) {
		t.Fatalf("beta acked alpha's escalation: %v", err)
	}
	if b, err := alpha.Bump(); err != nil || len(b) != 1 {
		t.Fatalf("alpha's bump: %v %v", b, err)
	}
	if _, err := alpha.Ack(r.ID, "mayor"); err != nil {
		t.Fatal(err)
	}
}
