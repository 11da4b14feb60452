package webview

import (
	"errors"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

func TestParseQuery(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	yes := true
	for _, c := range []struct {
		in   string
		want query
		err  bool
	}{
		{in: `flaky Build`, want: query{Terms: []string{"flaky", "build"}}},
		{in: `"merge conflict" from:nux`, want: query{Terms: []string{"merge conflict"}, From: "nux"}},
		{in: `from:gastown/polecats/nux`, want: query{From: "gastown.nux"}}, // any spelling of the agent
		{in: `from:../x`, err: true},
		{in: `from:gastown.nux to:toast`, want: query{From: "gastown.nux", To: "toast"}},
		{in: `priority:URGENT type:reply`, want: query{Priority: maildir.Urgent, Type: "reply"}},
		{in: `after:2026-11-20 before:3d`, want: query{After: time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), Before: now.Add(-72 * time.Hour)}},
		{in: `after:2026-11-20T10:00:00Z`, want: query{After: time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)}},
		{in: `is:unread`, want: query{Unread: &yes}},
		{in: `note: see:this`, want: query{Terms: []string{"note:", "see:this"}}}, // not filters: words
		{in: `priority:extreme`, err: true},
		{in: `before:yesterday`, err: true},
		{in: `is:starred`, err: true},
		{in: `after:3x`, err: true},
	} {
		got, err := parseQuery(c.in, now)
		if c.err {
			var qe *queryError
			if !errors.As(err, &qe) {
				t.Errorf("%q: %v, want a query error", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !sameQuery(got, &c.want) {
			t.Errorf("%q: %+v, want %+v", c.in, got, c.want)
		}
	}
}

func sameQuery(a, b *query) bool {
	if len(a.Terms) != len(b.Terms) || a.From != b.From || a.To != b.To || a.Type != b.Type || a.Priority != b.Priority ||
		!a.After.Equal(b.After) || !a.Before.Equal(b.Before) || (a.Unread == nil) != (b.Unread == nil) || a.Unread != nil && *a.Unread != *b.Unread {
		return false
	}
	for i := range a.Terms {
		if a.Terms[i] != b.Terms[i] {
			return false
		}
	}
	return true
}

func TestScoreAndSnippet(t *testing.T) {
	q, _ := parseQuery("flaky", time.Now())
	inSubject := &maildir.Message{Subject: "WORK gt-1: flaky test", Body: "x", Read: true}
	inBody := &maildir.Message{Subject: "WORK gt-2", Body: "the test is flaky", Read: true}
	partOfWord := &maildir.Message{Subject: "WORK gt-3: flakyness", Body: "x", Read: true}
	if !(q.score(inSubject) > q.score(partOfWord) && q.score(partOfWord) > q.score(inBody)) {
		t.Errorf("scores: subject %v, part of a word %v, body %v", q.score(inSubject), q.score(partOfWord), q.score(inBody))
	}
	long := &maildir.Message{Body: "Branch: polecat/nux\n\n" + string(make([]byte, 0)) + "a long preamble that goes on and on and on about nothing much at all before it says the build is Flaky on main and then goes on for a while longer still, and longer, and longer"}
	sn := q.snippetOf(long)
	if sn.Match != "Flaky" || len(sn.Before) > 65 || sn.Before[:3] != "…" || sn.After[len(sn.After)-3:] != "…" {
		t.Errorf("snippet: %+v", sn)
	}
	if sn := q.snippetOf(&maildir.Message{Body: "nothing here"}); sn.Match != "" || sn.Before != "nothing here" {
		t.Errorf("a body without the word: %+v", sn)
	}
}
