package webview

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

//go:embed templates/*.html static/*
var assets embed.FS

// DefaultAddr is where Serve listens when no address is given.
const DefaultAddr = "127.0.0.1:8025"

// Defaults of the overview's marks.
const (
	DefaultUnreadAfter = 24 * time.Hour  // the sweep's cut-off
	DefaultUrgentAfter = 5 * time.Minute // urgent mail unread this long is flagged
	DefaultStuckAfter  = time.Hour       // a claim held this long, not done, is flagged
)

var (
	// ErrNeedsToken is returned by [Listen] for an address other than
	// loopback without a token.
	ErrNeedsToken = errors.New("webview: serving beyond loopback needs a token")
	// ErrBadIdentity is returned by [New] for an identity that is not an
	// agent id.
	ErrBadIdentity = errors.New("webview: the identity to act as is not an agent id")
)

// A Server serves one root's town. Make it with [New].
type Server struct {
	Store  *maildir.Store
	Nudges *nudgeq.Queue // nil: held nudges are not shown

	// As is the identity the page acts as; "" means read only.
	As string
	// Token, if set, is needed by every request (a cookie set by visiting
	// with it as the password, http://mailfs:TOKEN@host/, or /?token=…; or
	// an Authorization header, Bearer or Basic), as well as by every
	// change. When empty, New makes one that only changes need, and the
	// pages carry it in their forms.
	Token string
	// Loopback answers only requests whose Host is a loopback name: set
	// it when serving on loopback without a token, against DNS rebinding.
	Loopback bool

	Now         func() time.Time
	UnreadAfter time.Duration // 0: DefaultUnreadAfter
	// ChangeEvery is how often the live feed looks for changes that are
	// not new mail (marks, archives, claims, drains); 0: DefaultChangeEvery.
	ChangeEvery time.Duration
	UrgentAfter time.Duration // 0: DefaultUrgentAfter
	StuckAfter  time.Duration // a claim held longer is stuck; 0: DefaultStuckAfter

	// Limits cut what a browser would not send: a request (headers and
	// body) that takes longer than ReadTimeout to arrive, a response that
	// takes longer than WriteTimeout to leave (the live feed sets its own
	// deadline per event), a kept-alive connection idle for IdleTimeout,
	// and live feeds past MaxStreams at once (answered 503). Zero means
	// the Default… value.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxStreams                             int

	writeToken string
	streams    atomic.Int64 // live feeds open
	pages      map[string]*template.Template
	hub        *hub
	cache      *folderCache
	texts      *folderCache  // every message of each folder, for search
	hooks      *hook.Handler // reads when each agent's hooks last ran
}

// New returns a server for store. as, if not empty, is the identity the
// page may act as; token, if not empty, is needed by every request.
func New(store *maildir.Store, nudges *nudgeq.Queue, as, token string) (*Server, error) {
	s := &Server{Store: store, Nudges: nudges, Token: token}
	if as != "" {
		a, err := maildir.ParseAgent(as)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadIdentity, err)
		}
		s.As = a
	}
	// The token forms carry is not the access token: a page's source,
	// saved or shared, must not let anyone in (the access token lives in
	// an HttpOnly cookie for that reason).
	s.writeToken = NewToken()
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = pages
	s.hub = newHub()
	s.cache = newFolderCache()
	s.texts = newBudgetCache(searchBudget)
	s.hooks = &hook.Handler{Collector: hook.Collector{Store: store, Nudges: nudges}}
	return s, nil
}

// NewToken returns a fresh random token.
func NewToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) unreadAfter() time.Duration {
	if s.UnreadAfter > 0 {
		return s.UnreadAfter
	}
	return DefaultUnreadAfter
}

func (s *Server) urgentAfter() time.Duration {
	if s.UrgentAfter > 0 {
		return s.UrgentAfter
	}
	return DefaultUrgentAfter
}

func (s *Server) stuckAfter() time.Duration {
	if s.StuckAfter > 0 {
		return s.StuckAfter
	}
	return DefaultStuckAfter
}

// Listen opens addr for serving: refused when it is not loopback and no
// token is required. It reports whether it is loopback.
func Listen(addr string, token string) (net.Listener, bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, err
	}
	loop := isLoopbackHost(host)
	if !loop && token == "" {
		return nil, false, fmt.Errorf("%w: %s is not a loopback address; give --token SECRET (or --token auto for a generated one)", ErrNeedsToken, addr)
	}
	ln, err := net.Listen("tcp", addr)
	return ln, loop, err
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Serve serves on ln until ctx ends, feeding the live updates from a
// watcher of the whole town. Beside it, it reads what a search keeps of
// every folder, so that the first search is answered as fast as the next.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.Watch(ctx); err != nil {
		return err
	}
	read := or(s.ReadTimeout, DefaultReadTimeout)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: min(10*time.Second, read),
		ReadTimeout:  read,
		WriteTimeout: or(s.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:  or(s.IdleTimeout, DefaultIdleTimeout),
		BaseContext:  func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shut, done := context.WithTimeout(context.Background(), 2*time.Second)
		defer done()
		srv.Shutdown(shut)
	}()
	var warm sync.WaitGroup
	warm.Go(func() { s.warmSearch(ctx) })
	defer warm.Wait()
	defer cancel() // the warm-up stops at its next folder
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// The limits a server applies when its fields leave them zero.
const (
	DefaultReadTimeout  = 30 * time.Second // a whole request, body included
	DefaultWriteTimeout = 30 * time.Second // a whole response, but the live feed's
	DefaultIdleTimeout  = 60 * time.Second // a kept-alive connection with nothing asked
	// DefaultMaxStreams is the live feeds open at once. The tabs of one
	// browser share one feed (static/live.js), so it counts browsers —
	// people, and the odd browser without Web Locks, whose every tab has
	// its own — not tabs.
	DefaultMaxStreams = 32
)

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Watch starts the live feed without serving, for a caller that serves
// Handler itself (tests do).
func (s *Server) Watch(ctx context.Context) error {
	every := s.ChangeEvery
	if every <= 0 {
		every = DefaultChangeEvery
	}
	return s.hub.watch(ctx, s.Store, every)
}

// Handler returns the server's routes, behind its checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=86400")
		http.ServeFileFS(w, r, static, "favicon.ico")
	})
	mux.HandleFunc("GET /{$}", s.printed(s.overview))
	mux.HandleFunc("GET /box/{box}", s.printed(s.mailbox))
	mux.HandleFunc("GET /msg/{box}/{id}", s.printed(s.message))
	mux.HandleFunc("GET /thread/{id}", s.printed(s.thread))
	mux.HandleFunc("GET /search", s.printed(s.search))
	mux.HandleFunc("GET /activity", s.printed(s.activityPage))
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("POST /send", s.change(s.send))
	mux.HandleFunc("POST /reply/{box}/{id}", s.change(s.reply))
	mux.HandleFunc("POST /mark-read/{box}/{id}", s.change(s.markRead))
	mux.HandleFunc("POST /archive/{box}/{id}", s.change(s.archive))
	mux.HandleFunc("GET /act/{action}/{box}/{id}", s.printed(s.confirmAct))
	mux.HandleFunc("POST /act/{action}/{box}/{id}", s.change(s.act))
	return s.guard(mux)
}

// printed takes the town's folder print before a page reads anything, for
// the page to carry: the live feed's events carry the print they stand
// for, and a page that already shows that state does not fetch itself
// again (a send's mail event and its folder change are one refetch).
func (s *Server) printed(page http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page(w, r.WithContext(context.WithValue(r.Context(), printKey{}, townPrint(s.Store))))
	}
}

// guard applies the rules every request meets: the Host check on
// loopback, the token when one is required, and the security headers.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if s.Loopback && s.Token == "" {
			host, _, err := net.SplitHostPort(r.Host)
			if err != nil {
				host = r.Host
			}
			if !isLoopbackHost(host) {
				http.Error(w, "mailfs serves loopback names only (localhost, 127.0.0.1, [::1])", http.StatusMisdirectedRequest)
				return
			}
		}
		if s.Token != "" {
			// What the page needs before it has the cookie: its script and
			// style, its icon, and the door that turns the token into the
			// cookie. None holds any mail.
			if r.Method == http.MethodGet && (strings.HasPrefix(r.URL.Path, "/static/") || r.URL.Path == "/favicon.ico") {
				next.ServeHTTP(w, r)
				return
			}
			// The address mailfs serve prints carries the token as its
			// password (http://mailfs:TOKEN@host/): a browser sends it once,
			// answering the 401 below, and keeps it out of its history. A
			// page opened so gets the cookie and is sent to its own address,
			// which holds no token.
			if _, t, ok := r.BasicAuth(); ok && r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Mode") == "navigate" && !s.authorizedCookie(r) {
				if !same(t, s.Token) {
					w.Header().Set("WWW-Authenticate", `Basic realm="mailfs", charset="UTF-8"`)
					s.fail(w, r, http.StatusUnauthorized, errors.New("wrong token"))
					return
				}
				s.setCookie(w, r)
				http.Redirect(w, r, r.URL.RequestURI(), http.StatusSeeOther)
				return
			}
			if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
				if !same(t, s.Token) {
					s.fail(w, r, http.StatusUnauthorized, errors.New("wrong token"))
					return
				}
				s.setCookie(w, r)
				tokenDoor(w, r)
				return
			}
			if !s.authorized(r) {
				w.Header().Set("WWW-Authenticate", `Basic realm="mailfs", charset="UTF-8"`)
				s.fail(w, r, http.StatusUnauthorized, errors.New("this page needs the token mailfs serve printed: open the address it printed, or give the token as the password"))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// tokenDoor answers an address with ?token= (its token taken, the
// cookie set): a page that stands in at once for the same address without
// the token. Not a redirect, whose first address the tab's navigation
// entry keeps as the one it was asked for (its reload goes there, and the
// session history holds it): the page is replaced by a client refresh, a
// new entry, so no entry holds the token. It is not kept (a cached page
// would keep its address in the browser's cache). What no server can take
// back is the browser's record of the address it was sent to: Chromium's
// History keeps it, as every address whose page it shows (a 4xx page too;
// only a 204, which shows none, is not recorded), and files the page's
// icon under it (Favicons) and in its UKM store, which is why mailfs serve
// prints the token as the address's password instead. A client that is not a browser
// navigating (curl -L, a script) is redirected (303) as before.
func tokenDoor(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	q.Del("token")
	// Always a path on this server: "//host" would be another's.
	to := &url.URL{Path: "/" + strings.TrimLeft(r.URL.Path, "/"), RawQuery: q.Encode()}
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	if r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>mailfs</title><meta http-equiv=\"refresh\" content=\"0;url=%s\">\n",
		template.HTMLEscapeString(to.String()))
}

// setCookie gives the browser the token as an HttpOnly, same-site cookie:
// Secure when the page came over HTTPS (here, or through a proxy that says
// so), so that the browser then never sends it in clear text.
func (s *Server) setCookie(w http.ResponseWriter, r *http.Request) {
	secure := r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
	http.SetCookie(w, &http.Cookie{Name: "mailfs_token", Value: s.Token, Path: "/", HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode})
}

func (s *Server) authorizedCookie(r *http.Request) bool {
	c, err := r.Cookie("mailfs_token")
	return err == nil && same(c.Value, s.Token)
}

func (s *Server) authorized(r *http.Request) bool {
	if c, err := r.Cookie("mailfs_token"); err == nil && same(c.Value, s.Token) {
		return true
	}
	if _, t, ok := r.BasicAuth(); ok && same(t, s.Token) {
		return true
	}
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && same(auth, s.Token)
}

func same(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// change wraps a state-changing handler: an identity to act as, the
// token, and a request from the page's own origin.
func (s *Server) change(do func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.As == "" {
			s.fail(w, r, http.StatusForbidden, errors.New("read only: start mailfs serve --as NAME to act as NAME"))
			return
		}
		if !sameOrigin(r) {
			s.fail(w, r, http.StatusForbidden, errors.New("refused: the request did not come from this page's origin"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 2<<20)
		tok := r.Header.Get("X-Mailfs-Token")
		if tok == "" {
			tok = r.PostFormValue("token")
		}
		if !same(tok, s.writeToken) {
			s.fail(w, r, http.StatusForbidden, errors.New("refused: a change needs the page's token"))
			return
		}
		if err := do(w, r); err != nil {
			status := http.StatusBadRequest
			var sa *staleAct
			if errors.As(err, &sa) {
				status = http.StatusConflict // the page was stale
			}
			s.fail(w, r, status, err)
		}
	}
}

// sameOrigin reports whether r came from a page of this server: its
// Origin names this host, else the browser says it is same-origin; a
// client that sends neither (curl) is no browser, and the token decides.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		// The same scheme too: a page served over http is not the origin
		// https://host (nor the other way), as browsers count origins.
		scheme := "http"
		if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
			scheme = "https"
		}
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host && u.Scheme == scheme
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}
