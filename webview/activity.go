package webview

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Activity is what the activity page shows: what was sent lately, and the
// conversations whose last word waits on an agent's answer.
type Activity struct {
	Since    time.Time          // the feed's start: an hour ago
	Recent   []*maildir.Message // sent since, newest first: this page of them
	Waiting  []*maildir.Message // each thread's latest message, one row per recipient who has not answered, oldest first: this page of them
	LookBack time.Duration      // how far back threads are looked for

	RecentPage, WaitingPage pager
	Skipped                 []string // folders that could not be read, and why
}

// A pager says which page of a list is shown and links to its neighbours.
type pager struct {
	Page, Pages, Total int
	Prev, Next         string // the neighbours' addresses; empty at an end
}

// paginate returns page n (from 1) of list, per to a page, and its pager,
// whose links set param in base's query.
func paginate[T any](list []T, n, per int, base *url.URL, param string) ([]T, pager) {
	p := pager{Total: len(list), Pages: max(1, (len(list)+per-1)/per)}
	p.Page = min(max(n, 1), p.Pages)
	link := func(page int) string {
		u := *base
		q := u.Query()
		q.Set(param, strconv.Itoa(page))
		u.RawQuery = q.Encode()
		return u.RequestURI()
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	lo := min((p.Page-1)*per, len(list))
	return list[lo:min(lo+per, len(list))], p
}

const (
	activityWindow = time.Hour      // the feed
	threadWindow   = 24 * time.Hour // the threads waiting for a reply
	activityPer    = 100            // the feed's messages a page
	waitingPer     = 50             // waiting threads' rows a page
	threadCap      = 2000           // messages read to find waiting threads at most
)

// oneWay are the types of mail that asks for no answer by mail: reports,
// notices and work handed out (answered by doing it: claims and
// completion reports track it), and escalations (tracked as such).
var oneWay = map[string]bool{
	"notification": true, "merge_notification": true, "completion_report": true,
	"handoff": true, "work_assignment": true, "health_escalation": true, "escalation": true,
}

// sameSend reports whether a and b are copies of one send: a send stamps
// its copies a nanosecond apart, with one sender, subject and thread.
func sameSend(a, b *maildir.Message) bool {
	d := a.Timestamp.Sub(b.Timestamp)
	return a.From == b.From && a.Subject == b.Subject && a.Thread == b.Thread && d < time.Second && d > -time.Second
}

// waitsForReply reports whether m, the latest word of its conversation,
// waits on its recipient's answer: mail between agents that asks for one.
func waitsForReply(m *maildir.Message) bool {
	return m.Box.Kind == maildir.KindAgent && m.Box.Name != m.From && !oneWay[m.Type] && m.Claim == nil // a claimed item is work, not a question
}

// activity gathers the page from the file names' stamps (a folder's
// listing, no file opened) and reads only the messages of the last day,
// newest first, at most threadCap of them.
func (s *Server) activity() (*Activity, error) {
	now := s.now()
	act := &Activity{Since: now.Add(-activityWindow), LookBack: threadWindow}
	boxes, err := s.allBoxes()
	if err != nil {
		return nil, err
	}
	var recent []*maildir.Message
	for _, b := range boxes {
		for _, archived := range []bool{false, true} {
			msgs, err := s.recentIn(b, archived, now)
			if err != nil {
				// A folder that cannot be read (a malformed channel) is
				// named on the page; the rest of the town is shown.
				if !archived {
					act.Skipped = append(act.Skipped, fmt.Sprintf("%s: %v", b, err))
				}
				break
			}
			for _, m := range msgs {
				if now.Sub(m.Timestamp) <= threadWindow {
					recent = append(recent, m)
				}
			}
		}
	}
	slices.SortFunc(recent, func(a, b *maildir.Message) int { return b.Timestamp.Compare(a.Timestamp) })
	if len(recent) > threadCap {
		recent = recent[:threadCap]
	}
	// Each thread's latest message, every copy of it (one per recipient),
	// and when each agent last wrote in it.
	latest := map[string][]*maildir.Message{}
	answered := map[string]map[string]time.Time{}
	for _, m := range recent {
		if !m.Timestamp.Before(act.Since) {
			act.Recent = append(act.Recent, m)
		}
		key := m.Thread
		key = cmp.Or(key, m.ID)
		switch l := latest[key]; {
		case len(l) > 0 && sameSend(m, l[0]):
			latest[key] = append(l, m)
		case len(l) == 0 || m.Timestamp.After(l[0].Timestamp):
			latest[key] = []*maildir.Message{m}
		}
		if answered[key] == nil {
			answered[key] = map[string]time.Time{}
		}
		if t := answered[key][m.From]; m.Timestamp.After(t) {
			answered[key][m.From] = m.Timestamp
		}
	}
	for key, copies := range latest {
		for _, m := range copies {
			if waitsForReply(m) && !answered[key][m.Box.Name].After(m.Timestamp) {
				act.Waiting = append(act.Waiting, m)
			}
		}
	}
	slices.SortFunc(act.Waiting, func(a, b *maildir.Message) int {
		return cmp.Or(a.Timestamp.Compare(b.Timestamp), strings.Compare(a.Box.Name, b.Box.Name))
	})
	return act, nil
}

// recentIn returns the messages of folder b (or its archive) whose file
// names are stamped within the last day, newest first, at most threadCap
// of them, their bodies left out: through the folder cache, so that a
// render after a send reads one folder, not the town. The caller drops
// what has aged out since the folder was read.
func (s *Server) recentIn(b maildir.Address, archived bool, now time.Time) ([]*maildir.Message, error) {
	v, err := s.cache.getKey(s.Store, folderKey{box: b, archived: archived, use: "activity"}, func() (any, error) {
		entries, _, err := s.Store.Entries(b, archived)
		if err != nil {
			return nil, err
		}
		entries = slices.DeleteFunc(entries, func(e maildir.Entry) bool { return e.Stamp.IsZero() || now.Sub(e.Stamp) > threadWindow })
		slices.SortFunc(entries, func(x, y maildir.Entry) int { return y.Stamp.Compare(x.Stamp) })
		var out []*maildir.Message
		for _, e := range entries[:min(len(entries), threadCap)] {
			m, err := s.Store.Get(b, e.ID)
			if err != nil {
				continue // gone, or not a message: the folder pages say so
			}
			slim := *m
			slim.Body = ""
			out = append(out, &slim)
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]*maildir.Message), nil
}

func (s *Server) activityPage(w http.ResponseWriter, r *http.Request) {
	act, err := s.activity()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	q := r.URL.Query()
	n := func(param string) int { v, _ := strconv.Atoi(q.Get(param)); return v }
	act.Waiting, act.WaitingPage = paginate(act.Waiting, n("waiting"), waitingPer, r.URL, "waiting")
	act.Recent, act.RecentPage = paginate(act.Recent, n("recent"), activityPer, r.URL, "recent")
	s.render(w, r, http.StatusOK, "activity", "Activity", act)
}
