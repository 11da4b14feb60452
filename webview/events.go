package webview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// heartbeat is how often an idle live feed says it is alive, so that a
// page notices a feed that dropped.
const heartbeat = 15 * time.Second

// A hub hands the watcher's events to every open page.
type hub struct {
	mu      sync.Mutex
	subs    map[chan string]bool
	started bool
}

func newHub() *hub { return &hub{subs: map[chan string]bool{}} }

// watch starts one watcher over every mailbox, queue and channel, once.
func (h *hub) watch(ctx context.Context, st *maildir.Store) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return nil
	}
	var boxes []maildir.Address
	qs, err := st.Queues()
	if err != nil {
		return err
	}
	for _, q := range qs {
		boxes = append(boxes, maildir.Address{Kind: maildir.KindQueue, Name: q})
	}
	cs, err := st.Channels()
	if err != nil {
		return err
	}
	for _, c := range cs {
		boxes = append(boxes, maildir.Address{Kind: maildir.KindChannel, Name: c})
	}
	w := &watch.Watcher{Store: st, All: true, Boxes: boxes}
	events, err := w.Watch(ctx)
	if err != nil {
		return err
	}
	h.started = true
	go func() {
		for ev := range events {
			data, _ := json.Marshal(map[string]string{"box": ev.Box.String(), "id": ev.ID})
			h.publish(string(data))
		}
	}()
	return nil
}

func (h *hub) publish(data string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.subs {
		select {
		case c <- data:
		default: // a slow page: it refetches on the next event anyway
		}
	}
}

func (h *hub) subscribe() (chan string, func()) {
	c := make(chan string, 16)
	h.mu.Lock()
	h.subs[c] = true
	h.mu.Unlock()
	return c, func() {
		h.mu.Lock()
		delete(h.subs, c)
		h.mu.Unlock()
	}
}

// events is the live feed: server-sent events, one "mail" event per new
// message ({"box", "id"}), a comment every heartbeat.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c, done := s.hub.subscribe()
	defer done()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	fmt.Fprint(w, "retry: 1000\n: live\n\n")
	fl.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case data := <-c:
			fmt.Fprintf(w, "event: mail\ndata: %s\n\n", data)
		case <-tick.C:
			fmt.Fprint(w, ": alive\n\n")
		}
		fl.Flush()
	}
}
