package live_test

import (
	"testing"

	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
)

// What the tests against real agent runtimes share: each works as the
// agent toast, with mail from mayor.

var toast = maildir.Address{Kind: maildir.KindAgent, Name: "toast"}

// sendToast sends toast a message from mayor.
func sendToast(t testing.TB, s *maildir.Store, subject string, p maildir.Priority) *maildir.Message {
	t.Helper()
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: subject, Body: "see " + subject, Priority: p})
	if err != nil {
		t.Fatal(err)
	}
	return sent[0]
}

// stillUnread fails the test unless message id is in toast's mailbox,
// unread: the doorbell is never the copy.
func stillUnread(t testing.TB, s *maildir.Store, id string) {
	t.Helper()
	if got, err := s.Get(toast, id); err != nil || got.Read {
		t.Fatalf("%s is not in the mailbox, unread: %v", id, err)
	}
}

// liveRecord returns the record of toast's running deliverer of runtime
// rt ("" for any), or nil.
func liveRecord(s *maildir.Store, rt string) *live.Record {
	recs, _ := live.Records(s, "toast")
	for _, r := range recs {
		if r.Live() && (rt == "" || r.Session.Runtime == rt) {
			return r
		}
	}
	return nil
}
