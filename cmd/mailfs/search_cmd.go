package main

import (
	"fmt"
	"regexp"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// filterFlags are the filters inbox and search share (maildir.Filter).
type filterFlags struct {
	From    string `placeholder:"AGENT" help:"Only mail from this agent (any spelling of it)."`
	Type    string `placeholder:"TYPE" help:"Only mail of this type."`
	Only    string `name:"priority" placeholder:"P" enum:",urgent,high,normal,low" default:"" help:"Only mail of this priority: urgent, high, normal or low."`
	Since   string `placeholder:"WHEN" help:"Only mail sent since: a duration ago (2h, 30m) or an RFC 3339 time."`
	Subject string `placeholder:"TEXT" help:"Only mail whose subject contains TEXT (any case), or matches it with --regexp."`
	Body    string `placeholder:"TEXT" help:"Only mail whose body contains TEXT (any case), or matches it with --regexp."`
	Regexp  bool   `help:"The TEXT of --subject and --body (and search's query) is a Go regular expression, not literal text."`
}

// matcher compiles the flags, and text (search's QUERY), into a matcher;
// nil when no filter is set.
func (f *filterFlags) matcher(text string) (*maildir.Matcher, error) {
	flt := maildir.Filter{From: f.From, Type: f.Type, Priority: maildir.Priority(f.Only), Subject: f.Subject, Body: f.Body, Text: text, Regexp: f.Regexp}
	if f.Since != "" {
		if d, err := time.ParseDuration(f.Since); err == nil {
			if d < 0 {
				// "-2h" would be two hours from now: nothing, quietly.
				return nil, usage("write how long ago, without a sign: --since 2h", "--since %q is negative", f.Since)
			}
			flt.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, f.Since); err == nil {
			flt.Since = t
		} else {
			return nil, usage("write --since 2h, 30m or 2026-11-23T10:00:00Z", "--since %q is neither a duration nor an RFC 3339 time", f.Since)
		}
	}
	if flt == (maildir.Filter{Regexp: f.Regexp}) {
		return nil, nil
	}
	if f.Regexp {
		// A pattern that does not compile is a mistake on the command
		// line (exit 80), named by where it was given.
		for _, p := range []struct{ where, pat string }{{"the query", text}, {"--subject", f.Subject}, {"--body", f.Body}} {
			if _, err := regexp.Compile(p.pat); err != nil {
				return nil, usage(`--regexp takes Go's syntax (https://pkg.go.dev/regexp/syntax): escape ( [ { . * + ? with \, or drop --regexp to match the text literally`,
					"--regexp: %s %q is not a regular expression: %v", p.where, p.pat, err)
			}
		}
	}
	return flt.Compile()
}

type searchCmd struct {
	Query    string   `arg:"" help:"Text to find in the subject, body or sender (literal, any case; a pattern with --regexp)."`
	Agents   []string `arg:"" optional:"" name:"agent" help:"The mailboxes to search (default: every mailbox)."`
	Archived bool     `help:"Search the archives too."`
	All      bool     `help:"Include read mail (default: all mail is searched; kept for symmetry with inbox)." hidden:""`
	filterFlags
	jsonFlag
}

func (c *searchCmd) Help() string {
	return `Finds messages across mailboxes (and archives, with --archived), oldest
first, reading the folders in parallel: read and unread alike. The query is
literal text matched without regard to case in the subject, the body and
the sender; --regexp makes it (and --subject, --body) a Go regular
expression. The other filters narrow it as they narrow inbox. Exit status 1
when nothing matches.`
}

func (c *searchCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	m, err := c.matcher(c.Query)
	if err != nil {
		return err
	}
	if m == nil { // an empty query: every message
		if m, err = (maildir.Filter{}).Compile(); err != nil {
			return err
		}
	}
	var boxes []maildir.Address
	for _, arg := range c.Agents {
		b, err := mailbox(arg)
		if err != nil {
			return err
		}
		boxes = append(boxes, b)
	}
	msgs, err := s.Search(a.ctx, m, boxes, c.Archived)
	if err != nil && a.ctx.Err() != nil {
		// Interrupted: what was found so far, and that it is not all.
		if perr := c.print(a, msgs); perr != nil {
			return perr
		}
		return &exitStatus{code: exitInterrupted, msg: fmt.Sprintf("error: search interrupted: the %d messages above are those found before it stopped, not all that match", len(msgs))}
	}
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return &exitStatus{code: exitNothing}
	}
	return c.print(a, msgs)
}

// print writes the messages found, as a table or as JSON lines.
func (c *searchCmd) print(a *app, msgs []*maildir.Message) error {
	if c.JSON {
		return printJSON(a.out, msgs)
	}
	return table(a.out, []string{"ID", "MAILBOX", "FROM", "STATUS", "SUBJECT"}, messageRows(msgs, func(m *maildir.Message) []string {
		status := readState(m)
		if m.Archived {
			status += ", archived"
		}
		return []string{m.ID, m.Box.String(), m.From, status, m.Subject}
	}))
}
