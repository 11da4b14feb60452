package webview

import (
	"net/http"
	"slices"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Activity is what the activity page shows: what was sent lately, and the
// conversations whose last word waits on an agent's answer.
type Activity struct {
	Since    time.Time          // the feed's start: an hour ago
	Recent   []*maildir.Message // sent since, newest first
	Waiting  []*maildir.Message // each thread's latest message, to an agent who has not answered, oldest first
	Dropped  int                // recent messages past the page's cap, not shown
	LookBack time.Duration      // how far back threads are looked for
}

const (
	activityWindow = time.Hour      // the feed
	threadWindow   = 24 * time.Hour // the threads waiting for a reply
	activityCap    = 200            // messages shown in the feed at most
	threadCap      = 2000           // messages read to find waiting threads at most
)

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
	var recent []maildir.Entry
	for _, b := range boxes {
		for _, archived := range []bool{false, true} {
			entries, _, err := s.Store.Entries(b, archived)
			if err != nil {
				return nil, err
			}
			for _, e := range entries {
				if !e.Stamp.IsZero() && now.Sub(e.Stamp) <= threadWindow {
					recent = append(recent, e)
				}
			}
		}
	}
	slices.SortFunc(recent, func(a, b maildir.Entry) int { return b.Stamp.Compare(a.Stamp) })
	if len(recent) > threadCap {
		recent = recent[:threadCap]
	}
	latest := map[string]*maildir.Message{} // by thread
	answered := map[string]map[string]time.Time{}
	for _, e := range recent {
		m, err := s.Store.Get(e.Box, e.ID)
		if err != nil {
			continue // gone, or not a message: the folder pages say so
		}
		if !m.Timestamp.Before(act.Since) {
			if len(act.Recent) < activityCap {
				act.Recent = append(act.Recent, m)
			} else {
				act.Dropped++
			}
		}
		key := m.Thread
		if key == "" {
			key = m.ID
		}
		if l := latest[key]; l == nil || m.Timestamp.After(l.Timestamp) {
			latest[key] = m
		}
		if answered[key] == nil {
			answered[key] = map[string]time.Time{}
		}
		if t := answered[key][m.From]; m.Timestamp.After(t) {
			answered[key][m.From] = m.Timestamp
		}
	}
	for key, m := range latest {
		to := m.Box
		if to.Kind != maildir.KindAgent || m.Type == "notification" || to.Name == m.From {
			continue
		}
		if !answered[key][to.Name].After(m.Timestamp) {
			act.Waiting = append(act.Waiting, m)
		}
	}
	slices.SortFunc(act.Waiting, func(a, b *maildir.Message) int { return a.Timestamp.Compare(b.Timestamp) })
	return act, nil
}

func (s *Server) activityPage(w http.ResponseWriter, r *http.Request) {
	act, err := s.activity()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, http.StatusOK, "activity", "Activity", act)
}
