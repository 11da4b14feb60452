package maildir

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// A Filter selects messages: every field set must match. Inbox filters and
// search use it, so a message is found one way everywhere.
type Filter struct {
	From     string    // the sender, any spelling of the agent ("gastown/polecats/nux" is gastown.nux)
	Type     string    // the type, exactly
	Priority Priority  // the priority, exactly
	Since    time.Time // sent at or after
	Subject  string    // in the subject
	Body     string    // in the body
	Text     string    // in the subject, the body or the sender
	Regexp   bool      // Subject, Body and Text are regular expressions, not literal text
}

// A Matcher is a compiled [Filter].
type Matcher struct {
	f                   Filter
	from                string
	subject, body, text func(string) bool
	needle              []byte // Text in lower case, when raw bytes can rule a file out
}

// Compile checks f and returns its matcher: an invalid sender or regular
// expression is an error wrapping [ErrInvalidMessage] or [ErrInvalidAddress].
// Literal text matches without regard to case.
func (f Filter) Compile() (*Matcher, error) {
	m := &Matcher{f: f}
	if f.From != "" {
		from, err := ParseAgent(f.From)
		if err != nil {
			return nil, err
		}
		m.from = from
	}
	if f.Priority != "" {
		if _, err := ParsePriority(string(f.Priority)); err != nil {
			return nil, err
		}
	}
	var err error
	for _, p := range []struct {
		pat string
		fn  *func(string) bool
	}{{f.Subject, &m.subject}, {f.Body, &m.body}, {f.Text, &m.text}} {
		if p.pat == "" {
			continue
		}
		if *p.fn, err = textMatcher(p.pat, f.Regexp); err != nil {
			return nil, err
		}
	}
	if f.Text != "" && !f.Regexp && plainASCII(f.Text) {
		m.needle = bytes.ToLower([]byte(f.Text))
	}
	return m, nil
}

// plainASCII reports whether s is printable ASCII that a JSON encoder never
// escapes: no quote, backslash or control character.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// mayMatch rules a file out from its raw bytes, before it is parsed: a
// literal query of plain ASCII appears as itself in a JSON string unless
// the file spells it with \u escapes, which mailfs never writes for ASCII
// (a file that has any is parsed).
func (m *Matcher) mayMatch(data []byte) bool {
	if m.needle == nil || bytes.Contains(data, []byte(`\u`)) {
		return true
	}
	return containsFold(data, m.needle)
}

// containsFold reports whether lowerNeedle (in lower case) is in data,
// ASCII case folded, without allocating.
func containsFold(data, lowerNeedle []byte) bool {
	n := len(lowerNeedle)
	first := lowerNeedle[0]
	upper := first
	if 'a' <= first && first <= 'z' {
		upper = first - 'a' + 'A'
	}
	for i := 0; i+n <= len(data); i++ {
		if c := data[i]; c != first && c != upper {
			continue
		}
		j := 1
		for ; j < n; j++ {
			c := data[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerNeedle[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}

func textMatcher(pat string, isRegexp bool) (func(string) bool, error) {
	if isRegexp {
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("%w: the pattern %q: %v", ErrInvalidMessage, pat, err)
		}
		return re.MatchString, nil
	}
	lower := strings.ToLower(pat)
	return func(s string) bool { return strings.Contains(strings.ToLower(s), lower) }, nil
}

// Match reports whether msg passes every test the filter sets.
func (m *Matcher) Match(msg *Message) bool {
	f := m.f
	if m.from != "" {
		if from, err := ParseAgent(msg.From); err != nil || from != m.from {
			return false
		}
	}
	switch {
	case f.Type != "" && msg.Type != f.Type,
		f.Priority != "" && msg.Priority != f.Priority,
		!f.Since.IsZero() && msg.Timestamp.Before(f.Since),
		m.subject != nil && !m.subject(msg.Subject),
		m.body != nil && !m.body(msg.Body),
		m.text != nil && !m.text(msg.Subject) && !m.text(msg.Body) && !m.text(msg.From):
		return false
	}
	return true
}

// Search returns the messages in the boxes (every mailbox when none is
// given; with archived, their archives too) that m matches, oldest first.
// Folders are read in parallel, each as [Store.List] reads it. When ctx
// ends, Search stops within a batch of files and returns what it found so
// far with ctx's error.
func (s *Store) Search(ctx context.Context, m *Matcher, boxes []Address, archived bool) ([]*Message, error) {
	if len(boxes) == 0 {
		agents, err := s.Agents()
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			boxes = append(boxes, Address{Kind: KindAgent, Name: a})
		}
	}
	for _, b := range boxes {
		if err := s.check(b); err != nil {
			return nil, err
		}
	}
	type job struct {
		b        Address
		archived bool
	}
	var jobs []job
	for _, b := range boxes {
		jobs = append(jobs, job{b, false})
		if archived {
			jobs = append(jobs, job{b, true})
		}
	}
	results := make([][]*Message, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i], errs[i] = s.readFolderIf(ctx, j.b, j.archived, m.mayMatch, m.Match)
		})
	}
	wg.Wait()
	var out []*Message
	for i := range jobs {
		if errs[i] != nil && ctx.Err() == nil {
			return nil, errs[i]
		}
		out = append(out, results[i]...)
	}
	sortByTime(out)
	return out, ctx.Err()
}
