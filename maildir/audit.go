package maildir

import (
	"io/fs"
	"slices"
	"time"
)

// AuditDir holds the town's audit log: one file per action a person took
// on someone else's work through a tool (the web view's release, reassign
// and nudge), under state/ so that git commits it with the mail. A file
// per entry, named by its time, never rewritten: entries from several
// hosts merge in git without a conflict, and a crash leaves an entry
// written whole or not at all (the one durable-write path).
//
// The entry is written after the action, with what came of it: an action
// that failed is recorded too, with its error, so that the log answers
// "who tried what" as well as "who did what". A crash between an action
// and its entry leaves the action unrecorded; the entry never records an
// action that did not happen.
const AuditDir = "state/audit"

// An AuditEntry is one action in the audit log. Its JSON keys are sorted,
// as a message's are.
type AuditEntry struct {
	Action string    `json:"action"`         // "release", "reassign", "nudge"
	Actor  string    `json:"actor"`          // the identity that acted (the web view's --as)
	Addr   string    `json:"addr,omitempty"` // where the request came from (an IP address)
	Agent  string    `json:"agent"`          // whose work it was: the claimant
	At     time.Time `json:"at"`
	Error  string    `json:"error,omitempty"` // why it failed; empty when it was done
	Item   string    `json:"item"`            // the message id acted on
	Note   string    `json:"note,omitempty"`  // a nudge's text
	Queue  string    `json:"queue,omitempty"` // the claim's queue
	// Subject is the item's subject, for a person reading the log.
	Subject string `json:"subject,omitempty"`
	To      string `json:"to,omitempty"` // a reassign's new claimant

	ID string `json:"-"` // the file's name without .json
}

// Done reports whether the action was done.
func (e *AuditEntry) Done() bool { return e.Error == "" }

// Record adds e to the audit log, stamped now unless e.At is set, and
// returns its id.
func (s *Store) Record(e AuditEntry) (string, error) {
	if !ValidAgent(e.Actor) {
		return "", &NameError{Kind: KindAgent, Name: e.Actor, Why: "an audit entry's actor must be an agent id"}
	}
	if e.At.IsZero() {
		e.At = s.now()
	}
	e.At = e.At.UTC()
	return s.createRecord(AuditDir, NewID(e.At, e.Actor), e)
}

// AuditLog returns the last n entries of the audit log, newest first (all
// of them when n <= 0). A file that is not an entry is skipped with a
// warning.
func (s *Store) AuditLog(n int) ([]*AuditEntry, error) {
	names, err := s.recordNames(AuditDir)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	slices.Reverse(names)
	var out []*AuditEntry
	err = readRecords(s, AuditDir, names, "an audit entry", func(id string, e *AuditEntry) (bool, bool) {
		if e.Action == "" || !ValidAgent(e.Actor) {
			return false, true
		}
		e.ID = id
		out = append(out, e)
		return true, n <= 0 || len(out) < n
	})
	return out, err
}

// AuditEntryOf returns the audit entry id (as Record returned it), or an
// error wrapping fs.ErrNotExist.
func (s *Store) AuditEntryOf(id string) (*AuditEntry, error) {
	var found *AuditEntry
	err := readRecords(s, AuditDir, []string{id + ".json"}, "an audit entry", func(id string, e *AuditEntry) (bool, bool) {
		if e.Action == "" || !ValidAgent(e.Actor) {
			return false, false
		}
		e.ID, found = id, e
		return true, false
	})
	if err == nil && found == nil {
		err = &fs.PathError{Op: "read", Path: AuditDir + "/" + id + ".json", Err: fs.ErrNotExist}
	}
	return found, err
}
