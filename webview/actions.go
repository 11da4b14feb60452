package webview

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"

	"github.com/mailfs/mailfs/maildir"
)

// back sends the browser to where the form was, or to fallback, with the
// query parameters set (names and values in turn): what the page it lands
// on confirms.
func back(w http.ResponseWriter, r *http.Request, fallback string, set ...string) {
	to := r.PostFormValue("back")
	if !localPath(to) {
		to = fallback // only a path on this server
	}
	if len(set) > 0 {
		u, _ := url.Parse(to)
		q := u.Query()
		for i := 0; i+1 < len(set); i += 2 {
			q.Set(set[i], set[i+1])
		}
		u.RawQuery = q.Encode()
		to = u.String()
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// send delivers a message from the identity the page acts as. An address
// that names no agent the town has (a typo would create a mailbox nobody
// reads) is asked about first, with the draft kept; the page the person
// comes back to says what was sent.
func (s *Server) send(w http.ResponseWriter, r *http.Request) error {
	tos, ccs := addresses(r.PostFormValue("to")), addresses(r.PostFormValue("cc"))
	subject := strings.TrimSpace(r.PostFormValue("subject"))
	if len(tos) == 0 || subject == "" {
		return errors.New("a message needs a recipient and a subject")
	}
	m := &maildir.Message{From: s.As, To: tos[0], CC: append(tos[1:], ccs...), Subject: subject, Body: r.PostFormValue("body"),
		Priority: maildir.Priority(r.PostFormValue("priority"))}
	agents, err := s.Store.Agents()
	if err != nil {
		return err
	}
	var unknown []newAgent
	var names []string
	for _, a := range append([]string{m.To}, m.CC...) {
		addr, err := s.Store.Resolve(a)
		if err != nil {
			return err
		}
		if addr.Kind == maildir.KindAgent && !slices.Contains(agents, addr.Name) && !slices.Contains(names, addr.Name) {
			names = append(names, addr.Name)
			unknown = append(unknown, newAgent{Name: addr.Name, Similar: maildir.Similar(addr.Name, agents)})
		}
	}
	if len(unknown) > 0 && r.PostFormValue("new") != strings.Join(names, ",") {
		d := sendCheck{To: strings.Join(tos, ", "), CC: strings.Join(ccs, ", "), Subject: subject, Body: m.Body, Priority: string(m.Priority),
			Unknown: unknown, New: strings.Join(names, ","), Back: r.PostFormValue("back")}
		s.render(w, r, http.StatusOK, "send", "Send to a new mailbox?", d)
		return nil
	}
	sent, err := s.Store.Send(m)
	if err != nil {
		return err
	}
	back(w, r, "/box/"+url.PathEscape(s.As), "sent", sent[0].ID, "in", sent[0].Box.String())
	return nil
}

// addresses splits a form's comma-separated addresses.
func addresses(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// A newAgent is an address of a send that names no agent of the town.
type newAgent struct {
	Name    string
	Similar []string // the agents it may be a slip for
}

// sendCheck is the draft the send page asks about.
type sendCheck struct {
	To, CC, Subject, Body, Priority string
	Unknown                         []newAgent
	New                             string // the names the person agrees to create, as the form carries them
	Back                            string
}

// reply answers a message in the identity's own mailbox, still there.
func (s *Server) reply(w http.ResponseWriter, r *http.Request) error {
	b, m, err := s.ownMessage(r)
	if err != nil {
		return err
	}
	body := r.PostFormValue("body")
	if strings.TrimSpace(body) == "" {
		return errors.New("a reply needs a body")
	}
	if _, err := s.Store.Reply(b, m.ID, &maildir.Message{From: s.As, Body: body}); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

// markRead marks a message of the identity's own mailbox read: one read
// since the page was shown is left as it is, nothing undone.
func (s *Server) markRead(w http.ResponseWriter, r *http.Request) error {
	b, m, err := s.ownMessage(r)
	if err != nil {
		var sa *staleAct
		if !errors.As(err, &sa) || m == nil || !m.Read {
			return err
		}
	} else if _, err := s.Store.MarkRead(b, m.ID); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

// archive archives a message of the identity's own mailbox, as the page
// showed it: one marked unread (or read) since is refused, for the page
// shown again, since archiving mail marked unread would hide work.
func (s *Server) archive(w http.ResponseWriter, r *http.Request) error {
	b, m, err := s.ownMessage(r)
	if err != nil {
		return err
	}
	errs, err := s.Store.Archive(b, []string{m.ID})
	if err = errors.Join(append(errs, err)...); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

// ownMessage returns message {id} of the identity's own mailbox {box}
// (or its archive), checked against what the page showed: a message
// gone since is refused saying where it went (released, reassigned,
// deleted), and, when the form carries the state the page showed ("seen":
// read or unread), one in the other state is refused saying so — with
// the message, for a caller to whom that state is the outcome.
func (s *Server) ownMessage(r *http.Request) (maildir.Address, *maildir.Message, error) {
	b, err := s.own(r)
	if err != nil {
		return b, nil, err
	}
	id := r.PathValue("id")
	m, err := s.Store.Get(b, id)
	if errors.Is(err, maildir.ErrNotFound) {
		return b, nil, s.whatBecame(b.Name, id, r.PostFormValue("subject"))
	}
	if err != nil {
		return b, nil, err
	}
	state := map[bool]string{true: "read", false: "unread"}
	if seen := r.PostFormValue("seen"); seen != "" && seen != state[m.Read] {
		return b, m, &staleAct{fmt.Sprintf("“%s” was marked %s since the page was shown (it showed it %s): nothing was done; look at it again",
			clean(m.Subject), state[m.Read], seen)}
	}
	return b, m, nil
}

// own returns the mailbox of the URL when it is the identity's own: the
// page changes no one else's mail.
func (s *Server) own(r *http.Request) (maildir.Address, error) {
	b, err := box(r)
	if err != nil {
		return b, err
	}
	if b != (maildir.Address{Kind: maildir.KindAgent, Name: s.As}) {
		return b, fmt.Errorf("refused: this page acts as %s, and changes only %s's own mail, not %s's", s.As, s.As, b)
	}
	return b, nil
}

// localPath reports whether to is a path on this server and nothing a
// browser could read as another host: it starts with one "/", holds no
// backslash, space or control character (browsers drop tabs and
// newlines, so "/\t/host" is "//host" to them), and parses with no
// scheme or host.
func localPath(to string) bool {
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") {
		return false
	}
	if strings.ContainsFunc(to, func(r rune) bool { return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return false
	}
	u, err := url.Parse(to)
	return err == nil && u.Scheme == "" && u.Host == "" && !strings.HasPrefix(u.Path, "//")
}
