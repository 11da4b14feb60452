package webview

import (
	"fmt"
	"slices"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// A Town is what the overview shows.
type Town struct {
	Now       time.Time
	Mailboxes []Mailbox
	Queues    []Queue
	Channels  []Channel
	Claims    []Claimed             // work claimed from a queue and not yet done, oldest claim first
	Waiting   []Waiting             // agents with urgent mail unread past UrgentAfter, the longest waited on first
	Log       []*maildir.AuditEntry // the audit log's latest entries, newest first
	// Malformed names the queue, channel and group folders and files the
	// town cannot read, and why: each is shown as such, and the rest of
	// the town as usual.
	Malformed []string
}

// Stuck returns the claims held longer than StuckAfter, oldest first.
func (t *Town) Stuck() []Claimed {
	var out []Claimed
	for _, c := range t.Claims {
		if c.Stuck {
			out = append(out, c)
		}
	}
	return out
}

// A Claimed item is a queue item an agent claimed and has not marked
// done (read): its claimant, and how long it has held it.
type Claimed struct {
	Item  *maildir.Message
	Agent string
	Queue string // "queue:name"
	At    time.Time
	Stuck bool // held longer than StuckAfter
}

// Waiting is an agent with urgent mail unread past UrgentAfter: its
// senders wait on it. One line per agent: how many, and the oldest.
type Waiting struct {
	Agent  string
	Count  int
	Oldest *maildir.Message
}

// A Mailbox is one agent's line of the overview.
type Mailbox struct {
	Name                      string
	Urgent, High, Normal, Low int // unread, by priority
	Unread, Total             int
	OldestUnread              time.Time // zero when nothing is unread
	Stale                     bool      // unread mail older than the sweep's cut-off
	UrgentWaiting             bool      // urgent mail unread longer than UrgentAfter
	Claims, Stuck             int       // open claims the agent holds; of those, stuck
	Nudges                    int       // nudges queued for the agent, not yet drained
	Home                      string    // its home host, in a town on several machines
	Live                      Liveness  // its session, and when it was last seen
}

// A Queue is one work queue's line.
type Queue struct {
	Name    string
	Problem string // why it cannot be read; empty when it can
	Depth   int
	Oldest  time.Time // the oldest waiting item's stamp; zero when none is stamped
	Claimed int       // items claimed from it and not done
	Stuck   int       // of those, held longer than StuckAfter
}

// A Channel is one channel's line.
type Channel struct {
	Name    string
	Problem string // why it cannot be read or posted to (a folder without its configuration, or one that cannot be read); empty when it can
	Posts   int
	Latest  *maildir.Message // nil when it has no post
}

// town gathers the overview: every mailbox (its unread mail read and
// counted by priority), every queue (listed, not read) and channel (its
// posts listed, the latest read).
func (s *Server) town() (*Town, error) {
	st := s.Store
	t := &Town{Now: s.now()}
	agents, err := st.Agents()
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		mb, err := s.mailboxLine(t, a)
		if err != nil {
			return nil, err
		}
		t.Mailboxes = append(t.Mailboxes, mb)
	}
	queues, err := st.Queues()
	if err != nil {
		return nil, err
	}
	for _, q := range queues {
		entries, _, err := st.Entries(maildir.Address{Kind: maildir.KindQueue, Name: q}, false)
		if err != nil {
			t.Queues = append(t.Queues, Queue{Name: q, Problem: err.Error()})
			t.Malformed = append(t.Malformed, fmt.Sprintf("queue:%s: %v", q, err))
			continue
		}
		line := Queue{Name: q, Depth: len(entries)}
		for _, c := range t.Claims {
			if c.Queue == "queue:"+q {
				line.Claimed++
				if c.Stuck {
					line.Stuck++
				}
			}
		}
		for _, e := range entries {
			if !e.Stamp.IsZero() && (line.Oldest.IsZero() || e.Stamp.Before(line.Oldest)) {
				line.Oldest = e.Stamp
			}
		}
		t.Queues = append(t.Queues, line)
	}
	slices.SortStableFunc(t.Claims, func(a, b Claimed) int { return a.At.Compare(b.At) })
	slices.SortStableFunc(t.Waiting, func(a, b Waiting) int { return a.Oldest.Timestamp.Compare(b.Oldest.Timestamp) })
	channels, err := st.Channels()
	if err != nil {
		return nil, err
	}
	for _, c := range channels {
		read, err := s.channelRead(c)
		if err == nil {
			// Its posts read, its configuration may not: posts to it are
			// refused until that is fixed, as fsck reports.
			if _, cerr := st.Channel(c); cerr != nil {
				err = fmt.Errorf("channel:%s: %w", c, cerr)
			}
		}
		if err != nil {
			t.Channels = append(t.Channels, Channel{Name: c, Problem: err.Error()})
			t.Malformed = append(t.Malformed, err.Error()) // it names the channel
			continue
		}
		t.Channels = append(t.Channels, Channel{Name: c, Posts: read.posts, Latest: read.latest})
	}
	groups, err := st.Groups()
	if err != nil {
		t.Malformed = append(t.Malformed, fmt.Sprintf("%s: %v", maildir.GroupDir, err))
	}
	for _, g := range groups {
		if _, err := st.Group(g); err != nil {
			t.Malformed = append(t.Malformed, fmt.Sprintf("@%s: %v", g, err))
		}
	}
	if t.Log, err = st.AuditLog(logShown); err != nil {
		return nil, err
	}
	return t, nil
}

// logShown is how many audit entries the overview shows.
const logShown = 10

// mailboxLine is agent a's line of the overview: its unread mail counted
// by priority and age, its session; its open claims and the urgent mail
// waited on go into t's lists.
func (s *Server) mailboxLine(t *Town, a string) (Mailbox, error) {
	read, err := s.mailboxRead(a)
	if err != nil {
		return Mailbox{}, err
	}
	mb := Mailbox{Name: a, Unread: len(read.unread), Total: read.total}
	for _, m := range read.unread {
		if c, ok := s.claimed(a, m, t.Now); ok {
			t.Claims = append(t.Claims, c)
			mb.Claims++
			if c.Stuck {
				mb.Stuck++
			}
		}
		switch m.Priority {
		case maildir.Urgent:
			mb.Urgent++
			if t.Now.Sub(m.Timestamp) > s.urgentAfter() {
				mb.UrgentWaiting = true
				if n := len(t.Waiting); n == 0 || t.Waiting[n-1].Agent != a {
					t.Waiting = append(t.Waiting, Waiting{Agent: a})
				}
				w := &t.Waiting[len(t.Waiting)-1]
				w.Count++
				if w.Oldest == nil || m.Timestamp.Before(w.Oldest.Timestamp) {
					w.Oldest = m
				}
			}
		case maildir.High:
			mb.High++
		case maildir.Low:
			mb.Low++
		default:
			mb.Normal++
		}
		if mb.OldestUnread.IsZero() || m.Timestamp.Before(mb.OldestUnread) {
			mb.OldestUnread = m.Timestamp
		}
	}
	mb.Stale = !mb.OldestUnread.IsZero() && t.Now.Sub(mb.OldestUnread) > s.unreadAfter()
	if s.Nudges != nil {
		mb.Nudges, _ = s.Nudges.Len(a)
	}
	if h, err := s.Store.HomeOf(maildir.Address{Kind: maildir.KindAgent, Name: a}); err == nil {
		mb.Home = h.Host
	}
	mb.Live = s.liveness(a)
	return mb, nil
}

// claimed returns agent a's unread message m as an open claim, if a
// claim brought it.
func (s *Server) claimed(a string, m *maildir.Message, now time.Time) (Claimed, bool) {
	c := m.Claim
	if c == nil {
		return Claimed{}, false
	}
	return Claimed{Item: m, Agent: a, Queue: c.Queue, At: c.At, Stuck: now.Sub(c.At) > s.stuckAfter()}, true
}

// claimsOf returns the open claims on queue q ("queue:name"), oldest
// first: every agent's unread mail with a claim record naming q.
func (s *Server) claimsOf(q string) ([]Claimed, error) {
	agents, err := s.Store.Agents()
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Claimed
	for _, a := range agents {
		read, err := s.mailboxRead(a)
		if err != nil {
			return nil, err
		}
		for _, m := range read.unread {
			if c, ok := s.claimed(a, m, now); ok && c.Queue == q {
				out = append(out, c)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Claimed) int { return a.At.Compare(b.At) })
	return out, nil
}

// heldNudges returns the nudges waiting for agent, oldest first.
func heldNudges(q *nudgeq.Queue, agent string) []*nudgeq.Nudge {
	if q == nil {
		return nil
	}
	ns, _ := q.Peek(agent)
	return slices.Clip(ns)
}
