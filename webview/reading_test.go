package webview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/live"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/maildir"
)

// A body's line breaks are kept: a protocol message's Key: value lines
// are lines.
func TestBodyKeepsItsLineBreaks(t *testing.T) {
	tw := newTown(t, "", "")
	m := tw.send(&maildir.Message{From: "refinery", To: "mayor", Subject: "MERGED gt-101", Body: "Exit: MERGED\nIssue: gt-101\nMR: polecat/nux\n\nMerged cleanly."})
	_, body := tw.get("/msg/mayor/" + m.ID)
	md := regexp.MustCompile(`(?s)<div id="body" class="md">(.*?)</div>`).FindStringSubmatch(body)
	if md == nil || !strings.Contains(md[1], "Exit: MERGED<br>\nIssue: gt-101<br>\nMR: polecat/nux</p>") {
		t.Fatalf("the body's lines: %q", md)
	}
}

// Every age a page shows ("3d", "20m") gives its absolute time on hover.
func TestEveryAgeGivesItsTime(t *testing.T) {
	tw, _, _ := overseerTown(t)
	tw.send(&maildir.Message{From: "witness", To: "toast", Priority: maildir.Urgent, Subject: "urgent"})
	if err := tw.store.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "refinery", To: "channel:merges", Subject: "MERGED gt-1"})
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-3: waiting"})
	tw.srv.Now = func() time.Time { return time.Now().Add(time.Hour) }
	age := regexp.MustCompile(`(<[^<>]*>)(\d+[smhd])[\s<]`)
	for _, path := range []string{"/", "/box/toast", "/box/queue:work", "/search?q=gt", "/activity"} {
		_, body := tw.get(path)
		ages := age.FindAllStringSubmatch(body, -1)
		if len(ages) == 0 {
			t.Errorf("%s shows no age", path)
		}
		for _, a := range ages {
			if a[1] == "<code>" {
				continue // the search page's help, not an age
			}
			if !strings.HasPrefix(a[1], "<time datetime=") || !strings.Contains(a[1], ` title="20`) {
				t.Errorf("%s: the age %s is not a time with its title: %s", path, a[2], a[0])
			}
		}
	}
}

// The browser's favicon.ico is there.
func TestFavicon(t *testing.T) {
	tw := newTown(t, "", "")
	status, body := tw.get("/favicon.ico")
	if status != http.StatusOK || !strings.HasPrefix(body, "\x00\x00\x01\x00") {
		t.Fatalf("/favicon.ico: %d, %q", status, body[:min(len(body), 8)])
	}
	if _, page := tw.get("/"); !strings.Contains(page, `<link rel="icon" href="/favicon.ico">`) {
		t.Error("the page names no icon")
	}
}

// A queue's tabs differ: what waits in it, and what was claimed from it;
// a channel's are its posts and its archive.
func TestQueueTabsDiffer(t *testing.T) {
	tw, _, _ := overseerTown(t)
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-3: waiting"})
	_, waiting := tw.get("/box/queue:work")
	_, claimed := tw.get("/box/queue:work?claimed=1")
	tabs := regexp.MustCompile(`(?s)<p class="tabs">.*?</p>`)
	if t1 := tabs.FindString(waiting); !strings.Contains(t1, `aria-current="page">waiting</a>`) || !strings.Contains(t1, `?claimed=1">claimed</a>`) || strings.Contains(t1, "unread") {
		t.Errorf("the queue's tabs: %s", t1)
	}
	if !strings.Contains(waiting, "WORK gt-3: waiting") || strings.Contains(regexp.MustCompile(`(?s)<table id="messages">.*?</table>`).FindString(waiting), "WORK gt-1") {
		t.Error("the waiting tab does not list what waits")
	}
	if strings.Contains(claimed, "WORK gt-3: waiting") || !strings.Contains(claimed, "WORK gt-1: stuck one") || !strings.Contains(claimed, "WORK gt-2: fresh one") {
		t.Errorf("the claimed tab: %s", claimed)
	}
	if err := tw.store.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	if _, ch := tw.get("/box/channel:merges"); !strings.Contains(tabs.FindString(ch), ">posts</a>") || strings.Contains(tabs.FindString(ch), "unread") {
		t.Errorf("the channel's tabs: %s", tabs.FindString(ch))
	}
}

// Composing to a name no agent has asks first (naming the agent meant)
// and sends nothing; agreed to, it sends. Several addresses in To are
// each a recipient. The page sent back to says what was sent.
func TestComposeToAnUnknownAgentAsksFirst(t *testing.T) {
	tw := newTown(t, "human", "")
	tw.send(&maildir.Message{From: "mayor", To: "human", Subject: "hi"})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "hi"})
	tok := tw.pageToken()
	form := url.Values{"to": {"humna, toast"}, "subject": {"status?"}, "body": {"draft"}, "token": {tok}, "back": {"/"}}
	status, ask := tw.post("/send", form)
	if status != 200 || !strings.Contains(ask, "There is no agent <b>humna</b> in this town — did you mean <b>human</b>?") || !strings.Contains(ask, `name="new" value="humna"`) || !strings.Contains(ask, ">draft</textarea>") {
		t.Fatalf("the question: %d\n%s", status, ask)
	}
	if ok, _ := tw.store.Agents(); len(ok) != 2 {
		t.Fatalf("asking created a mailbox: %v", ok)
	}
	form.Set("new", "humna")
	status, loc := tw.postTo("/send", form)
	if status != 303 || !strings.HasPrefix(loc, "/?") {
		t.Fatalf("the agreed send: %d to %q", status, loc)
	}
	for _, a := range []string{"humna", "toast"} {
		got, err := tw.store.List(maildir.Address{Name: a}, maildir.ListOptions{})
		if err != nil || !slices.ContainsFunc(got, func(m *maildir.Message) bool { return m.Subject == "status?" }) {
			t.Errorf("%s did not get it: %v %v", a, got, err)
		}
	}
	if _, page := tw.get(loc); !regexp.MustCompile(`<p id="sent" class="notice" role="status">Sent “<a href="[^"]+">status\?</a>” to humna, toast\.</p>`).MatchString(page) {
		t.Error("the page sent back to does not say what was sent")
	}
}

// Each agent's session: busy or idle as its deliverer's record (or its
// runtime) says, none without a live deliverer, and when it was last seen
// (its hooks' last run, or its deliverer's last look); an agent whose hooks
// ran but that has no live deliverer says so, not "none" beside "seen
// 3s ago".
func TestLivenessShowsSessions(t *testing.T) {
	t.Setenv(hook.StateEnv, t.TempDir()) // the hooks' state, the test's own: never the user's
	tw := newTown(t, "", "")
	for _, a := range []string{"nux", "toast", "furiosa", "slit"} {
		tw.send(&maildir.Message{From: "mayor", To: a, Subject: "hi"})
	}
	now := time.Now().UTC()
	record := func(agent, status string, deliverer live.Process) {
		r := live.Record{Agent: agent, Deliverer: deliverer, Started: now, Updated: now.Add(-2 * time.Minute)}
		r.Session.Runtime, r.Session.Process.PID, r.Session.Status = "codex", 4242, status
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(tw.dir, filepath.FromSlash(live.Dir), agent)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "codex-4242.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	record("nux", "busy", live.Self())
	record("toast", "idle", live.Self())
	record("slit", "busy", live.Process{PID: 1 << 30}) // its deliverer is gone
	h := &hook.Handler{Collector: hook.Collector{Store: tw.store, Nudges: tw.nudges}}
	if a := h.Handle(context.Background(), agentrt.Claude, hook.PromptSubmit, "furiosa", hook.Input{}); len(a.Errs) > 0 {
		t.Fatal(a.Errs)
	}
	_, body := tw.get("/")
	cellOf := func(agent string) string {
		return regexp.MustCompile(`(?s)<tr id="box-` + agent + `".*?<td data-col="session">(.*?)</td>`).FindStringSubmatch(body)[1]
	}
	for agent, want := range map[string]string{
		"nux":     `<span class="session s-busy">busy <span class="dim">(codex)</span></span> <span class="dim">seen <time`,
		"toast":   `<span class="session s-idle">idle <span class="dim">(codex)</span></span> <span class="dim">seen <time`,
		"furiosa": `<span class="session s-none">no live delivery</span> <span class="dim">its hooks ran <time`,
		"slit":    `<span class="session s-none">none</span>`,
	} {
		if got := cellOf(agent); !strings.HasPrefix(got, want) || agent == "slit" && got != want {
			t.Errorf("%s's session: %s\nwant %s", agent, got, want)
		}
	}
	if !strings.Contains(cellOf("nux"), ">2m</time> ago") {
		t.Errorf("nux last seen: %s", cellOf("nux"))
	}
	if _, page := tw.get("/box/toast"); !strings.Contains(page, `<p id="session">session: <span class="session s-idle">idle`) {
		t.Error("the mailbox page does not say toast's session")
	}
}

// The search box takes field filters, ranks what it finds with a snippet
// each, comes in pages, and says on the page why a query cannot be run.
func TestSearchAPersonCanUse(t *testing.T) {
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "gastown.nux", To: "mayor", Subject: "POLECAT_DONE gt-5", Body: "The build was flaky; fixed."})
	tw.send(&maildir.Message{From: "gastown.nux", To: "mayor", Subject: "flaky build on main", Priority: maildir.Urgent, Body: "x"})
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "flaky? no", Body: "x"})
	get := func(q string) string {
		t.Helper()
		status, body := tw.get("/search?q=" + url.QueryEscape(q))
		if status != 200 {
			t.Fatalf("%s: %d", q, status)
		}
		return body
	}
	subjects := func(body string) []string {
		var out []string
		for _, m := range regexp.MustCompile(`<a href="/msg/[^"]+">([^<]+)</a>`).FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		return out
	}
	if got := subjects(get("flaky from:nux")); strings.Join(got, "|") != "flaky build on main|POLECAT_DONE gt-5" {
		t.Errorf("from:nux, ranked: %q", got)
	}
	if got := subjects(get("priority:URGENT")); strings.Join(got, "|") != "flaky build on main" {
		t.Errorf("priority:URGENT: %q", got)
	}
	if got := subjects(get("to:toast is:unread")); strings.Join(got, "|") != "flaky? no" {
		t.Errorf("to:toast is:unread: %q", got)
	}
	if body := get("flaky from:nux"); !strings.Contains(body, `<div class="snippet dim">The build was <mark>flaky</mark>; fixed.</div>`) {
		t.Error("no snippet with the word marked")
	}
	if body := get("priority:extreme"); !strings.Contains(body, `<p class="error" id="query-error">That search cannot be run: priority:extreme: use urgent, high, normal or low</p>`) || !strings.Contains(body, `value="priority:extreme"`) {
		t.Errorf("a bad filter: %s", body)
	}
	for i := range 45 {
		tw.send(&maildir.Message{From: "witness", To: "mayor", Subject: fmt.Sprintf("patrol %d", i), Body: "x"})
	}
	body := get("patrol")
	if n := len(subjects(body)); n != 20 || !strings.Contains(body, "page 1 of 3 (45 found)") {
		t.Errorf("the first page: %d results", n)
	}
	if _, last := tw.get("/search?q=patrol&page=3"); len(subjects(last)) != 5 {
		t.Errorf("the last page: %d results", len(subjects(last)))
	}
}

// An agent's page has a sent tab: what it sent, wherever it went, newest
// first, each copy with its recipient and whether it was read.
func TestSentTab(t *testing.T) {
	tw := newTown(t, "", "")
	tw.send(&maildir.Message{From: "nux", To: "mayor", Subject: "first"})
	tw.send(&maildir.Message{From: "nux", To: "toast", CC: []string{"slit"}, Subject: "second"})
	tw.send(&maildir.Message{From: "mayor", To: "nux", Subject: "to nux"})
	_, body := tw.get("/box/nux?sent=1")
	table := regexp.MustCompile(`(?s)<table id="sent">.*?</table>`).FindString(body)
	rows := regexp.MustCompile(`<td>([a-z]+)</td><td><a href="[^"]+">([a-z ]+)</a>`).FindAllStringSubmatch(table, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+":"+r[2])
	}
	if strings.Join(got, " ") != "slit:second toast:second mayor:first" {
		t.Errorf("nux's sent tab: %q", got)
	}
	if strings.Contains(table, "to nux") || !strings.Contains(body, `?sent=1" aria-current="page">sent</a>`) {
		t.Error("the sent tab shows mail to nux, or is not marked")
	}
}
