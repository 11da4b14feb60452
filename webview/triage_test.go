package webview_test

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// dropFile writes a message file into a mailbox of the root as a script
// would, under the name it chose.
func dropFile(t testing.TB, root, box, name, content string) {
	t.Helper()
	dir := filepath.Join(root, "state", "mail", box)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (tw *town) drop(box, name, content string) {
	tw.t.Helper()
	dropFile(tw.t, tw.dir, box, name, content)
}

var actionRE = regexp.MustCompile(`<form method="post" action="([^"]+)"`)

// A form's action names exactly its message, whatever the id holds: a
// script may name a file dup?x.json, arc#y.json, 100%.json or "a b.json",
// and Mark read, Archive and Reply on it act on it, not on the message
// whose id is the part before the ? or #.
func TestActionsHitExactlyTheirMessage(t *testing.T) {
	tw := newTown(t, "human", "")
	tok := tw.pageToken()
	for _, name := range []string{"dup", "dup?x", "arc", "arc#y", "100%", "100", "a b", "a"} {
		tw.drop("human", name+".json", `{"from":"script","subject":"`+name+`"}`)
	}
	me := maildir.Address{Kind: maildir.KindAgent, Name: "human"}
	act := func(id, action string, form url.Values) {
		t.Helper()
		_, page := tw.get("/msg/human/" + url.PathEscape(id))
		var target string
		for _, m := range actionRE.FindAllStringSubmatch(page, -1) {
			if a := html.UnescapeString(m[1]); strings.HasPrefix(a, "/"+action+"/") {
				target = a
			}
		}
		if target == "" {
			t.Fatalf("the page of %q has no %s form", id, action)
		}
		form.Set("token", tok)
		if code, body := tw.post(target, form); code != http.StatusSeeOther {
			t.Fatalf("%s %q at %s: %d %s", action, id, target, code, body)
		}
	}
	read := func(id string) bool {
		m, err := tw.store.Get(me, id)
		if err != nil {
			t.Fatalf("get %q: %v", id, err)
		}
		return m.Read
	}
	for _, id := range []string{"dup?x", "100%", "a b"} {
		act(id, "mark-read", url.Values{})
		if !read(id) {
			t.Errorf("mark read on %q did not mark it", id)
		}
	}
	for _, other := range []string{"dup", "100", "a"} {
		if read(other) {
			t.Errorf("mark read on another id marked %q", other)
		}
	}
	act("arc#y", "archive", url.Values{})
	if m, err := tw.store.Get(me, "arc#y"); err != nil || !m.Archived {
		t.Errorf("arc#y not archived: %v", err)
	}
	if m, err := tw.store.Get(me, "arc"); err != nil || m.Archived {
		t.Errorf("arc was archived in its place: %v", err)
	}
	act("a b", "reply", url.Values{"body": {"on it"}})
	replies, err := tw.store.List(maildir.Address{Kind: maildir.KindAgent, Name: "script"}, maildir.ListOptions{})
	if err != nil || len(replies) != 1 || replies[0].Subject != "Re: a b" {
		t.Errorf("the reply: %v %v", replies, err)
	}
}

// Claimed work shows on the overview and on its queue's page, with its
// claimant and how long it has been held, marked stuck past StuckAfter;
// done (read) work leaves both.
func TestClaimedWorkShowsItsClaimant(t *testing.T) {
	tw := newTown(t, "", "")
	if err := tw.store.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-1: stuck one"})
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-2: done one"})
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-3: waiting"})
	q := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	_, err := tw.store.Claim(q, maildir.Address{Kind: maildir.KindAgent, Name: "nux"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := tw.store.Claim(q, maildir.Address{Kind: maildir.KindAgent, Name: "toast"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tw.store.MarkRead(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, done.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tw.srv.Now = func() time.Time { return now.Add(3 * 24 * time.Hour) }
	row := regexp.MustCompile(`(?s)<tr class="stuck" data-agent="nux"[^>]*>.*?</tr>`)
	for _, path := range []string{"/", "/box/queue:work"} {
		_, body := tw.get(path)
		r := row.FindString(body)
		if r == "" || !strings.Contains(r, "WORK gt-1: stuck one") || !strings.Contains(r, "3d") || !strings.Contains(r, ">stuck<") {
			t.Errorf("%s: the stuck claim's row: %q", path, r)
		}
		if strings.Contains(body, "WORK gt-2: done one") {
			t.Errorf("%s shows work that is done", path)
		}
	}
	_, body := tw.get("/")
	if !regexp.MustCompile(`data-col="claimed">1 <span class="mark">1 stuck</span>`).MatchString(body) {
		t.Error("the queue's line does not count its stuck claim")
	}
}

// "Waiting on" names each agent with urgent mail unread past UrgentAfter,
// with the sender and the subject; urgent mail still fresh, or read, is
// not there.
func TestWaitingOnNamesWhoIsWaitedOn(t *testing.T) {
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "witness", To: "toast", Subject: "MERGE_FAILED gt-9", Priority: maildir.Urgent})
	read := tw.send(&maildir.Message{From: "witness", To: "nux", Subject: "handled", Priority: maildir.Urgent})
	if _, err := tw.store.MarkRead(maildir.Address{Kind: maildir.KindAgent, Name: "nux"}, read.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tw.srv.Now = func() time.Time { return now.Add(20 * time.Minute) }
	tw.srv.UrgentAfter = 10 * time.Minute
	_, body := tw.get("/")
	w := regexp.MustCompile(`(?s)<table id="waiting">.*?</table>`).FindString(body)
	if !strings.Contains(w, `data-agent="toast"`) || !strings.Contains(w, "witness") || !strings.Contains(w, "MERGE_FAILED gt-9") || !strings.Contains(w, "20m") {
		t.Errorf("waiting on: %q", w)
	}
	if strings.Contains(w, "nux") {
		t.Error("read urgent mail is waited on")
	}
	tw.srv.UrgentAfter = time.Hour
	if _, body := tw.get("/"); strings.Contains(body, `id="waiting"`) {
		t.Error("urgent mail younger than UrgentAfter is waited on")
	}
}

// A mailbox, queue or channel the town does not have is a 404, as is a
// message that is not there; a bidirectional control in a subject is
// shown as U+FFFD, so it cannot reverse what a person reads.
func TestMissingIs404AndBidiIsShown(t *testing.T) {
	tw := newTown(t, "", "")
	m := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "pay \u202Egnp.exe"})
	for _, p := range []string{"/box/nobody", "/box/queue:none", "/box/channel:none", "/msg/toast/2020-01-01T00-00-00Z-nope"} {
		if code, _ := tw.get(p); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
	if code, _ := tw.get("/box/toast"); code != http.StatusOK {
		t.Errorf("/box/toast: %d", code)
	}
	for _, p := range []string{"/box/toast", "/msg/toast/" + m.ID} {
		_, body := tw.get(p)
		if strings.Contains(body, "\u202E") || !strings.Contains(body, "pay \uFFFDgnp.exe") {
			t.Errorf("%s shows the override as it is", p)
		}
	}
}

// With a token, the pages' forms carry a token of their own, never the
// access token; the cookie that keeps the access token is Secure when the
// page came over HTTPS (a TLS proxy says so).
func TestFormsDoNotCarryTheAccessToken(t *testing.T) {
	tw := newTown(t, "human", "s3cret")
	_, body := tw.get("/", "Cookie", "mailfs_token=s3cret")
	if strings.Contains(body, "s3cret") {
		t.Fatal("the page carries the access token")
	}
	m := tokenRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no form token")
	}
	if code, _ := tw.post("/send", url.Values{"to": {"toast"}, "subject": {"x"}, "token": {m[1]}, "new": {"toast"}}, "Cookie", "mailfs_token=s3cret"); code != http.StatusSeeOther {
		t.Errorf("a send with the form token: %d", code)
	}
	if code, _ := tw.get("/?token=" + m[1]); code != http.StatusUnauthorized {
		t.Errorf("the form token opened the page: %d", code)
	}
	for _, c := range []struct {
		hdr    []string
		secure bool
	}{{nil, false}, {[]string{"X-Forwarded-Proto", "https"}, true}} {
		req, _ := http.NewRequest("GET", tw.ts.URL+"/?token=s3cret", nil)
		for i := 0; i+1 < len(c.hdr); i += 2 {
			req.Header.Set(c.hdr[i], c.hdr[i+1])
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cs := resp.Cookies()
		if len(cs) != 1 || cs[0].Secure != c.secure || !cs[0].HttpOnly {
			t.Errorf("headers %v: cookie %+v, want Secure %v", c.hdr, cs, c.secure)
		}
	}
}

// The overview reads again only the folders that changed, and every kind
// of change shows at the next render: a send, a mark read (a rewrite
// renamed over the file), an archive, a script's drop, a script's rm. The
// server's clock is an hour ahead, so that every folder is old enough for
// its stamp to be trusted and kept.
func TestOverviewCacheSeesEveryChange(t *testing.T) {
	tw := newTown(t, "", "")
	now := time.Now()
	tw.srv.Now = func() time.Time { return now.Add(time.Hour) }
	a := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "one"})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "two"})
	unread := func(want string) {
		t.Helper()
		_, body := tw.get("/")
		if got := cell(body, "toast", "unread"); got != want {
			t.Fatalf("unread %s, want %s", got, want)
		}
	}
	unread("2")
	unread("2") // from the cache
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if _, err := tw.store.MarkRead(toast, a.ID); err != nil {
		t.Fatal(err)
	}
	unread("1")
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "three"})
	unread("2")
	tw.drop("toast", "2026-01-01T00-00-00Z-script.json", `{"from":"script","subject":"dropped"}`)
	unread("3")
	if err := os.Remove(filepath.Join(tw.dir, "state/mail/toast/2026-01-01T00-00-00Z-script.json")); err != nil {
		t.Fatal(err)
	}
	unread("2")
	ms, err := tw.store.List(toast, maildir.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if errs, err := tw.store.Archive(toast, []string{ms[0].ID}); errors.Join(append(errs, err)...) != nil {
		t.Fatal(errors.Join(append(errs, err)...))
	}
	unread("1")
}

// The message page shows a table of fields only where the message's type
// puts them: a 10 KB note whose prose holds "Key: value" lines has none.
func TestFieldsOnlyWhereTheTypeDefinesThem(t *testing.T) {
	tw := newTown(t, "", "")
	note := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "notes from the standup",
		Body: strings.Repeat("We went over the queue.\nStatus: mostly fine\nOwner: whoever is free\n\n", 120)})
	ready := tw.send(&maildir.Message{From: "nux", To: "toast", Subject: "MERGE_READY nux", Body: "Branch: polecat/nux/gt-5\nIssue: gt-5\n\nReady."})
	if _, body := tw.get("/msg/toast/" + note.ID); strings.Contains(body, `id="fields"`) {
		t.Error("a note's prose is shown as a table of fields")
	}
	_, body := tw.get("/msg/toast/" + ready.ID)
	if !regexp.MustCompile(`(?s)id="fields".*<th>Branch</th><td>polecat/nux/gt-5</td>.*<th>Issue</th><td>gt-5</td>`).MatchString(body) {
		t.Error("MERGE_READY's fields are not shown")
	}
}

// The mailbox page marks the tab it shows; a thread page is titled by
// its subject and marks its unread posts.
func TestActiveTabAndThreadTitle(t *testing.T) {
	tw := newTown(t, "", "")
	first := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "WORK gt-8: the plan"})
	if _, err := tw.store.MarkRead(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.store.Reply(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, first.ID, &maildir.Message{From: "toast", Body: "on it"}); err != nil {
		t.Fatal(err)
	}
	current := regexp.MustCompile(`<a href="[^"]*" aria-current="page">(\w+)</a>`)
	for path, want := range map[string]string{"/box/toast": "unread", "/box/toast?all=1": "all", "/box/toast?archived=1": "archive"} {
		_, body := tw.get(path)
		if m := current.FindAllStringSubmatch(body, -1); len(m) != 1 || m[0][1] != want {
			t.Errorf("%s: current tab %v, want %s", path, m, want)
		}
	}
	_, body := tw.get("/thread/" + first.ID)
	if !strings.Contains(body, "<title>WORK gt-8: the plan · mailfs</title>") || !strings.Contains(body, `<h1 id="subject">WORK gt-8: the plan</h1>`) {
		t.Error("the thread page is not titled by its subject")
	}
	if n := strings.Count(body, `<article class="post unread">`); n != 1 || !strings.Contains(body, "1 of them unread") {
		t.Errorf("unread posts marked: %d", n)
	}
}

// Search covers channels and queues too, and one archive folder that is a
// symbolic link (which the store refuses to follow) is named as skipped
// while everything else is still searched — not a 400 for everyone.
func TestSearchCoversTheTownAndSkipsWhatItCannotRead(t *testing.T) {
	tw := newTown(t, "", "")
	if err := tw.store.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	if err := tw.store.CreateChannel("news", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "needle in the queue"})
	tw.send(&maildir.Message{From: "mayor", To: "channel:news", Subject: "needle in the channel"})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "needle in a mailbox"})
	tw.send(&maildir.Message{From: "mayor", To: "nux", Subject: "needle for nux"})
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(tw.dir, "state/mail/nux/archive")); err != nil {
		t.Fatal(err)
	}
	code, body := tw.get("/search?q=needle&archived=1")
	if code != http.StatusOK {
		t.Fatalf("search: %d", code)
	}
	for _, want := range []string{"needle in the queue", "needle in the channel", "needle in a mailbox", "needle for nux"} {
		if !strings.Contains(body, want) {
			t.Errorf("search did not find %q", want)
		}
	}
	if !regexp.MustCompile(`<li>skipped nux&#39;s archive: `).MatchString(body) {
		t.Error("the symlinked archive is not named as skipped")
	}
}

// A message file over the 1 MiB limit, which no list reads, is named on
// its mailbox's page with its size rather than left unseen.
func TestTooLargeMessageIsNamed(t *testing.T) {
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "small"})
	tw.drop("toast", "2026-01-01T00-00-00Z-script.json", `{"from":"script","subject":"huge","body":"`+strings.Repeat("x", 10<<20)+`"}`)
	_, body := tw.get("/box/toast")
	if !strings.Contains(body, "Too large to show") || !strings.Contains(body, "<code>2026-01-01T00-00-00Z-script.json</code> — 10.0 MiB") {
		t.Error("the 10 MB file is not named on the page")
	}
	if !strings.Contains(body, "small") {
		t.Error("the rest of the mailbox is not listed")
	}
}

// A body is rendered as markdown — headings, emphasis, tables, code,
// links — and nothing in it becomes markup of its own: HTML written in it
// is shown as text, a javascript: link is no link.
func TestBodyIsMarkdownSanitised(t *testing.T) {
	tw := newTown(t, "", "")
	m := tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "WORK gt-9",
		Body: "# Plan\n\nDo **this** first, then `<b>that</b>`.\n\n| step | who |\n|---|---|\n| 1 | nux |\n\n[click](javascript:alert(1)) and <img src=x onerror=alert(1)>\n\n<script>window.pwned=1</script>\n"})
	_, body := tw.get("/msg/toast/" + m.ID)
	md := regexp.MustCompile(`(?s)<div id="body" class="md">(.*?)</div>`).FindStringSubmatch(body)
	if md == nil {
		t.Fatal("no rendered body")
	}
	for _, want := range []string{"<h1>Plan</h1>", "<strong>this</strong>", "<code>&lt;b&gt;that&lt;/b&gt;</code>", "<td>nux</td>", "&lt;img src=x onerror=alert(1)&gt;", "&lt;script&gt;window.pwned=1&lt;/script&gt;"} {
		if !strings.Contains(md[1], want) {
			t.Errorf("the rendered body lacks %s:\n%s", want, md[1])
		}
	}
	for _, bad := range []string{"<img", "<script", `href="javascript:`} {
		if strings.Contains(md[1], bad) {
			t.Errorf("the rendered body holds %s", bad)
		}
	}
}

// The activity page: what was sent in the last hour, and each
// conversation of the last day whose latest message waits on its
// recipient's answer (not a notification, not to a queue).
func TestActivityShowsTheLastHourAndWhoOwesAReply(t *testing.T) {
	tw := newTown(t, "", "")
	now := time.Now()
	at := func(d time.Duration) time.Time { return now.Add(-d).UTC() }
	put := func(box string, when time.Time, json string) string {
		id := maildir.NewID(when, "x")
		tw.drop(box, id+".json", json)
		return id
	}
	put("nux", at(3*time.Hour), `{"from":"mayor","to":"nux","subject":"WORK gt-1: can you take it?","timestamp":"`+at(3*time.Hour).Format(time.RFC3339Nano)+`"}`)
	b1 := put("toast", at(2*time.Hour), `{"from":"mayor","to":"toast","subject":"WORK gt-2","timestamp":"`+at(2*time.Hour).Format(time.RFC3339Nano)+`"}`)
	put("mayor", at(90*time.Minute), `{"from":"toast","to":"mayor","subject":"Re: WORK gt-2","thread":"`+b1+`","timestamp":"`+at(90*time.Minute).Format(time.RFC3339Nano)+`"}`)
	put("refinery", at(10*time.Minute), `{"from":"witness","to":"refinery","type":"notification","subject":"MERGED gt-3","timestamp":"`+at(10*time.Minute).Format(time.RFC3339Nano)+`"}`)
	put("nux", at(26*time.Hour), `{"from":"mayor","to":"nux","subject":"too old to count","timestamp":"`+at(26*time.Hour).Format(time.RFC3339Nano)+`"}`)
	code, body := tw.get("/activity")
	if code != http.StatusOK {
		t.Fatalf("/activity: %d", code)
	}
	waiting := regexp.MustCompile(`(?s)<table id="awaiting">.*?</table>`).FindString(body)
	recent := regexp.MustCompile(`(?s)<table id="recent">.*?</table>`).FindString(body)
	for _, want := range []string{`data-agent="nux"`, "WORK gt-1: can you take it?", `data-agent="mayor"`, "Re: WORK gt-2"} {
		if !strings.Contains(waiting, want) {
			t.Errorf("waiting for a reply lacks %s:\n%s", want, waiting)
		}
	}
	for _, not := range []string{`data-agent="toast"`, "MERGED gt-3", "too old to count"} {
		if strings.Contains(waiting, not) {
			t.Errorf("waiting for a reply holds %s", not)
		}
	}
	if strings.Index(waiting, "gt-1") > strings.Index(waiting, "Re: WORK gt-2") {
		t.Error("the longest waiting is not first")
	}
	if !strings.Contains(recent, "MERGED gt-3") || strings.Contains(recent, "gt-1") || strings.Contains(recent, "gt-2") {
		t.Errorf("the last hour: %s", recent)
	}
}

// A message to several agents waits on each who has not answered; mail
// that asks for no answer by mail (a report, a work assignment, a queue
// item an agent claimed) waits on no one; the list comes in pages.
func TestActivityWaitsOnEveryRecipientAndPages(t *testing.T) {
	tw := newTown(t, "", "")
	ask := tw.send(&maildir.Message{From: "mayor", To: "nux", CC: []string{"toast", "furiosa"}, Subject: "who can take gt-9?"})
	copies, err := tw.store.List(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, maildir.ListOptions{})
	if err != nil || len(copies) != 1 || copies[0].Thread != ask.ID {
		t.Fatalf("toast's copy: %v, %v", copies, err)
	}
	if _, err := tw.store.Reply(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, copies[0].ID, &maildir.Message{From: "toast", Body: "not me"}); err != nil {
		t.Fatal(err)
	}
	// The reply is now the thread's latest word: it waits on the mayor.
	tw.send(&maildir.Message{From: "mayor", To: "slit", CC: []string{"dag"}, Subject: "question for two"})
	tw.send(&maildir.Message{From: "witness", To: "mayor", Type: "completion_report", Subject: "POLECAT_DONE nux"})
	tw.send(&maildir.Message{From: "mayor", To: "nux", Type: "work_assignment", Subject: "WORK gt-10"})
	// A queue item nux claimed is work in nux's mailbox, not a question
	// to nux: it waits on no one (it was counted as waiting for a reply).
	if err := tw.store.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-11: claimed"})
	if _, err := tw.store.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, maildir.Address{Kind: maildir.KindAgent, Name: "nux"}); err != nil {
		t.Fatal(err)
	}
	_, body := tw.get("/activity")
	waiting := regexp.MustCompile(`(?s)<table id="awaiting">.*?</table>`).FindString(body)
	rows := regexp.MustCompile(`data-agent="([^"]+)"`).FindAllStringSubmatch(waiting, -1)
	var who []string
	for _, r := range rows {
		who = append(who, r[1])
	}
	if got := strings.Join(who, " "); got != "mayor slit dag" {
		t.Errorf("waited on: %q, want the mayor (toast's reply) and both of the second question's recipients", got)
	}
	for _, not := range []string{"POLECAT_DONE", "WORK gt-10", "WORK gt-11: claimed"} {
		if strings.Contains(waiting, not) {
			t.Errorf("one-way mail is waited on: %s", not)
		}
	}
	// 120 questions, one recipient each: three pages of 50.
	for i := range 120 {
		tw.send(&maildir.Message{From: "mayor", To: fmt.Sprintf("a%03d", i), Subject: fmt.Sprintf("question %d", i)})
	}
	_, body = tw.get("/activity")
	if n := strings.Count(regexp.MustCompile(`(?s)<table id="awaiting">.*?</table>`).FindString(body), "<tr class"); n != 50 {
		t.Errorf("the first page holds %d rows, not 50", n)
	}
	pages := regexp.MustCompile(`(?s)<nav class="pager" id="waiting-pages".*?</nav>`).FindString(body)
	if !strings.Contains(pages, "page 1 of 3 (123 rows)") || !strings.Contains(pages, `href="/activity?waiting=2"`) || strings.Contains(pages, "previous") {
		t.Fatalf("the pager: %s", pages)
	}
	_, last := tw.get("/activity?waiting=3")
	if n := strings.Count(regexp.MustCompile(`(?s)<table id="awaiting">.*?</table>`).FindString(last), "<tr class"); n != 23 {
		t.Errorf("the last page holds %d rows, not 23", n)
	}
	if _, odd := tw.get("/activity?waiting=99"); !strings.Contains(odd, "page 3 of 3") {
		t.Error("a page past the end is not the last")
	}
}
