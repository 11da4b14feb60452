package webview

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailfs/mailfs/maildir"
)

// A query is what a person typed into the search box: words and "quoted
// phrases" that must all appear (in the subject, the body or the sender),
// and field filters:
//
//	from:nux        the sender: an agent id, or its last part (nux is gastown.nux too)
//	to:toast        a recipient: the mailbox it is in, or a To or Cc address
//	priority:urgent urgent, high, normal or low, in any case
//	type:reply      the type
//	after:2026-11-20 before:2026-11-25   a date, a time (RFC 3339), or an age: 3d, 12h, 30m
//	is:unread       or is:read
//
// A value with spaces is quoted: from:"gastown.nux". The words are matched
// without regard to case. Parsing is hand-written: the grammar is a dozen
// lines, and the libraries that parse such queries (bleve's query string,
// for one) come with an index mailfs does not keep.
type query struct {
	Terms         []string // lower case
	From, To      string   // agent ids
	Type          string
	Priority      maildir.Priority
	After, Before time.Time
	Unread        *bool
}

// A queryError is a query that cannot be run, and why: the page says so
// beside the box.
type queryError struct{ msg string }

func (e *queryError) Error() string { return e.msg }

// parseQuery parses q as of now (for ages).
func parseQuery(q string, now time.Time) (*query, error) {
	out := &query{}
	for _, tok := range tokens(q) {
		key, val, isField := strings.Cut(tok, ":")
		if !isField || val == "" || !fieldKey(key) {
			if t := strings.ToLower(strings.Trim(tok, `"`)); t != "" {
				out.Terms = append(out.Terms, t)
			}
			continue
		}
		val = strings.Trim(val, `"`)
		switch strings.ToLower(key) {
		case "from", "to":
			a, err := maildir.ParseAgent(val)
			if err != nil {
				return nil, &queryError{fmt.Sprintf("%s:%s is not an agent id", key, val)}
			}
			if strings.EqualFold(key, "from") {
				out.From = a
			} else {
				out.To = a
			}
		case "priority":
			p, err := maildir.ParsePriority(strings.ToLower(val))
			if err != nil {
				return nil, &queryError{fmt.Sprintf("priority:%s: use urgent, high, normal or low", val)}
			}
			out.Priority = p
		case "type":
			out.Type = val
		case "after", "before":
			t, err := when(val, now)
			if err != nil {
				return nil, &queryError{fmt.Sprintf("%s:%s: write a date (2026-11-20), a time (2026-11-20T10:00:00Z) or an age (3d, 12h, 30m)", key, val)}
			}
			if strings.EqualFold(key, "after") {
				out.After = t
			} else {
				out.Before = t
			}
		case "is":
			switch strings.ToLower(val) {
			case "unread", "read":
				u := strings.EqualFold(val, "unread")
				out.Unread = &u
			default:
				return nil, &queryError{fmt.Sprintf("is:%s: use is:unread or is:read", val)}
			}
		}
	}
	return out, nil
}

// fieldKey reports whether key (any case) is a filter's name.
func fieldKey(key string) bool {
	return slices.Contains([]string{"from", "to", "priority", "type", "after", "before", "is"}, strings.ToLower(key))
}

// tokens splits q at spaces outside double quotes.
func tokens(q string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range q {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case unicode.IsSpace(r) && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// when reads a date, an RFC 3339 time, or an age before now.
func when(v string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	units := map[byte]time.Duration{'d': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute}
	if len(v) > 1 {
		n, err := strconv.Atoi(v[:len(v)-1])
		if unit := units[v[len(v)-1]]; unit != 0 && err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * unit), nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time: %q", v)
}

// filter is the store's filter for what it can test itself: the rest is
// tested by match.
func (q *query) filter() maildir.Filter {
	f := maildir.Filter{Type: q.Type, Priority: q.Priority, Since: q.After}
	if strings.Contains(q.From, ".") {
		f.From = q.From // an exact id; a bare name matches by its last part too, below
	}
	if len(q.Terms) > 0 {
		f.Text = q.Terms[0]
	}
	return f
}

// match tests what the store's filter does not.
func (q *query) match(m *maildir.Message) bool {
	if q.From != "" && !sameAgent(m.From, q.From) {
		return false
	}
	if q.To != "" && !(m.Box.Kind == maildir.KindAgent && sameAgent(m.Box.Name, q.To)) &&
		!sameAgent(m.To, q.To) && !slices.ContainsFunc(m.CC, func(c string) bool { return sameAgent(c, q.To) }) {
		return false
	}
	if !q.Before.IsZero() && !m.Timestamp.Before(q.Before) {
		return false
	}
	if q.Unread != nil && m.Read == *q.Unread {
		return false
	}
	for _, t := range q.Terms {
		if !strings.Contains(strings.ToLower(m.Subject), t) && !strings.Contains(strings.ToLower(m.Body), t) && !strings.Contains(strings.ToLower(m.From), t) {
			return false
		}
	}
	return true
}

// sameAgent reports whether the address written as s is agent want: the
// same id, or (want having no rig) the same last part.
func sameAgent(s, want string) bool {
	a, err := maildir.ParseAgent(s)
	if err != nil {
		return false
	}
	return a == want || !strings.Contains(want, ".") && strings.HasSuffix(a, "."+want)
}

// score ranks m for the query's words: a word in the subject counts three
// times one in the body, a whole word more than a part of one; unread
// mail a little more. Newer first among equals (the caller's sort).
func (q *query) score(m *maildir.Message) float64 {
	s := 0.0
	subject, body := strings.ToLower(m.Subject), strings.ToLower(m.Body)
	for _, t := range q.Terms {
		if strings.Contains(subject, t) {
			s += 3
			if wholeWord(subject, t) {
				s += 2
			}
		}
		if n := strings.Count(body, t); n > 0 {
			s += float64(min(n, 5))
			if wholeWord(body, t) {
				s++
			}
		}
	}
	if !m.Read {
		s += 0.5
	}
	return s
}

// wholeWord reports whether t appears in s with no letter or digit on
// either side.
func wholeWord(s, t string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], t)
		if j < 0 {
			return false
		}
		at := i + j
		before, _ := utf8.DecodeLastRuneInString(s[:at])
		after, _ := utf8.DecodeRuneInString(s[at+len(t):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		i = at + 1
	}
}

func isWordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// A snippet is the part of a body around the first word of the query it
// holds, the word apart so that the page can mark it.
type snippet struct {
	Before, Match, After string
}

// snippetOf cuts m's body around the first of the query's words it holds
// (about 60 characters each side, on one line), or its start when it holds
// none.
func (q *query) snippetOf(m *maildir.Message) snippet {
	body := strings.Join(strings.Fields(m.Body), " ")
	lower := strings.ToLower(body)
	at, word := -1, ""
	for _, t := range q.Terms {
		if i := strings.Index(lower, t); i >= 0 && (at < 0 || i < at) && len(lower) == len(body) {
			at, word = i, t
		}
	}
	const side = 60
	if at < 0 {
		return snippet{Before: cut(body, 0, 2*side)}
	}
	start := max(0, at-side)
	for start > 0 && !utf8.RuneStart(body[start]) {
		start--
	}
	end := min(len(body), at+len(word)+side)
	for end < len(body) && !utf8.RuneStart(body[end]) {
		end++
	}
	sn := snippet{Before: body[start:at], Match: body[at : at+len(word)], After: body[at+len(word) : end]}
	if start > 0 {
		sn.Before = "…" + sn.Before
	}
	if end < len(body) {
		sn.After += "…"
	}
	return sn
}

// cut returns s from byte i, at most n bytes, on rune boundaries.
func cut(s string, i, n int) string {
	if len(s) <= i+n {
		return s[i:]
	}
	end := i + n
	for end > i && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[i:end] + "…"
}
