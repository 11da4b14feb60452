package webview

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// The pages, each a template that fills base.html's "content".
var pageNames = []string{"overview", "mailbox", "message", "thread", "search", "activity", "act", "send", "error"}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"boxURL": func(box string) string { return "/box/" + url.PathEscape(box) },
		"msgURL": func(m *maildir.Message) string {
			return "/msg/" + url.PathEscape(m.Box.String()) + "/" + url.PathEscape(m.ID)
		},
		// actURL is where a form acts on a message: every part escaped, so
		// an id with ?, #, % or a space names exactly that message.
		"actURL": func(action string, m *maildir.Message) string {
			return "/" + action + "/" + url.PathEscape(m.Box.String()) + "/" + url.PathEscape(m.ID)
		},
		// claimURL is the page that asks before acting on a claim, and
		// comes back to back.
		"claimURL": func(action string, m *maildir.Message, back string) string {
			return "/act/" + action + "/" + url.PathEscape(m.Box.String()) + "/" + url.PathEscape(m.ID) + "?back=" + url.QueryEscape(back)
		},
		"threadURL": func(id string) string { return "/thread/" + url.PathEscape(id) },
		"clean":     clean,
		// agentName lets a long agent id break after each "." (a rig's
		// prefix), not in the middle of a word.
		"agentName": func(name string) template.HTML {
			return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(name), ".", ".<wbr>"))
		},
		"markdown": renderMarkdown,
		"sizeOf": func(n int64) string {
			if n >= 1<<20 {
				return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
			}
			return fmt.Sprintf("%d KiB", n>>10)
		},
		"unreadIn": func(ms []*maildir.Message) int {
			n := 0
			for _, m := range ms {
				if !m.Read {
					n++
				}
			}
			return n
		},
		"claimsPage": func(p page, cs []Claimed, id ...string) claimsView {
			return claimsView{Page: p, Claims: cs, ID: strings.Join(id, "")}
		},
		"claimActs":  func(p page, c Claimed) claimActs { return claimActs{Page: p, Claim: c} },
		"past":       func(action string) string { return pastTense[action] },
		"list":       func(s ...string) []string { return s },
		"livenessOf": func(p page, l Liveness) livenessView { return livenessView{Page: p, L: l} },
		"pagerOf":    func(p pager, id, noun string) pagerView { return pagerView{P: p, ID: id, Noun: noun} },
		"when":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
		"dateTime":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("base.html").Funcs(funcs).ParseFS(assets, "templates/base.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		pages[name] = t
	}
	return pages, nil
}

// clean makes text safe to read: a bidirectional control (U+202E and its
// kin) would reorder what follows it on the screen, so that a subject reads
// as something it is not; it is shown as U+FFFD instead. Escaping for HTML
// is html/template's.
func clean(s string) string {
	if !strings.ContainsFunc(s, isBidi) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isBidi(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func isBidi(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// claimsView is what the "claims" template gets.
type claimsView struct {
	Page   page
	Claims []Claimed
	ID     string // the table's id, if not empty
}

// claimActs is what the "claimActs" template gets.
type claimActs struct {
	Page  page
	Claim Claimed
}

// livenessView is what the "liveness" template gets.
type livenessView struct {
	Page page
	L    Liveness
}

// pagerView is what the "pager" template gets.
type pagerView struct {
	P        pager
	ID, Noun string
}

var pastTense = map[string]string{"release": "released", "reassign": "reassigned", "nudge": "nudged"}

// page is what every template gets.
type page struct {
	Title string
	As    string // the identity the page acts as; "" read only
	Token string // the token a form carries; only when As is set
	Now   time.Time
	Print string              // the town's folders when the page was read (folderPrint), for the live feed
	Path  string              // the page's own path and query, where an action comes back to
	Done  *maildir.AuditEntry // the action this page was sent back from, to confirm it
	Sent  *maildir.Message    // the message the page's send delivered, to confirm it
	Data  any
}

// printKey is the request context's key of the folder print taken before
// a page is read (see [Server.printed]).
type printKey struct{}

// age says how long ago t was, briefly.
func (p page) Age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := p.Now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// Ago is Age as a <time> element whose title is the absolute time (UTC
// here; the page's script puts it in the reader's zone), so that every
// age on a page gives its time on hover.
func (p page) Ago(t time.Time) template.HTML {
	if t.IsZero() {
		return ""
	}
	at := t.UTC()
	return template.HTML(`<time datetime="` + at.Format(time.RFC3339Nano) + `" title="` + at.Format("2006-01-02 15:04:05Z") + `">` + p.Age(t) + `</time>`)
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	p := page{Title: title, As: s.As, Now: s.now(), Data: data, Path: r.URL.Path}
	if q := r.URL.Query(); q.Get("done") != "" || q.Get("sent") != "" {
		if q.Get("done") != "" {
			p.Done = s.doneEntry(q.Get("done"))
		}
		if b, err := maildir.ParseMailbox(q.Get("in")); err == nil && q.Get("sent") != "" {
			p.Sent, _ = s.Store.Get(b, q.Get("sent"))
		}
		q.Del("done")
		q.Del("sent")
		q.Del("in")
		r.URL.RawQuery = q.Encode()
	}
	if r.URL.RawQuery != "" {
		p.Path += "?" + r.URL.RawQuery
	}
	if v, ok := r.Context().Value(printKey{}).(uint64); ok {
		p.Print = fmt.Sprintf("%x", v)
	}
	if s.As != "" {
		p.Token = s.writeToken
	}
	var b bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&b, "base.html", p); err != nil {
		http.Error(w, "rendering the page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// doneEntry returns the audit entry id, or nil.
func (s *Server) doneEntry(id string) *maildir.AuditEntry {
	e, _ := s.Store.AuditEntryOf(id)
	return e
}

// fail shows an error page; its text is escaped like everything else.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	switch {
	case errors.Is(err, maildir.ErrNotFound), errors.Is(err, maildir.ErrNoQueue), errors.Is(err, maildir.ErrNoChannel):
		status = http.StatusNotFound
	}
	s.render(w, r, status, "error", "Error", err.Error())
}

func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	t, err := s.town()
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	s.render(w, r, http.StatusOK, "overview", "Town", t)
}

// box parses the {box} of a URL: an agent, queue:NAME or channel:NAME.
func box(r *http.Request) (maildir.Address, error) {
	return maildir.ParseMailbox(r.PathValue("box"))
}

// exists reports whether the town has mailbox, queue or channel b.
func (s *Server) exists(b maildir.Address) (bool, error) {
	var names []string
	var err error
	switch b.Kind {
	case maildir.KindAgent:
		names, err = s.Store.Agents()
	case maildir.KindQueue:
		names, err = s.Store.Queues()
	case maildir.KindChannel:
		names, err = s.Store.Channels()
	}
	return slices.Contains(names, b.Name), err
}

type mailboxData struct {
	Box      maildir.Address
	All      bool
	Archived bool
	Messages []*maildir.Message
	Nudges   []*nudgeq.Nudge
	Claims   []Claimed          // on a queue's page: its items claimed and not done
	TooLarge []maildir.Oversize // message files too large to be read, which no list shows
	Mine     bool               // the page acts as this mailbox's agent
	// ClaimedTab: a queue's page shows its open claims rather than what
	// waits in it.
	ClaimedTab bool
	Live       *Liveness // an agent's session
	// SentTab: an agent's page shows what the agent sent, wherever it
	// went (Sent, a page of it, newest first).
	SentTab  bool
	Sent     []*maildir.Message
	SentPage pager
	Page     pager // of Messages
}

// boxPer is how many messages a mailbox, queue or channel page shows.
const boxPer = 100

// boxPage returns page n of box b's messages — its unread mail, or with
// all every message, in its archive when archived — and its pager: a
// channel's newest first, the rest oldest first. Only the page's messages
// are read: which are on it is known from the folder's listing (the file
// names' stamps), so a channel of thousands of posts costs a page of
// them.
func (s *Server) boxPage(b maildir.Address, all, archived bool, n int, base *url.URL) ([]*maildir.Message, pager, error) {
	if !all {
		unread, err := s.Store.List(b, maildir.ListOptions{})
		if err != nil {
			return nil, pager{}, err
		}
		page, p := paginate(unread, n, boxPer, base, "page")
		return page, p, nil
	}
	entries, _, err := s.Store.Entries(b, archived)
	if err != nil {
		return nil, pager{}, err
	}
	slices.SortFunc(entries, func(x, y maildir.Entry) int { return cmp.Or(x.Stamp.Compare(y.Stamp), strings.Compare(x.ID, y.ID)) })
	if b.Kind == maildir.KindChannel {
		slices.Reverse(entries)
	}
	page, p := paginate(entries, n, boxPer, base, "page")
	var msgs []*maildir.Message
	for _, e := range page {
		if m, err := s.Store.Get(b, e.ID); err == nil {
			msgs = append(msgs, m) // else gone meanwhile, or too large (named below the list)
		}
	}
	return msgs, p, nil
}

// Queue and Channel say what kind of folder the page shows.
func (d mailboxData) Queue() bool   { return d.Box.Kind == maildir.KindQueue }
func (d mailboxData) Channel() bool { return d.Box.Kind == maildir.KindChannel }

func (s *Server) mailbox(w http.ResponseWriter, r *http.Request) {
	b, err := box(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if b.Kind == maildir.KindGroup {
		s.fail(w, r, http.StatusBadRequest, fmt.Errorf("%s is a group: it holds no messages", b))
		return
	}
	if ok, err := s.exists(b); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	} else if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("there is no %s in this town", b))
		return
	}
	q := r.URL.Query()
	d := mailboxData{Box: b, All: q.Get("all") != "", Archived: q.Get("archived") != "", Mine: s.As != "" && b == maildir.Address{Kind: maildir.KindAgent, Name: s.As},
		ClaimedTab: b.Kind == maildir.KindQueue && q.Get("claimed") != "",
		SentTab:    b.Kind == maildir.KindAgent && q.Get("sent") != ""}
	n, _ := strconv.Atoi(q.Get("page"))
	if d.Messages, d.Page, err = s.boxPage(b, d.All || d.Archived || b.Kind != maildir.KindAgent, d.Archived, n, r.URL); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	if d.TooLarge, err = s.Store.Oversize(b, d.Archived); err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	switch b.Kind {
	case maildir.KindAgent:
		if d.SentTab {
			m, err := maildir.Filter{From: b.Name}.Compile()
			if err == nil {
				d.Sent, _, err = s.searchTown(r.Context(), m, nil, false)
			}
			if err != nil {
				s.fail(w, r, http.StatusInternalServerError, err)
				return
			}
			slices.Reverse(d.Sent)
			d.Sent, d.SentPage = paginate(d.Sent, n, sentPer, r.URL, "page")
		}
		d.Nudges = heldNudges(s.Nudges, b.Name)
		l := s.liveness(b.Name)
		d.Live = &l
	case maildir.KindQueue:
		if d.Claims, err = s.claimsOf(b.String()); err != nil {
			s.fail(w, r, http.StatusInternalServerError, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "mailbox", b.String(), d)
}

type messageData struct {
	M      *maildir.Message
	Fields [][2]string
	Mine   bool
	Claim  *Claimed // an open claim: the item, unread, in its claimant's mailbox
}

func (s *Server) message(w http.ResponseWriter, r *http.Request) {
	b, err := box(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	m, err := s.Store.Get(b, r.PathValue("id"))
	if err != nil {
		status := http.StatusBadRequest
		if errors.Is(err, maildir.ErrNotFound) || errors.Is(err, maildir.ErrNoQueue) || errors.Is(err, maildir.ErrNoChannel) {
			status = http.StatusNotFound
		}
		s.fail(w, r, status, err)
		return
	}
	d := messageData{M: m, Fields: m.ProtocolFields(), Mine: s.As != "" && b == maildir.Address{Kind: maildir.KindAgent, Name: s.As}}
	if b.Kind == maildir.KindAgent && !m.Read && !m.Archived {
		if c, ok := s.claimed(b.Name, m, s.now()); ok {
			d.Claim = &c
		}
	}
	s.render(w, r, http.StatusOK, "message", clean(m.Subject), d)
}

func (s *Server) thread(w http.ResponseWriter, r *http.Request) {
	msgs, err := s.Store.Thread(r.PathValue("id"))
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	title := "Thread"
	if len(msgs) > 0 {
		title = clean(msgs[0].Subject)
	}
	s.render(w, r, http.StatusOK, "thread", title, msgs)
}

type searchData struct {
	Q                  string
	Archived, Searched bool
	Error              string      // why the query cannot be run, said beside the box
	Results            []searchHit // this page of them, best first
	Page               pager
	Skipped            []string // folders that could not be searched, and why
}

// A searchHit is one message found, with the part of its body around what
// was asked for.
type searchHit struct {
	M       *maildir.Message
	Snippet snippet
}

// sentPer is how many messages an agent's sent tab shows a page.
const sentPer = 50

// searchPer is how many results a page shows.
const searchPer = 20

// allBoxes returns every mailbox, queue and channel of the town.
func (s *Server) allBoxes() ([]maildir.Address, error) {
	var boxes []maildir.Address
	for _, kind := range []struct {
		k    maildir.Kind
		list func() ([]string, error)
	}{{maildir.KindAgent, s.Store.Agents}, {maildir.KindQueue, s.Store.Queues}, {maildir.KindChannel, s.Store.Channels}} {
		names, err := kind.list()
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			boxes = append(boxes, maildir.Address{Kind: kind.k, Name: n})
		}
	}
	return boxes, nil
}

// search runs a person's query (see [query]) with the command line's
// engine over every mailbox, queue and channel, ranks what it finds, and
// shows a page of it with a snippet each. A query that cannot be run is
// said on the page, beside the box. The older form's from, type and
// priority parameters are read as filters too.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	d := searchData{Q: v.Get("q"), Archived: v.Get("archived") != ""}
	for _, key := range []string{"from", "type", "priority"} {
		if x := strings.TrimSpace(v.Get(key)); x != "" {
			d.Q = strings.TrimSpace(d.Q + " " + key + ":" + strconv.Quote(x))
		}
	}
	if strings.TrimSpace(d.Q) == "" {
		s.render(w, r, http.StatusOK, "search", "Search", d)
		return
	}
	q, err := parseQuery(d.Q, s.now())
	var m *maildir.Matcher
	if err == nil {
		m, err = q.filter().Compile()
	}
	if err != nil {
		d.Error = err.Error()
		s.render(w, r, http.StatusOK, "search", "Search", d)
		return
	}
	found, skipped, err := s.searchTown(r.Context(), m, q.Terms, d.Archived)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err)
		return
	}
	type scored struct {
		hit   searchHit
		score float64
	}
	var hits []scored
	for _, msg := range found {
		if q.match(msg) {
			hits = append(hits, scored{searchHit{M: msg, Snippet: q.snippetOf(msg)}, q.score(msg)})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return b.hit.M.Timestamp.Compare(a.hit.M.Timestamp)
	})
	all := make([]searchHit, len(hits))
	for i, h := range hits {
		all[i] = h.hit
	}
	n, _ := strconv.Atoi(v.Get("page"))
	d.Results, d.Page = paginate(all, n, searchPer, r.URL, "page")
	d.Skipped, d.Searched = skipped, true
	s.render(w, r, http.StatusOK, "search", "Search", d)
}
