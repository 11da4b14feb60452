package webview

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// The overseer's actions on claimed work: release (back to its queue),
// reassign (to another agent) and nudge (the claimant). Each is a page
// that says what will happen and asks (GET /act/…), then a change (POST
// /act/…) that goes through the store's own verb — Release, Reassign, the
// nudge queue's Enqueue, never a second path to disk — and is recorded in
// the town's audit log (maildir.AuditDir) with who, when and from where,
// whether it was done or not.
var actions = map[string]string{
	"release":  "Release",
	"reassign": "Reassign",
	"nudge":    "Nudge",
}

// actData is what the confirmation page shows.
type actData struct {
	Action, Verb string
	Claim        Claimed
	Agents       []string // the agents a reassign may pick (all but the claimant)
	Note         string   // a nudge's text, as it will be sent
	Back         string
}

// claimAt loads the claimed item {id} of the agent's mailbox {box}: an
// error for anything that is not an open claim there.
func (s *Server) claimAt(r *http.Request) (Claimed, error) {
	b, err := box(r)
	if err != nil {
		return Claimed{}, err
	}
	if b.Kind != maildir.KindAgent {
		return Claimed{}, fmt.Errorf("%s is %s: only a claim in an agent's mailbox is acted on", b, b.Kind)
	}
	m, err := s.Store.Get(b, r.PathValue("id"))
	if err != nil {
		return Claimed{}, err
	}
	c, ok := s.claimed(b.Name, m, s.now())
	if !ok {
		return Claimed{}, fmt.Errorf("%w: %s in %s was not claimed from a queue", maildir.ErrNotClaimed, m.ID, b)
	}
	return c, nil
}

// nudgeText is the nudge a claimant gets unless the person writes another.
func (s *Server) nudgeText(c Claimed) string {
	return fmt.Sprintf("%s asks about %s (%s), claimed from %s %s ago: still on it? Mark it read when done, or release it.",
		s.As, clean(c.Item.Subject), c.Item.ID, c.Queue, page{Now: s.now()}.Age(c.At))
}

// confirmAct shows what an action will do and asks.
func (s *Server) confirmAct(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	verb, ok := actions[action]
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("no action %q: release, reassign or nudge", action))
		return
	}
	if s.As == "" {
		s.fail(w, r, http.StatusForbidden, errors.New("read only: start mailfs serve --as NAME to act as NAME"))
		return
	}
	c, err := s.claimAt(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	d := actData{Action: action, Verb: verb, Claim: c, Note: s.nudgeText(c), Back: r.URL.Query().Get("back")}
	if !localPath(d.Back) {
		d.Back = "/"
	}
	if action == "reassign" {
		agents, err := s.Store.Agents()
		if err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
		d.Agents = slices.DeleteFunc(agents, func(a string) bool { return a == c.Agent })
	}
	s.render(w, r, http.StatusOK, "act", verb+" "+clean(c.Item.Subject), d)
}

// act does a confirmed action, records it, and goes back with the entry's
// id, which the page it lands on shows as the outcome.
func (s *Server) act(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	if _, ok := actions[action]; !ok {
		return fmt.Errorf("no action %q: release, reassign or nudge", action)
	}
	c, err := s.claimAt(r)
	if err != nil {
		return err
	}
	e := maildir.AuditEntry{Action: action, Actor: s.As, Addr: remoteHost(r), Agent: c.Agent, Item: c.Item.ID, Queue: c.Queue}
	from := maildir.Address{Kind: maildir.KindAgent, Name: c.Agent}
	switch action {
	case "release":
		_, err = s.Store.Release(from, c.Item.ID)
	case "reassign":
		var to maildir.Address
		e.To = strings.TrimSpace(r.PostFormValue("to"))
		if to, err = maildir.ParseMailbox(e.To); err == nil && to.Kind != maildir.KindAgent {
			err = fmt.Errorf("%s is %s: a claim goes to an agent", to, to.Kind)
		}
		if err == nil {
			e.To = to.Name
			_, err = s.Store.Reassign(from, c.Item.ID, to)
		}
	case "nudge":
		e.Note = strings.TrimSpace(r.PostFormValue("note"))
		if e.Note == "" {
			e.Note = s.nudgeText(c)
		}
		if s.Nudges == nil {
			err = errors.New("this server has no nudge queue")
		} else {
			// Tied to the item: dropped unseen once the claimant marks it
			// done (read) or it leaves the mailbox.
			_, err = s.Nudges.Enqueue(c.Agent, nudgeq.Nudge{Sender: s.As, Message: e.Note, Priority: nudgeq.Urgent, MailID: c.Item.ID}, 0)
		}
	}
	if err != nil {
		e.Error = err.Error()
	}
	id, rerr := s.Store.Record(e)
	switch {
	case err != nil:
		return err
	case rerr != nil:
		return fmt.Errorf("%s done, but its audit entry was not written: %w", action, rerr)
	}
	back(w, r, "/", "done", id)
	return nil
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
