package nudgeq

import (
	"cmp"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/maildir"
)

// What a queue shared with Gas Town (runtime/nudge/<agent> a link to
// Gas Town's <town>/.runtime/nudge_queue/<session>) takes from Gas Town,
// as its internal/nudge/queue.go and internal/config/operational.go have
// it (read at gagecane/gastown 57bcb59d).

// ReplyReminder is the kind of the nudges Gas Town queues to remind an
// agent to answer a message ("kind": "reply-reminder", with the message's
// "thread_id", "original_from" and "original_subject").
const ReplyReminder = "reply-reminder"

// ClearReplyReminders removes from agent's queue the reply reminders a
// reply agent just sent satisfies, as Gas Town's own send does
// (ClearReplyReminders, nudge.RemoveKindByThread): those of the reply's
// thread, and — for a reply sent without a thread, "Re: subject" — those
// whose original message came from the reply's recipient with the same
// subject (nudge.RemoveKindByOriginal). Claimed files are left to the
// drainer that holds them. It returns how many it removed.
func (q *Queue) ClearReplyReminders(agent string, reply *maildir.Message) (int, error) {
	agent, d, err := q.openQueue(agent)
	if d == nil {
		return 0, err
	}
	defer d.Close()
	l, err := list(d)
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, name := range l.nudges {
		data, _, err := d.ReadFile(name, 1<<20)
		if err != nil {
			continue
		}
		var r struct {
			Kind            string `json:"kind"`
			ThreadID        string `json:"thread_id"`
			OriginalFrom    string `json:"original_from"`
			OriginalSubject string `json:"original_subject"`
		}
		if json.Unmarshal(data, &r) != nil || r.Kind != ReplyReminder || !satisfies(reply, r.ThreadID, r.OriginalFrom, r.OriginalSubject) {
			continue
		}
		if err := d.Remove(name); err == nil {
			removed++
		} else if !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
	}
	return removed, nil
}

// satisfies reports whether reply answers the message a reply reminder
// is about: the same thread, else a reply to its sender under its
// subject (Re: prefixes aside).
func satisfies(reply *maildir.Message, thread, from, subject string) bool {
	if thread != "" && (thread == reply.Thread || thread == reply.ReplyTo) {
		return true
	}
	if from == "" || subject == "" {
		return false
	}
	to, err1 := maildir.ParseAgent(reply.To)
	orig, err2 := maildir.ParseAgent(from)
	return err1 == nil && err2 == nil && to == orig && NormalizeReplySubject(reply.Subject) == NormalizeReplySubject(subject)
}

// NormalizeReplySubject strips any number of leading "Re:" prefixes (in
// any case, with any spacing), as Gas Town does to match a reply to the
// message it answers.
func NormalizeReplySubject(s string) string {
	s = strings.TrimSpace(s)
	for len(s) >= 3 && strings.EqualFold(s[:3], "re:") {
		s = strings.TrimSpace(s[3:])
	}
	return s
}

// gasTownLimits are a shared queue's depth and stale-claim time, as the
// town's settings set them; zero where they do not.
type gasTownLimits struct {
	depth      int
	stale      time.Duration
	replyDelay *time.Duration // nil: the default
}

// sharedTown is the Gas Town town whose queue agent's queue is linked to
// (<town>/.runtime/nudge_queue/<session>), or "" for a queue of mailfs's
// own.
func (q *Queue) sharedTown(agent string) string {
	link := filepath.Join(q.root.Path(), filepath.FromSlash(queueDir(agent)))
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&fs.ModeSymlink == 0 {
		return ""
	}
	target, err := filepath.EvalSymlinks(link)
	if err != nil {
		return ""
	}
	if filepath.Base(filepath.Dir(target)) != "nudge_queue" || filepath.Base(filepath.Dir(filepath.Dir(target))) != ".runtime" {
		return ""
	}
	return filepath.Dir(filepath.Dir(filepath.Dir(target)))
}

// sharedLimits returns the limits of agent's queue when it is shared with
// Gas Town and the town's settings/config.json sets them
// ("operational": {"nudge": {"max_queue_depth": N, "stale_claim_threshold":
// "5m"}, "mail": {"reply_reminder_delay": "5m"}}); else zeros, and the
// Queue's own fields hold.
func (q *Queue) sharedLimits(agent string) gasTownLimits {
	town := q.sharedTown(agent)
	if town == "" {
		return gasTownLimits{}
	}
	r, err := chipset.OpenOther(town)
	if err != nil {
		return gasTownLimits{}
	}
	defer r.Close()
	d, err := r.Open("settings")
	if err != nil {
		return gasTownLimits{}
	}
	defer d.Close()
	data, _, err := d.ReadFile("config.json", 4<<20)
	if err != nil {
		return gasTownLimits{}
	}
	var cfg struct {
		Operational struct {
			Nudge struct {
				MaxQueueDepth       *int   `json:"max_queue_depth"`
				StaleClaimThreshold string `json:"stale_claim_threshold"`
			} `json:"nudge"`
			Mail struct {
				ReplyReminderDelay string `json:"reply_reminder_delay"`
			} `json:"mail"`
		} `json:"operational"`
	}
	if json.Unmarshal(data, &cfg) != nil {
		return gasTownLimits{}
	}
	var l gasTownLimits
	if n := cfg.Operational.Nudge.MaxQueueDepth; n != nil && *n > 0 {
		l.depth = *n
	}
	if d, err := time.ParseDuration(cfg.Operational.Nudge.StaleClaimThreshold); err == nil && d > 0 {
		l.stale = d
	}
	if d, err := time.ParseDuration(cfg.Operational.Mail.ReplyReminderDelay); err == nil { // else the default, as Gas Town's ParseDurationOrDefault
		l.replyDelay = &d
	}
	return l
}

// depthFor is agent's queue's cap: the town's setting for a queue shared
// with Gas Town, else [Queue.MaxDepth].
func (q *Queue) depthFor(agent string) int {
	return cmp.Or(q.sharedLimits(agent).depth, q.maxDepth())
}

// orphanAfterFor is how old a claim in agent's queue must be to go back:
// the town's setting for a queue shared with Gas Town, else
// [Queue.OrphanAfter].
func (q *Queue) orphanAfterFor(agent string) time.Duration {
	return cmp.Or(q.sharedLimits(agent).stale, q.OrphanAfter, DefaultOrphanAfter)
}
