package maildir_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Record writes one sorted-key file per entry under state/audit; AuditLog
// reads them back newest first, bounded, skipping (and naming) a file
// that is not an entry.
func TestAuditLog(t *testing.T) {
	ts := newStore(t)
	if got, err := ts.AuditLog(0); err != nil || len(got) != 0 {
		t.Fatalf("an empty log: %v, %v", got, err)
	}
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	var ids []string
	for i, e := range []maildir.AuditEntry{
		{Action: "release", Actor: "human", Agent: "nux", Item: "i1", Queue: "queue:work", Addr: "127.0.0.1"},
		{Action: "reassign", Actor: "human", Agent: "nux", Item: "i2", Queue: "queue:work", To: "toast"},
		{Action: "nudge", Actor: "human", Agent: "nux", Item: "i3", Note: "still on it?", Error: "no such agent"},
	} {
		e.At = at.Add(time.Duration(i) * time.Second)
		id, err := ts.Record(e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	data, err := os.ReadFile(ts.path(maildir.AuditDir + "/" + ids[0] + ".json"))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{`"action"`, `"actor"`, `"addr"`, `"agent"`, `"at"`, `"item"`, `"queue"`}
	last := -1
	for _, k := range keys {
		i := strings.Index(string(data), k)
		if i < last {
			t.Fatalf("keys not sorted in %s", data)
		}
		last = i
	}
	ts.write(t, maildir.AuditDir+"/zzzz.json", "not json")
	got, err := ts.AuditLog(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Item != "i3" || got[1].Item != "i2" || got[0].Done() || !got[1].Done() || got[1].To != "toast" {
		t.Fatalf("the last two: %+v", got)
	}
	if w := ts.warnings(); len(w) != 1 || !errors.Is(w[0], maildir.ErrInvalidMessage) {
		t.Fatalf("warnings %v", w)
	}
	if _, err := ts.Record(maildir.AuditEntry{Action: "release", Actor: "../x"}); err == nil {
		t.Fatal("an actor that is no agent id was recorded")
	}
}

// One entry is read by its id; an id with no entry, or one that names no
// file in the log, is not found.
func TestAuditEntryOf(t *testing.T) {
	ts := newStore(t)
	id, err := ts.Record(maildir.AuditEntry{Action: "nudge", Actor: "human", Agent: "nux", Item: "i9", Note: "still on it?"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ts.AuditEntryOf(id)
	if err != nil || e.ID != id || e.Note != "still on it?" {
		t.Fatalf("%+v, %v", e, err)
	}
	for _, bad := range []string{"nope", "../state/mail/x", ""} {
		if _, err := ts.AuditEntryOf(bad); err == nil {
			t.Errorf("%q: found", bad)
		}
	}
}
