package webview

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/watch"
)

// heartbeat is how often an idle live feed says it is alive, so that a
// page notices a feed that dropped.
const heartbeat = 15 * time.Second

// DefaultChangeEvery is how often the server looks for changes that are
// not new mail (see [Server.ChangeEvery]).
const DefaultChangeEvery = time.Second

// A hub hands the watcher's events to every open page.
type hub struct {
	mu      sync.Mutex
	subs    map[chan string]bool
	started bool

	// The town's folders as the pages last heard of them (folderPrint):
	// a "mail" event takes it first, so that the change the new file made
	// to its folder is not sent again as a "change" — one refetch per
	// page per send, not two.
	printMu sync.Mutex
	print   uint64
	store   *maildir.Store
}

func newHub() *hub { return &hub{subs: map[chan string]bool{}} }

// watch starts one watcher over every mailbox, queue and channel, and
// the look for other changes every changeEvery, once.
func (h *hub) watch(ctx context.Context, st *maildir.Store, changeEvery time.Duration) error {
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
	h.store = st
	h.print = townPrint(st)
	go func() {
		for ev := range events {
			// The print is taken before the event goes out: a page fetches
			// after it, so it sees all the print covers; anything later
			// moves the print again and is sent as a change.
			h.printMu.Lock()
			h.print = townPrint(h.store)
			print := h.print
			h.printMu.Unlock()
			data, _ := json.Marshal(map[string]string{"box": ev.Box.String(), "id": ev.ID, "print": fmt.Sprintf("%x", print)})
			h.publish("mail", string(data))
		}
	}()
	go h.changes(ctx, changeEvery)
	return nil
}

// changes publishes a "change" event when the town's folders changed in a
// way the watcher does not report — a mark read, an archive, a claim, a
// delete, a drained nudge: each renames or removes a file, which moves its
// folder's stamp. It stats folders only, never a file (so an in-place
// rewrite of a file is seen at the next event or reload).
func (h *hub) changes(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		h.printMu.Lock()
		now := townPrint(h.store)
		changed := now != h.print
		h.print = now
		h.printMu.Unlock()
		if changed {
			h.publish("change", fmt.Sprintf(`{"print":"%x"}`, now))
		}
	}
}

// townPrint is the print of every folder a page shows: the store's
// (mailboxes and their archives, queues, channels) and the nudge queues.
// It moves at every change to any of them, and once more when a change
// made less than a clock tick before it can be trusted to show (see
// [maildir.Store.Print]).
func townPrint(st *maildir.Store) uint64 { return st.Print(nudgeq.Dir) }

func (h *hub) publish(event, data string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := "event: " + event + "\ndata: " + data + "\n\n"
	for c := range h.subs {
		select {
		case c <- msg:
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
// message ({"box", "id", "print"}), a "change" event when folders changed
// otherwise (marks, archives, claims, drains; {"print"}), a comment every
// heartbeat. "print" is the folder print the event stands for: a page
// that already shows it does not fetch itself again.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	max := or(s.MaxStreams, DefaultMaxStreams)
	if s.streams.Add(1) > int64(max) {
		s.streams.Add(-1)
		w.Header().Set("Retry-After", "5")
		http.Error(w, fmt.Sprintf("too many live feeds open (%d): close a tab, or reload later", max), http.StatusServiceUnavailable)
		return
	}
	defer s.streams.Add(-1)
	// The server's write timeout is for pages; a feed lives as long as
	// its tab, so each write gets a deadline of its own.
	rc := http.NewResponseController(w)
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
		rc.SetWriteDeadline(time.Now().Add(2 * heartbeat))
		select {
		case <-r.Context().Done():
			return
		case msg := <-c:
			fmt.Fprint(w, msg)
		case <-tick.C:
			fmt.Fprint(w, ": alive\n\n")
		}
		fl.Flush()
	}
}
