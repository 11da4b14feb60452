package nudgeq

import (
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// What reading, or marking read, archiving or deleting, a message does to
// a queued nudge of the same agent, as Gas Town's verbs do to its reply
// reminders (DeferReplyReminders never pulls a deadline earlier), and to
// mailfs's announcements.
func TestOnMail(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	later := t0.Add(10 * time.Minute)
	m := &maildir.Message{ID: "M2", Thread: "T1"}
	rem := func(thread string, after time.Time) seenNudge {
		return seenNudge{kind: ReplyReminder, thread: thread, deliverAfter: after}
	}
	for _, tc := range []struct {
		name    string
		n       seenNudge
		ev      MailEvent
		deferTo time.Time
		want    verdict
	}{
		{"a read defers the thread's reminder", rem("T1", t0), MailRead, later, verdict{deferTo: later}},
		{"a read defers a reminder with no deadline", rem("T1", time.Time{}), MailRead, later, verdict{deferTo: later}},
		{"a read never pulls a deadline earlier", rem("T1", later.Add(time.Minute)), MailRead, later, verdict{}},
		{"a read with the delay off defers nothing", rem("T1", t0), MailRead, time.Time{}, verdict{}},
		{"a settle clears the thread's reminder", rem("T1", t0), MailSettled, later, verdict{remove: true}},
		{"a reminder of the message itself, as its thread", rem("M2", t0), MailSettled, later, verdict{remove: true}},
		{"another thread's reminder stays", rem("T2", t0), MailSettled, later, verdict{}},
		{"a reminder without a thread stays", rem("", t0), MailSettled, later, verdict{}},
		{"another kind of nudge on the thread stays", seenNudge{kind: "status", thread: "T1"}, MailSettled, later, verdict{}},
		{"the message's announcement goes with a read", seenNudge{mailID: "M2"}, MailRead, later, verdict{remove: true}},
		{"the message's announcement goes with a settle", seenNudge{mailID: "M2"}, MailSettled, later, verdict{remove: true}},
		{"another message's announcement stays", seenNudge{mailID: "M3"}, MailRead, later, verdict{}},
	} {
		if got := onMail(tc.n, tc.ev, m, tc.deferTo); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// A reminder is stale once its agent has spoken on the thread at or
// after it was armed (Gas Town's replyReminderSatisfied), in any
// spelling of the agent.
func TestAnsweredSince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	thread := []*maildir.Message{
		{From: "mayor", Timestamp: t0.Add(-time.Hour)},
		{From: "gastown/Toast", Timestamp: t0.Add(-time.Minute)},
		{From: "gastown/polecats/nux", Timestamp: t0},
	}
	for _, tc := range []struct {
		agent string
		armed time.Time
		want  bool
	}{
		{"gastown.toast", t0, false},                      // spoke before it was armed
		{"gastown.toast", t0.Add(-2 * time.Minute), true}, // spoke after
		{"gastown.nux", t0, true},                         // at the very instant counts
		{"mayor", t0, false},
		{"gastown.max", t0.Add(-24 * time.Hour), false}, // never spoke
	} {
		if got := answeredSince(thread, tc.agent, tc.armed); got != tc.want {
			t.Errorf("%s armed %v: %v, want %v", tc.agent, tc.armed, got, tc.want)
		}
	}
}

// Gas Town spells a nudge's sender rig/role.
func TestGasTownSenderSpelling(t *testing.T) {
	for in, want := range map[string]string{"gastown.witness": "gastown/witness", "mayor": "mayor", "deacon.dogs.alpha": "deacon/dogs/alpha", NoSender: NoSender} {
		if got := gasTownSender(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// Gas Town's own cases for the rule (internal/mail/router_test.go,
// TestReplyReminderSatisfied, gagecane/gastown 57bcb59d), the recipient
// given as Gas Town writes it and taken as mailfs's mailbox.
func TestAnsweredSinceAsGasTown(t *testing.T) {
	base := time.Date(2026, 6, 13, 12, 0, 0, 0, time.UTC)
	armed := base.Add(time.Minute)
	msg := func(from string, at time.Time) *maildir.Message { return &maildir.Message{From: from, Timestamp: at} }
	for _, tc := range []struct {
		name, recipient string
		thread          []*maildir.Message
		want            bool
	}{
		{"recipient replied after reminder armed", "mayor/", []*maildir.Message{msg("gastown/witness", base), msg("mayor/", armed.Add(30*time.Second))}, true},
		{"recipient reply exactly at arm time counts as satisfied", "mayor/", []*maildir.Message{msg("mayor/", armed)}, true},
		{"recipient address in non-canonical form still matches", "mayor", []*maildir.Message{msg("gastown/mayor", armed.Add(10*time.Second))}, true},
		{"polecats long-form recipient matches canonical reply", "gastown/polecats/toast", []*maildir.Message{msg("gastown/toast", armed.Add(5*time.Second))}, true},
		{"no recipient reply — reminder stands", "mayor/", []*maildir.Message{msg("gastown/witness", base), msg("gastown/witness", armed.Add(2*time.Minute))}, false},
		{"recipient only spoke before reminder armed — still needs reminder", "mayor/", []*maildir.Message{msg("mayor/", base), msg("gastown/witness", armed.Add(-time.Second))}, false},
		{"empty thread", "mayor/", nil, false},
		{"nil message entries are skipped", "mayor/", []*maildir.Message{nil, msg("mayor/", armed.Add(time.Second))}, true},
	} {
		agent, err := maildir.ParseAgent(tc.recipient)
		if err != nil {
			t.Fatal(err)
		}
		if got := answeredSince(tc.thread, agent, armed); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
