package hook

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// MaxMailLines is how many messages a tier of a reminder lists; the rest
// are counted, with the command that lists them, so a reminder stays a few
// hundred bytes however much mail waits.
const MaxMailLines = 5

// maxSubject is how many characters of a subject or nudge a reminder shows.
const maxSubject = 120

// A Reminder is what an agent's prompt hook injects into its context
// (SPEC §7): its unread mail grouped by priority, then its nudges.
type Reminder struct {
	Agent   string
	Mail    []*maildir.Message // unread mail, in any order; grouped by priority when shown
	Nudges  []*nudgeq.Nudge    // in any order; urgent ones are shown first
	Refused *nudgeq.Refusals   // nudges refused while the queue was full

	// Earlier holds the ids of mail the agent was shown earlier in its
	// session (by a reminder or a doorbell). Such mail, still unread, is
	// counted in one line rather than listed again.
	Earlier map[string]bool

	// Partial, if not empty, says why the reminder is incomplete (for
	// instance a time budget ran out); it is shown last.
	Partial string
}

// String returns the <system-reminder> blocks: one per tier of mail
// (urgent, with the strongest instruction; high; the rest), one line
// counting the unread mail named earlier (see Earlier), one for the
// nudges, one saying the reminder is partial. It returns "" when there is
// nothing to say. Text from messages is kept to one line, with control
// characters replaced and "<" and ">" turned into "‹" and "›", so no
// subject can close a block early.
func (r *Reminder) String() string {
	var b strings.Builder
	read := fmt.Sprintf("mailfs read %s <id>", r.Agent)
	tiers := []struct {
		intro func(n int) string
		list  string // the inbox flags that list the whole tier
	}{
		{func(n int) string {
			return fmt.Sprintf("URGENT: %s. Stop what you are doing and read %s now (%s):",
				count(n, "unread message"), them(n), read)
		}, " --priority urgent"},
		{func(n int) string {
			return fmt.Sprintf("%s. Read %s before your next task (%s):",
				count(n, "high-priority unread message"), them(n), read)
		}, " --priority high"},
		{func(n int) string {
			return fmt.Sprintf("%s (%s):", count(n, "unread message"), read)
		}, ""},
	}
	mail, earlier := r.fresh()
	for i, tier := range tiers {
		var lines []string
		n := 0
		for _, m := range mail {
			if tierOf(m.Priority) != i {
				continue
			}
			if n++; n <= MaxMailLines {
				lines = append(lines, fmt.Sprintf("- %s from %s: %s", safe(m.ID), safe(m.From), short(safe(m.Subject))))
			}
		}
		if n > MaxMailLines {
			lines = append(lines, fmt.Sprintf("… and %d more: mailfs inbox %s%s", n-MaxMailLines, r.Agent, tier.list))
		}
		if n > 0 {
			block(&b, tier.intro(n), lines)
		}
	}
	if len(earlier) > 0 {
		urgent := 0
		for _, m := range earlier {
			if m.Priority == maildir.Urgent {
				urgent++
			}
		}
		line := fmt.Sprintf("Still unread, named earlier: %s (mailfs inbox %s).", count(len(earlier), "message"), r.Agent)
		if urgent > 0 {
			line = fmt.Sprintf("Still unread, named earlier: %s, %d URGENT: read those now (mailfs inbox %s --priority urgent).", count(len(earlier), "message"), urgent, r.Agent)
		}
		block(&b, line, nil)
	}
	if len(r.Nudges) > 0 || r.Refused != nil {
		nudges := slices.Clone(r.Nudges)
		slices.SortStableFunc(nudges, ShownFirst)
		var lines []string
		for _, n := range nudges {
			flag := ""
			if n.Priority == nudgeq.Urgent {
				flag = "[URGENT] "
			}
			lines = append(lines, fmt.Sprintf("- %s[from %s] %s", flag, safe(n.Sender), safe(cutNudge(n.Message))))
		}
		if f := r.Refused; f != nil {
			lines = append(lines, fmt.Sprintf("%s refused while your queue was full; latest from %s at %s.",
				count(f.Count, "nudge was", "nudges were"), safe(f.Sender), f.At.UTC().Format(time.RFC3339)))
		}
		block(&b, fmt.Sprintf("Nudges for %s:", r.Agent), lines)
	}
	if r.Partial != "" {
		block(&b, fmt.Sprintf("mailfs stopped early: %s. This reminder may be incomplete; run \"mailfs inbox %s\" to see all your mail.",
			safe(r.Partial), r.Agent), nil)
	}
	return b.String()
}

// fresh splits the mail into what String lists, oldest first, and what
// was named earlier.
func (r *Reminder) fresh() (mail, earlier []*maildir.Message) {
	for _, m := range r.Mail {
		if r.Earlier[m.ID] {
			earlier = append(earlier, m)
		} else {
			mail = append(mail, m)
		}
	}
	slices.SortStableFunc(mail, func(a, b *maildir.Message) int { return a.Timestamp.Compare(b.Timestamp) })
	return mail, earlier
}

// Listed returns the ids of the messages String lists by line, tier by
// tier: the messages the agent is shown (the rest of a tier is a count).
func (r *Reminder) Listed() []string {
	mail, _ := r.fresh()
	var ids []string
	for tier := range 3 {
		n := 0
		for _, m := range mail {
			if tierOf(m.Priority) == tier && n < MaxMailLines {
				ids = append(ids, m.ID)
				n++
			}
		}
	}
	return ids
}

// Named returns the ids of the messages String names, by line or in a
// tier's count, apart from those named earlier: what a later reminder in
// the session counts instead of listing. Those listed by line come last,
// so that a bounded memory of them (the oldest forgotten first) keeps them.
func (r *Reminder) Named() []string {
	mail, _ := r.fresh()
	listed := r.Listed()
	ids := make([]string, 0, len(mail))
	for _, m := range mail {
		if !slices.Contains(listed, m.ID) {
			ids = append(ids, m.ID)
		}
	}
	return append(ids, listed...)
}

// tierOf is the block of a reminder that lists mail of priority p: 0
// urgent, 1 high, 2 the rest.
func tierOf(p maildir.Priority) int {
	switch p {
	case maildir.Urgent:
		return 0
	case maildir.High:
		return 1
	}
	return 2
}

// ShownFirst orders nudges as a reminder shows them: urgent first, then
// oldest first.
func ShownFirst(a, b *nudgeq.Nudge) int {
	if a.Priority == b.Priority {
		return a.Timestamp.Compare(b.Timestamp)
	}
	if a.Priority == nudgeq.Urgent {
		return -1
	}
	return 1
}

func block(b *strings.Builder, intro string, lines []string) {
	b.WriteString("<system-reminder>\n")
	b.WriteString(intro)
	b.WriteByte('\n')
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("</system-reminder>\n")
}

// count renders "1 thing" or "3 things"; an explicit plural may follow.
func count(n int, one string, many ...string) string {
	if n == 1 {
		return "1 " + one
	}
	if len(many) > 0 {
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Short cuts s to the characters of a subject a reminder shows (120),
// marking the cut.
func Short(s string) string { return short(s) }

// cutNudge cuts a nudge longer than nudgeq.MaxMessage (another tool queued it) at
// a character boundary, saying how much was left out.
func cutNudge(s string) string {
	if len(s) <= nudgeq.MaxMessage {
		return s
	}
	cut := strings.ToValidUTF8(s[:nudgeq.MaxMessage], "")
	return fmt.Sprintf("%s… (%d more bytes left out: a nudge is short)", cut, len(s)-len(cut))
}

// short cuts s to maxSubject characters, marking the cut.
func short(s string) string {
	n := 0
	for i := range s {
		if n == maxSubject {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// safe keeps text from a message on one line and inside its block.
func safe(s string) string { return Neutral(s, false) }

// Neutral keeps message text inside a reminder's block: "<" and ">" become
// "‹" and "›", control characters U+FFFD; newlines and tabs are kept only
// when multiline, else they become spaces.
func Neutral(s string, multiline bool) string {
	return strings.Map(func(r rune) rune {
		switch {
		case multiline && (r == '\n' || r == '\t'):
			return r
		case r == '\n' || r == '\t':
			return ' '
		case r == '<':
			return '‹'
		case r == '>':
			return '›'
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Bidi_Control, r):
			// Bidi controls (U+202E and kin) would reorder what follows.
			return '\uFFFD'
		}
		return r
	}, s)
}
