package webview_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/leakcheck"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/webview"
)

const hostile = `<script>window.pwned=1</script></textarea><img src=x onerror=alert(1)> javascript:alert(1)`

// town is a scratch root with some mail, and a server over it.
type town struct {
	t      *testing.T
	dir    string
	store  *maildir.Store
	nudges *nudgeq.Queue
	srv    *webview.Server
	ts     *httptest.Server
}

func newTown(t *testing.T, as, token string) *town {
	t.Helper()
	leakcheck.Check(t)
	dir := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	q, err := nudgeq.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	srv, err := webview.New(s, q, as, token)
	if err != nil {
		t.Fatal(err)
	}
	tw := &town{t: t, dir: dir, store: s, nudges: q, srv: srv}
	tw.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(tw.ts.Close)
	return tw
}

func (tw *town) send(m *maildir.Message) *maildir.Message {
	tw.t.Helper()
	if m.Body == "" {
		m.Body = "body"
	}
	sent, err := tw.store.Send(m)
	if err != nil {
		tw.t.Fatal(err)
	}
	return sent[0]
}

// get fetches path and returns the status and body. hdr are header
// names and values ("Host" sets the request's host).
func (tw *town) get(path string, hdr ...string) (int, string) {
	tw.t.Helper()
	req, _ := http.NewRequest("GET", tw.ts.URL+path, nil)
	return tw.do(req, hdr)
}

// post submits a form as the page does (Origin set to the server's).
func (tw *town) post(path string, form url.Values, hdr ...string) (int, string) {
	tw.t.Helper()
	req, _ := http.NewRequest("POST", tw.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", tw.ts.URL)
	return tw.do(req, hdr)
}

// postTo submits a form as post does and returns the status and where it
// redirects.
func (tw *town) postTo(path string, form url.Values) (int, string) {
	tw.t.Helper()
	req, _ := http.NewRequest("POST", tw.ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", tw.ts.URL)
	resp, err := noRedirect.Do(req)
	if err != nil {
		tw.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// do sends req, without following redirects.
func (tw *town) do(req *http.Request, hdr []string) (int, string) {
	tw.t.Helper()
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		tw.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

var tokenRE = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

// pageToken is the token the page's forms carry.
func (tw *town) pageToken() string {
	tw.t.Helper()
	_, body := tw.get("/")
	m := tokenRE.FindStringSubmatch(body)
	if m == nil {
		tw.t.Fatal("the page carries no token")
	}
	return m[1]
}

func cell(body, agent, col string) string {
	re := regexp.MustCompile(`(?s)<tr id="box-` + regexp.QuoteMeta(agent) + `".*?data-col="` + col + `">(\d+)<`)
	m := re.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// The overview counts each mailbox's unread mail by priority, flags urgent
// mail left unread and mail past the sweep's cut-off, and shows queues,
// channels and held nudges.
func TestOverview(t *testing.T) {
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "a", Priority: maildir.Urgent})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "b", Priority: maildir.High})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "c"})
	read := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "d"})
	if _, err := tw.store.MarkRead(maildir.Address{Name: "toast"}, read.ID); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "toast", To: "mayor", Subject: "e", Priority: maildir.Low})
	if err := tw.store.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "job"})
	if err := tw.store.CreateChannel("news", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "refinery", To: "channel:news", Subject: "merged gt-1"})
	if _, err := tw.nudges.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "status?"}, 0); err != nil {
		t.Fatal(err)
	}

	code, body := tw.get("/")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	for col, want := range map[string]string{"urgent": "1", "high": "1", "normal": "1", "low": "0", "unread": "3", "nudges": "1"} {
		if got := cell(body, "toast", col); got != want {
			t.Errorf("toast %s = %q, want %s", col, got, want)
		}
	}
	if got := cell(body, "mayor", "low"); got != "1" {
		t.Errorf("mayor low = %q", got)
	}
	if !regexp.MustCompile(`queue:work</a></td><td class="n" data-col="depth">1<`).MatchString(body) {
		t.Error("queue depth missing")
	}
	if !strings.Contains(body, "merged gt-1") {
		t.Error("channel's latest post missing")
	}
	if strings.Contains(body, "urgent waiting") || strings.Contains(body, "past the sweep") {
		t.Error("fresh mail is flagged")
	}

	// Ten minutes on, the urgent mail is flagged; two days on, all of it.
	tw.srv.Now = func() time.Time { return time.Now().Add(10 * time.Minute) }
	_, body = tw.get("/")
	if !strings.Contains(body, `<tr id="box-toast" class="urgent-waiting `) || strings.Contains(body, "past the sweep") {
		t.Error("urgent mail unread for ten minutes is not flagged (alone)")
	}
	tw.srv.Now = func() time.Time { return time.Now().Add(48 * time.Hour) }
	_, body = tw.get("/")
	if !strings.Contains(body, "past the sweep's cut-off") {
		t.Error("mail unread past the cut-off is not flagged")
	}
}

// Every page renders: a mailbox (unread, all, archive), a queue, a
// channel, a message with its protocol fields as a table, a thread across
// mailboxes and archives, a search with the command line's filter.
func TestPages(t *testing.T) {
	tw := newTown(t, "", "")
	first := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "WORK gt-7", Body: "Branch: polecat/toast\nIssue: gt-7\n\nPlease fix it."})
	reply, err := tw.store.Reply(maildir.Address{Name: "toast"}, first.ID, &maildir.Message{From: "toast", Body: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.store.Archive(maildir.Address{Name: "mayor"}, []string{reply[0].ID}); err != nil {
		t.Fatal(err)
	}
	checks := []struct{ path, want string }{
		{"/box/toast", "WORK gt-7"},
		{"/box/toast?all=1", "WORK gt-7"},
		{"/box/mayor?archived=1", "Re: WORK gt-7"},
		{"/msg/toast/" + first.ID, `<tr><th>Branch</th><td>polecat/toast</td></tr>`},
		{"/msg/toast/" + first.ID, "Please fix it."},
		{"/thread/" + first.ID, "Re: WORK gt-7"},
		{"/search?q=gt-7&archived=1", "2 found,"},
		{"/search?q=gt-7", "1 found,"},
		{"/search?from=toast&archived=1", "1 found,"},
		{"/search", "Search"},
	}
	for _, c := range checks {
		code, body := tw.get(c.path)
		if code != 200 || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d, want %q in\n%s", c.path, code, c.want, body)
		}
	}
	if code, body := tw.get("/box/@crew"); code != 400 || !strings.Contains(body, "is a group") {
		t.Errorf("a group's page: %d", code)
	}
	if code, _ := tw.get("/msg/toast/2020-01-01T00-00-00Z-nobody"); code != 404 {
		t.Errorf("an unknown message: %d", code)
	}
}

// Message text is text everywhere it appears: a subject or body of
// <script>, </textarea> or javascript: never becomes markup.
func TestHostileTextStaysText(t *testing.T) {
	tw := newTown(t, "human", "")
	if err := tw.store.CreateChannel("news", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	m := tw.send(&maildir.Message{From: "mayor", To: "human", Subject: hostile, Body: hostile + "\nKey: " + hostile})
	tw.send(&maildir.Message{From: "mayor", To: "channel:news", Subject: hostile})
	if _, err := tw.nudges.Enqueue("human", nudgeq.Nudge{Sender: "mayor", Message: hostile}, 0); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/", "/box/human", "/box/channel:news", "/msg/human/" + m.ID, "/thread/" + m.ID, "/search?q=script", "/search?q=" + url.QueryEscape(hostile), "/activity"} {
		code, body := tw.get(path)
		if code != 200 {
			t.Errorf("GET %s: %d", path, code)
		}
		for _, bad := range []string{"<script>window", "</textarea><img", "<img src=x", `href="javascript:`} {
			if strings.Contains(body, bad) {
				t.Errorf("GET %s: %q is markup", path, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;window.pwned=1&lt;/script&gt;") {
			t.Errorf("GET %s: the hostile text is not shown escaped", path)
		}
	}
}

// No id or name in a URL leads outside the root.
func TestURLsStayInTheRoot(t *testing.T) {
	tw := newTown(t, "", "")
	os.WriteFile(filepath.Join(filepath.Dir(tw.dir), "secret.json"), []byte(`{"from":"x","subject":"SECRET"}`), 0o600)
	for _, p := range []string{"/box/..%2F..", "/box/%2Fetc", "/msg/toast/..%2F..%2Fsecret", "/msg/..%2F..%2F..%2Ftmp/secret", "/thread/..%2F..%2Fsecret", "/box/toast%00"} {
		code, body := tw.get(p)
		if code == 200 || strings.Contains(body, "SECRET") {
			t.Errorf("GET %s: %d", p, code)
		}
	}
}

// Changes need an identity, the page's token and the page's origin; they
// land as files; the page changes only its identity's own mail.
func TestChangesNeedTokenOriginAndIdentity(t *testing.T) {
	ro := newTown(t, "", "")
	if code, _ := ro.post("/send", url.Values{"to": {"toast"}, "subject": {"x"}}); code != 403 {
		t.Fatalf("a read-only server took a send: %d", code)
	}
	if n := countFiles(t, ro.dir); n != 0 {
		t.Fatalf("%d files after a refused send", n)
	}
	if strings.Contains(mustBody(ro.get("/")), `name="token"`) {
		t.Error("a read-only page carries a token")
	}

	tw := newTown(t, "human", "")
	tok := tw.pageToken()
	form := url.Values{"to": {"toast"}, "subject": {"from the page"}, "body": {"hello"}, "token": {tok}, "new": {"toast"}}
	noTok := url.Values{"to": {"toast"}, "subject": {"x"}}
	wrong := url.Values{"to": {"toast"}, "subject": {"x"}, "token": {"0000"}}
	for name, c := range map[string]struct {
		form url.Values
		hdr  []string
	}{
		"no token":         {noTok, nil},
		"wrong token":      {wrong, nil},
		"another origin":   {form, []string{"Origin", "http://evil.example"}},
		"another scheme":   {form, []string{"Origin", "https://" + tw.ts.Listener.Addr().String()}},
		"cross-site fetch": {form, []string{"Origin", "", "Sec-Fetch-Site", "cross-site"}},
	} {
		if code, _ := tw.post("/send", c.form, c.hdr...); code != 403 {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if n := countFiles(t, tw.dir); n != 0 {
		t.Fatalf("%d files after refused sends", n)
	}
	code, _ := tw.post("/send", form)
	if code != 303 {
		t.Fatalf("send: %d", code)
	}
	msgs, err := tw.store.List(maildir.Address{Name: "toast"}, maildir.ListOptions{})
	if err != nil || len(msgs) != 1 || msgs[0].From != "human" || msgs[0].Subject != "from the page" {
		t.Fatalf("the send did not land as a file from human: %v %v", msgs, err)
	}
	// A script (no Origin, no Sec-Fetch-Site) with the token in a header.
	if code, _ := tw.post("/send", url.Values{"to": {"toast"}, "subject": {"by curl"}}, "Origin", "", "X-Mailfs-Token", tok); code != 303 {
		t.Errorf("a header token from a non-browser: %d", code)
	}

	// Mark read, reply and archive: the identity's own mail only.
	theirs := msgs[0]
	if code, body := tw.post("/mark-read/toast/"+theirs.ID, url.Values{"token": {tok}}); code != 400 || !strings.Contains(body, "changes only human") {
		t.Errorf("marking toast's mail: %d", code)
	}
	mine := tw.send(&maildir.Message{From: "mayor", To: "human", Subject: "for you"})
	if code, _ := tw.post("/mark-read/human/"+mine.ID, url.Values{"token": {tok}, "back": {"//evil.example/"}}); code != 303 {
		t.Fatalf("mark-read: %d", code)
	}
	if m, _ := tw.store.Get(maildir.Address{Name: "human"}, mine.ID); !m.Read {
		t.Error("not marked read")
	}
	if code, _ := tw.post("/reply/human/"+mine.ID, url.Values{"token": {tok}, "body": {"thanks"}}); code != 303 {
		t.Fatalf("reply: %d", code)
	}
	if got, _ := tw.store.List(maildir.Address{Name: "mayor"}, maildir.ListOptions{}); len(got) != 1 || got[0].From != "human" || got[0].ReplyTo != mine.ID {
		t.Errorf("the reply: %v", got)
	}
	if code, _ := tw.post("/archive/human/"+mine.ID, url.Values{"token": {tok}}); code != 303 {
		t.Fatalf("archive: %d", code)
	}
	if m, _ := tw.store.Get(maildir.Address{Name: "human"}, mine.ID); !m.Archived {
		t.Error("not archived")
	}
}

func mustBody(_ int, body string) string { return body }

func countFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(filepath.Join(dir, "state"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// A token, when set, is needed by every request: once through ?token=,
// which sets a cookie and drops it from the address, or as a bearer.
func TestTokenGuardsEveryRequest(t *testing.T) {
	tw := newTown(t, "human", "s3cret")
	if code, _ := tw.get("/"); code != 401 {
		t.Fatalf("no token: %d", code)
	}
	if code, _ := tw.get("/events"); code != 401 {
		t.Fatalf("the live feed without a token: %d", code)
	}
	if code, _ := tw.get("/?token=nope"); code != 401 {
		t.Fatalf("a wrong token: %d", code)
	}
	// The door stands in for the address without the token, always on
	// this server ("//host" would be another's), and is not kept: for a
	// browser's navigation a page that refreshes to it, for a script a
	// redirect.
	var resp *http.Response
	for path, want := range map[string]string{"/": "/", "//evil.example/x": "/evil.example/x", "/box/toast?all=1": "/box/toast?all=1"} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		for _, navigate := range []bool{true, false} {
			req, _ := http.NewRequest("GET", tw.ts.URL+path+sep+"token=s3cret", nil)
			if navigate {
				req.Header.Set("Sec-Fetch-Mode", "navigate")
			}
			var err error
			resp, err = noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := resp.Header.Get("Location")
			if navigate {
				refresh := regexp.MustCompile(`http-equiv="refresh" content="0;url=([^"]*)"`).FindSubmatch(body)
				if resp.StatusCode != 200 || refresh == nil {
					t.Fatalf("the token visit to %s: %d %s", path, resp.StatusCode, body)
				}
				got = html.UnescapeString(string(refresh[1]))
			} else if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("a script's token visit to %s: %d", path, resp.StatusCode)
			}
			if got != want || resp.Header.Get("Cache-Control") != "no-store" || strings.Contains(string(body), "s3cret") {
				t.Fatalf("the token visit to %s (navigate %v): to %q, %q, %s", path, navigate, got, resp.Header.Get("Cache-Control"), body)
			}
		}
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "mailfs_token" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookie)
	}
	if code, _ := tw.get("/", "Cookie", "mailfs_token=s3cret"); code != 200 {
		t.Errorf("with the cookie: %d", code)
	}
	if code, _ := tw.get("/", "Authorization", "Bearer s3cret"); code != 200 {
		t.Errorf("with a bearer: %d", code)
	}
	// The token as a password: a browser's navigation gets the cookie and
	// the page's own address; a script (curl) gets the page; a wrong one
	// is asked again.
	basic := func(pass string, hdr ...string) *http.Response {
		req, _ := http.NewRequest("GET", tw.ts.URL+"/box/toast?all=1", nil)
		req.SetBasicAuth("mailfs", pass)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := basic("s3cret", "Sec-Fetch-Mode", "navigate"); r.StatusCode != 303 || r.Header.Get("Location") != "/box/toast?all=1" || len(r.Cookies()) != 1 || r.Cookies()[0].Value != "s3cret" {
		t.Errorf("a browser with the password: %d to %q, cookies %v", r.StatusCode, r.Header.Get("Location"), r.Cookies())
	}
	if r := basic("s3cret"); r.StatusCode != 404 { // no such mailbox yet: past the guard
		t.Errorf("a script with the password: %d", r.StatusCode)
	}
	for _, hdr := range [][]string{nil, {"Sec-Fetch-Mode", "navigate"}} {
		if r := basic("nope", hdr...); r.StatusCode != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("a wrong password (%v): %d, %q", hdr, r.StatusCode, r.Header.Get("WWW-Authenticate"))
		}
	}
}

// On loopback without a token only loopback host names are answered, so a
// name rebound to 127.0.0.1 by a hostile page cannot read the mail.
func TestLoopbackAnswersLoopbackNamesOnly(t *testing.T) {
	tw := newTown(t, "", "")
	tw.srv.Loopback = true
	if code, _ := tw.get("/", "Host", "evil.example:8025"); code != http.StatusMisdirectedRequest {
		t.Errorf("a foreign Host: %d", code)
	}
	for _, h := range []string{"127.0.0.1:8025", "localhost:8025", "[::1]:8025"} {
		if code, _ := tw.get("/", "Host", h); code != 200 {
			t.Errorf("Host %s: %d", h, code)
		}
	}
	resp, err := http.Get(tw.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
}

// Listening beyond loopback needs a token.
func TestListenBeyondLoopbackNeedsAToken(t *testing.T) {
	if _, _, err := webview.Listen("0.0.0.0:0", ""); !errors.Is(err, webview.ErrNeedsToken) {
		t.Fatalf("0.0.0.0 without a token: %v", err)
	}
	ln, loop, err := webview.Listen("127.0.0.1:0", "")
	if err != nil || !loop {
		t.Fatalf("loopback: %v %v", loop, err)
	}
	ln.Close()
	ln, loop, err = webview.Listen("0.0.0.0:0", "tok")
	if err != nil || loop {
		t.Fatalf("0.0.0.0 with a token: %v %v", loop, err)
	}
	ln.Close()
	if _, err := webview.New(nil, nil, "../x", ""); !errors.Is(err, webview.ErrBadIdentity) {
		t.Fatalf("a bad identity: %v", err)
	}
}

// feed starts the server's live feed and opens it, as a page does; it
// closes when ctx ends.
func (tw *town) feed(ctx context.Context) *http.Response {
	tw.t.Helper()
	if err := tw.srv.Watch(ctx); err != nil {
		tw.t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", tw.ts.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tw.t.Fatal(err)
	}
	tw.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// The live feed carries an event for each message that lands, and one
// when the folders change otherwise (a mark read).
func TestLiveFeed(t *testing.T) {
	tw := newTown(t, "", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tw.srv.ChangeEvery = 20 * time.Millisecond
	resp := tw.feed(ctx)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || lines.Text() != "retry: 1000" {
		t.Fatalf("first line %q", lines.Text())
	}
	m := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "live"})
	next := func() (event, data string) {
		for lines.Scan() {
			switch line := lines.Text(); {
			case strings.HasPrefix(line, "event: "):
				event = line
			case strings.HasPrefix(line, "data: "):
				return event, line
			}
		}
		t.Fatalf("the feed ended: %v", lines.Err())
		return
	}
	// The send brings a mail event; the folder poll may publish the
	// change it made to toast's folder first.
	ev, data := next()
	for ev == "event: change" {
		ev, data = next()
	}
	var mail struct{ Box, ID, Print string }
	if ev != "event: mail" || json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &mail) != nil || mail.Box != "toast" || mail.ID != m.ID || mail.Print == "" {
		t.Fatalf("event %q %q", ev, data)
	}
	// A page read now carries the print the event stands for: the page
	// that fetched itself for the event does not fetch again for the
	// folder change the same send made (live.js compares the two).
	if _, body := tw.get("/"); !strings.Contains(body, `data-print="`+mail.Print+`"`) {
		t.Errorf("the page after the mail event does not carry its print %s", mail.Print)
	}
	// A mark read is no new mail, but it changes the page: a change event,
	// with another print.
	if _, err := tw.store.MarkRead(maildir.Address{Name: "toast"}, m.ID); err != nil {
		t.Fatal(err)
	}
	ev, data = next()
	if ev != "event: change" || strings.Contains(data, mail.Print) {
		t.Fatalf("after a mark read: %q %q", ev, data)
	}
}
