package webview

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"

	"github.com/mailfs/mailfs/maildir"
)

// back sends the browser to where the form was, or to fallback.
func back(w http.ResponseWriter, r *http.Request, fallback string) {
	to := r.PostFormValue("back")
	if !localPath(to) {
		to = fallback // only a path on this server
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// send delivers a message from the identity the page acts as.
func (s *Server) send(w http.ResponseWriter, r *http.Request) error {
	to := strings.TrimSpace(r.PostFormValue("to"))
	subject := strings.TrimSpace(r.PostFormValue("subject"))
	if to == "" || subject == "" {
		return errors.New("a message needs a recipient and a subject")
	}
	m := &maildir.Message{From: s.As, To: to, Subject: subject, Body: r.PostFormValue("body"),
		Priority: maildir.Priority(r.PostFormValue("priority"))}
	if cc := strings.TrimSpace(r.PostFormValue("cc")); cc != "" {
		for _, c := range strings.Split(cc, ",") {
			m.CC = append(m.CC, strings.TrimSpace(c))
		}
	}
	if _, err := s.Store.Send(m); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

// reply answers a message in the identity's own mailbox.
func (s *Server) reply(w http.ResponseWriter, r *http.Request) error {
	b, err := s.own(r)
	if err != nil {
		return err
	}
	body := r.PostFormValue("body")
	if strings.TrimSpace(body) == "" {
		return errors.New("a reply needs a body")
	}
	if _, err := s.Store.Reply(b, r.PathValue("id"), &maildir.Message{From: s.As, Body: body}); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

func (s *Server) markRead(w http.ResponseWriter, r *http.Request) error {
	b, err := s.own(r)
	if err != nil {
		return err
	}
	if _, err := s.Store.MarkRead(b, r.PathValue("id")); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request) error {
	b, err := s.own(r)
	if err != nil {
		return err
	}
	errs, err := s.Store.Archive(b, []string{r.PathValue("id")})
	if err = errors.Join(append(errs, err)...); err != nil {
		return err
	}
	back(w, r, "/box/"+s.As)
	return nil
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
