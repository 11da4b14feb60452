package webview

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// The overseer's actions on claimed work: release (back to its queue),
// reassign (to another agent) and nudge (the claimant). Each is a page
// that says what will happen and asks (GET /act/…), then a change (POST
// /act/…) that goes through the store's own verb — ReleaseSeen,
// ReassignSeen, the nudge queue's Enqueue, never a second path to disk —
// and is recorded in the town's audit log (maildir.AuditDir) with who,
// when and from where, whether it was done or refused.
//
// The question page carries what it showed: the claimant (the URL's
// mailbox), the claim's time, and that the item was not done. The change
// goes through only while the item is still so; a page gone stale (the
// claimant marked the item done, another tab released or reassigned it)
// is refused, saying what changed and who changed it.
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

// A staleAct is an action refused because the item is not as the page
// showed it; its text says what became of the item.
type staleAct struct{ what string }

func (e *staleAct) Error() string { return e.what }

// claimAt loads the claimed item {id} of the agent's mailbox {box}: an
// error for anything that is not an open claim there, saying what became
// of an item that was one.
func (s *Server) claimAt(r *http.Request) (Claimed, error) {
	b, err := box(r)
	if err != nil {
		return Claimed{}, err
	}
	if b.Kind != maildir.KindAgent {
		return Claimed{}, fmt.Errorf("%s is %s: only a claim in an agent's mailbox is acted on", b, b.Kind)
	}
	id := r.PathValue("id")
	m, err := s.Store.Get(b, id)
	if errors.Is(err, maildir.ErrNotFound) {
		return Claimed{}, s.whatBecame(b.Name, id, r.FormValue("subject"))
	}
	if err != nil {
		return Claimed{}, err
	}
	c, ok := s.claimed(b.Name, m, s.now())
	switch {
	case !ok:
		return Claimed{}, fmt.Errorf("%w: “%s” (%s) in %s was not claimed from a queue", maildir.ErrNotClaimed, clean(m.Subject), m.ID, b)
	case m.Read:
		return c, &staleAct{fmt.Sprintf("%s marked “%s” done (read): finished work is not released or reassigned from this page", b.Name, clean(m.Subject))}
	}
	return c, nil
}

// seenAt is the claim's time the question page showed; zero when the
// request carries none.
func seenAt(r *http.Request) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, r.PostFormValue("claimed"))
	return t
}

// whatBecame says what became of item id, claimed by agent when the page
// was shown and no longer in its mailbox: who holds it now, or the queue
// it waits in, and who moved it, as the audit log says.
func (s *Server) whatBecame(agent, id, subject string) error {
	name := id
	if subject != "" {
		name = "“" + clean(subject) + "”"
	}
	by := ""
	if log, err := s.Store.AuditLog(200); err == nil {
		for _, e := range log {
			if e.Item == id && e.Done() && e.Action != "nudge" {
				by = fmt.Sprintf(" by %s at %s", e.Actor, e.At.UTC().Format("15:04:05Z"))
				break
			}
		}
	}
	boxes, err := s.allBoxes()
	if err != nil {
		return err
	}
	for _, b := range boxes {
		if b.Kind == maildir.KindChannel || b == (maildir.Address{Kind: maildir.KindAgent, Name: agent}) {
			continue
		}
		m, err := s.Store.Get(b, id)
		if err != nil {
			continue
		}
		if b.Kind == maildir.KindQueue {
			return &staleAct{fmt.Sprintf("%s was already released%s: it waits in %s again, not with %s", name, by, b, agent)}
		}
		if m.Claim != nil && m.Claim.Agent == b.Name {
			return &staleAct{fmt.Sprintf("%s was already reassigned to %s%s: %s holds it since %s", name, b.Name, by, b.Name, m.Claim.At.UTC().Format("15:04:05Z"))}
		}
		return &staleAct{fmt.Sprintf("%s is no longer %s's: it is in %s's mailbox", name, agent, b.Name)}
	}
	return &staleAct{fmt.Sprintf("%s is no longer in %s's mailbox, nor in any other mailbox or queue: it was deleted", name, agent)}
}

// stale turns the store's refusal of a changed item into what the page
// says.
func stale(err error) error {
	var se *maildir.StaleError
	if !errors.As(err, &se) {
		return err
	}
	if se.Done {
		return &staleAct{fmt.Sprintf("%s marked “%s” done (read) since the page was shown: finished work is not released or reassigned from this page", se.Agent, clean(se.Subject))}
	}
	return &staleAct{fmt.Sprintf("“%s” was released and claimed again by %s at %s since the page was shown (it showed the claim of %s)", clean(se.Subject), se.Agent,
		se.At.UTC().Format("15:04:05Z"), se.Seen.UTC().Format("15:04:05Z"))}
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
		status := http.StatusBadRequest
		var sa *staleAct
		if errors.As(err, &sa) {
			status = http.StatusConflict
		}
		s.fail(w, r, status, err)
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

// act does a confirmed action, records it — done or refused — and goes
// back with the entry's id, which the page it lands on shows as the
// outcome; a refusal is shown as an error page that says why.
func (s *Server) act(w http.ResponseWriter, r *http.Request) error {
	action := r.PathValue("action")
	if _, ok := actions[action]; !ok {
		return fmt.Errorf("no action %q: release, reassign or nudge", action)
	}
	// What the page said it showed, until the item itself is found: one
	// line, and no longer than a subject is worth.
	subject := strings.Join(strings.Fields(r.PostFormValue("subject")), " ")
	if len(subject) > 200 {
		subject = strings.ToValidUTF8(subject[:200], "") + "…"
	}
	e := maildir.AuditEntry{Action: action, Actor: s.As, Addr: remoteHost(r), Agent: r.PathValue("box"), Item: r.PathValue("id"),
		Subject: subject}
	err := s.do(r, &e)
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

// do checks the item against what the page showed and acts on it, filling
// in e as it learns.
func (s *Server) do(r *http.Request, e *maildir.AuditEntry) error {
	c, err := s.claimAt(r)
	if err != nil {
		return err
	}
	e.Agent, e.Item, e.Queue, e.Subject = c.Agent, c.Item.ID, c.Queue, clean(c.Item.Subject)
	seen := maildir.Seen{At: seenAt(r)}
	if want := r.PostFormValue("claimant"); want != "" && want != c.Agent {
		return &staleAct{fmt.Sprintf("the page showed %s's claim, not %s's", want, c.Agent)}
	}
	if !seen.At.IsZero() && !seen.At.Equal(c.At) {
		return stale(&maildir.StaleError{Item: c.Item.ID, Subject: c.Item.Subject, Agent: c.Agent, At: c.At, Seen: seen.At})
	}
	from := maildir.Address{Kind: maildir.KindAgent, Name: c.Agent}
	switch e.Action {
	case "release":
		_, err = s.Store.ReleaseSeen(from, c.Item.ID, seen)
	case "reassign":
		var to string
		if to, err = s.reassignTo(r.PostFormValue("to"), c.Agent); err == nil {
			e.To = to
			_, err = s.Store.ReassignSeen(from, c.Item.ID, maildir.Address{Kind: maildir.KindAgent, Name: to}, seen)
		}
	case "nudge":
		e.Note = strings.TrimSpace(r.PostFormValue("note"))
		if e.Note == "" {
			e.Note = s.nudgeText(c)
		}
		if s.Nudges == nil {
			return errors.New("this server has no nudge queue")
		}
		// Tied to the item: dropped unseen once the claimant marks it
		// done (read) or it leaves the mailbox.
		_, err = s.Nudges.Enqueue(c.Agent, nudgeq.Nudge{Sender: s.As, Message: e.Note, Priority: nudgeq.Urgent, MailID: c.Item.ID}, 0)
	}
	if errors.Is(err, maildir.ErrNotFound) {
		return s.whatBecame(c.Agent, c.Item.ID, c.Item.Subject)
	}
	return stale(err)
}

// reassignTo checks a reassign's new claimant: an agent the town has,
// other than the claimant. A name no mailbox has (a slip: "humna") is
// refused with the agents there are, rather than creating a mailbox
// nobody reads.
func (s *Server) reassignTo(v, claimant string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", errors.New("choose the agent to reassign it to")
	}
	to, err := maildir.ParseMailbox(v)
	if err != nil {
		return "", err
	}
	if to.Kind != maildir.KindAgent {
		return "", fmt.Errorf("%s is %s: a claim goes to an agent", to, to.Kind)
	}
	agents, err := s.Store.Agents()
	if err != nil {
		return "", err
	}
	if !slices.Contains(agents, to.Name) {
		others := slices.DeleteFunc(agents, func(a string) bool { return a == claimant })
		return "", fmt.Errorf("there is no agent %s in this town: reassign to one of %s", to.Name, strings.Join(others, ", "))
	}
	return to.Name, nil
}

// remoteHost is the address a request came from, without its port.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
