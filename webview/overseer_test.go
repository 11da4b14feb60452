package webview_test

import (
	"html"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// overseerTown is a town served as human with a queue and two claims of
// nux's, one of them three days old (stuck).
func overseerTown(t *testing.T) (tw *town, stuck, fresh *maildir.Message) {
	tw = newTown(t, "human", "")
	if err := tw.store.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	q, nux := maildir.Address{Kind: maildir.KindQueue, Name: "work"}, maildir.Address{Kind: maildir.KindAgent, Name: "nux"}
	now := time.Now()
	tw.store.Now = func() time.Time { return now.Add(-72 * time.Hour) }
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-1: stuck one"})
	stuck, err := tw.store.Claim(q, nux)
	if err != nil {
		t.Fatal(err)
	}
	tw.store.Now = nil
	tw.send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-2: fresh one"})
	if fresh, err = tw.store.Claim(q, nux); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	return tw, stuck, fresh
}

func actPath(action string, m *maildir.Message) string {
	return "/act/" + action + "/" + url.PathEscape(m.Box.String()) + "/" + url.PathEscape(m.ID)
}

// The overview opens with the stuck work, each claim with its actions;
// mailbox rows count their claims; a claimed item's page shows its claim
// and the same actions.
func TestStuckWorkComesFirst(t *testing.T) {
	tw, stuck, fresh := overseerTown(t)
	_, body := tw.get("/")
	at := func(s string) int {
		i := strings.Index(body, s)
		if i < 0 {
			t.Fatalf("the overview has no %q", s)
		}
		return i
	}
	if !(at("<h2>Stuck work</h2>") < at("<h2>Mailboxes</h2>")) {
		t.Error("the stuck work is not above the mailboxes")
	}
	section := regexp.MustCompile(`(?s)<table class="claims" id="stuck">.*?</table>`).FindString(body)
	if !strings.Contains(section, "WORK gt-1: stuck one") || strings.Contains(section, "WORK gt-2") {
		t.Errorf("the stuck table holds the stuck claim only: %s", section)
	}
	for _, a := range []string{"release", "reassign", "nudge"} {
		if !strings.Contains(section, `href="`+actPath(a, stuck)+`?back=%2F"`) {
			t.Errorf("the stuck claim has no %s link", a)
		}
	}
	if !regexp.MustCompile(`data-col="claims">2 <span class="mark">1 stuck</span>`).MatchString(body) {
		t.Error("nux's row does not count its claims")
	}
	_, page := tw.get("/msg/nux/" + url.PathEscape(fresh.ID))
	row := regexp.MustCompile(`(?s)<tr id="claim" class="">.*?</tr>`).FindString(page)
	if !strings.Contains(row, "claimed by") || !strings.Contains(row, "queue:work") || !strings.Contains(row, actPath("release", fresh)) {
		t.Errorf("the claimed item's page: %q", row)
	}
	_, page = tw.get("/msg/nux/" + url.PathEscape(stuck.ID))
	if !strings.Contains(page, `<tr id="claim" class="stuck">`) || !strings.Contains(page, `<span class="mark">stuck</span>`) {
		t.Error("the stuck item's page does not say it is stuck")
	}
}

// Each action asks first (a page naming the claim), goes through the
// store's verb only with the page's token, lands in the audit log with
// who, where from and what came of it, and the page it returns to says
// what was done.
func TestReleaseReassignNudgeFromThePage(t *testing.T) {
	tw, stuck, fresh := overseerTown(t)
	token := tw.pageToken()
	status, ask := tw.get(actPath("release", stuck) + "?back=/")
	if status != 200 || !strings.Contains(ask, "Release this claim?") || !strings.Contains(ask, "WORK gt-1: stuck one") || !strings.Contains(ask, `id="confirm"`) {
		t.Fatalf("the release's question: %d\n%s", status, ask)
	}
	if n, _ := tw.store.AuditLog(0); len(n) != 0 {
		t.Fatal("asking recorded something")
	}
	if status, _ := tw.post(actPath("release", stuck), url.Values{"back": {"/"}}); status != 403 {
		t.Errorf("a release without the token: %d", status)
	}
	status, _ = tw.post(actPath("release", stuck), url.Values{"token": {token}, "back": {"/"}})
	if status != 303 {
		t.Fatalf("release: %d", status)
	}
	if _, err := os.Stat(tw.dir + "/state/queue/work/" + stuck.ID + ".json"); err != nil {
		t.Fatalf("the released item is not waiting in its queue: %v", err)
	}
	// reassign, to toast
	if _, ask := tw.get(actPath("reassign", fresh)); !strings.Contains(ask, `<option value="" selected>choose an agent</option><option>toast</option></select>`) || strings.Contains(ask, "<option>nux</option>") {
		t.Errorf("the reassign's choices: %s", ask)
	}
	req := url.Values{"token": {token}, "to": {"toast"}, "back": {"/box/toast"}}
	if status, _ := tw.post(actPath("reassign", fresh), req); status != 303 {
		t.Fatalf("reassign: %d", status)
	}
	m, err := tw.store.Get(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, fresh.ID)
	if err != nil || m.Claim == nil || m.Claim.Agent != "toast" || m.Read {
		t.Fatalf("the reassigned item: %+v, %v", m, err)
	}
	// nudge toast about it
	if status, _ := tw.post(actPath("nudge", m), url.Values{"token": {token}, "note": {"still on gt-2?"}}); status != 303 {
		t.Fatalf("nudge: %d", status)
	}
	ns, err := tw.nudges.Peek("toast")
	if err != nil || len(ns) != 1 || ns[0].Message != "still on gt-2?" || ns[0].Sender != "human" || ns[0].MailID != fresh.ID {
		t.Fatalf("toast's nudges: %+v, %v", ns, err)
	}
	// a failed action: to a queue
	status, fail := tw.post(actPath("reassign", m), url.Values{"token": {token}, "to": {"queue:work"}})
	if status != 400 || !strings.Contains(fail, "a claim goes to an agent") {
		t.Errorf("reassign to a queue: %d\n%s", status, fail)
	}
	log, err := tw.store.AuditLog(0)
	if err != nil || len(log) != 4 {
		t.Fatalf("the audit log: %+v, %v", log, err)
	}
	want := []struct{ action, agent, to, err string }{
		{"reassign", "toast", "", "a claim goes to an agent"}, {"nudge", "toast", "", ""}, {"reassign", "nux", "toast", ""}, {"release", "nux", "", ""},
	}
	for i, w := range want {
		e := log[i]
		if e.Action != w.action || e.Agent != w.agent || e.Actor != "human" || e.Addr != "127.0.0.1" || !strings.Contains(e.Error, w.err) || (w.err == "") != e.Done() || w.to != "" && e.To != w.to {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	// The page an action returns to says what was done; the overview
	// lists the log.
	_, back := tw.get("/box/toast?done=" + url.QueryEscape(log[2].ID))
	if !regexp.MustCompile(`<p id="done" class="notice" role="status">.*<b>human</b>.* reassigned nux's “WORK gt-2: fresh one” <span class="dim">` + regexp.QuoteMeta(fresh.ID) + `</span>.* to toast`).MatchString(back) {
		t.Errorf("the page after the reassign does not confirm it:\n%s", back)
	}
	_, over := tw.get("/")
	if strings.Count(regexp.MustCompile(`(?s)<ol id="audit".*?</ol>`).FindString(over), "<li") != 4 {
		t.Error("the overview does not list the audit log")
	}
}

// Actions refuse what is not theirs: a read-only server, an unknown
// action, a message no claim brought, a redirect off the server.
func TestActionsRefuse(t *testing.T) {
	tw, stuck, _ := overseerTown(t)
	direct, err := tw.store.List(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, maildir.ListOptions{})
	if err != nil || len(direct) != 1 {
		t.Fatal(direct, err)
	}
	token := tw.pageToken()
	if status, _ := tw.get(actPath("delete", stuck)); status != 404 {
		t.Errorf("an unknown action: %d", status)
	}
	if status, body := tw.get(actPath("release", direct[0])); status != 400 || !strings.Contains(body, "not claimed from a queue") {
		t.Errorf("a message sent directly: %d", status)
	}
	if status, _ := tw.post(actPath("release", direct[0]), url.Values{"token": {token}}); status != 400 {
		t.Errorf("releasing a message sent directly: %d", status)
	}
	if status, loc := tw.postTo(actPath("release", stuck), url.Values{"token": {token}, "back": {"//evil.example/"}}); status != 303 || !strings.HasPrefix(loc, "/?done=") {
		t.Errorf("release back to another host: %d, Location %q", status, loc)
	}
	ro := newTown(t, "", "")
	if status, _ := ro.get(actPath("release", stuck)); status != 403 {
		t.Errorf("a read-only server's question: %d", status)
	}
}

// hiddenFields returns the hidden inputs of the form on page.
func hiddenFields(page string) url.Values {
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// An action carries what its question page showed, and the server
// refuses it when that changed: the claimant marked the item done, or
// another tab got there first. The refusal says what happened and who did
// it, names the item by its subject, and is in the audit log, as every
// attempt is. A reassign goes only to an agent the town has.
func TestStaleActionsAreRefused(t *testing.T) {
	tw, stuck, fresh := overseerTown(t)
	nux := maildir.Address{Kind: maildir.KindAgent, Name: "nux"}
	// The question is asked; then nux finishes the item.
	_, ask := tw.get(actPath("release", fresh) + "?back=/")
	form := hiddenFields(ask)
	if form.Get("claimant") != "nux" || form.Get("claimed") == "" || form.Get("token") == "" {
		t.Fatalf("the question carries %v", form)
	}
	if _, err := tw.store.MarkRead(nux, fresh.ID); err != nil {
		t.Fatal(err)
	}
	status, body := tw.post(actPath("release", fresh), form)
	if status != 409 || !strings.Contains(body, "nux marked “WORK gt-2: fresh one” done (read)") {
		t.Fatalf("a release after the mark read: %d\n%s", status, body)
	}
	if m, err := tw.store.Get(nux, fresh.ID); err != nil || !m.Read || m.Claim == nil {
		t.Fatalf("the finished item after the refused release: %+v, %v", m, err)
	}
	// Nor does any page offer it again: not its own page, nor the
	// overview's or its queue's claims.
	for _, path := range []string{"/msg/nux/" + fresh.ID, "/", "/box/queue:work?claimed=1"} {
		if _, page := tw.get(path); strings.Contains(page, actPath("release", fresh)) || strings.Contains(page, actPath("reassign", fresh)) {
			t.Errorf("%s offers to release or reassign the finished item", path)
		}
	}
	// Two tabs ask about the stuck item; the first reassigns it to toast,
	// the second's release loses, and says to whom it went.
	_, ask = tw.get(actPath("reassign", stuck))
	first := hiddenFields(ask)
	first.Set("to", "toast")
	_, ask = tw.get(actPath("release", stuck))
	second := hiddenFields(ask)
	if status, _ := tw.post(actPath("reassign", stuck), first); status != 303 {
		t.Fatalf("the first tab's reassign: %d", status)
	}
	status, body = tw.post(actPath("release", stuck), second)
	if status != 409 || !strings.Contains(body, "“WORK gt-1: stuck one” was already reassigned to toast by human") || strings.Contains(body, "state/mail") {
		t.Fatalf("the second tab's release: %d\n%s", status, body)
	}
	// A reassign to a name the town has no mailbox for is refused, with
	// the names it has; no mailbox is made.
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	moved, err := tw.store.Get(toast, stuck.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, ask = tw.get(actPath("reassign", moved))
	typo := hiddenFields(ask)
	typo.Set("to", "humna")
	status, body = tw.post(actPath("reassign", moved), typo)
	if status != 400 || !strings.Contains(body, "there is no agent humna in this town: reassign to one of nux") {
		t.Fatalf("a reassign to humna: %d\n%s", status, body)
	}
	if agents, _ := tw.store.Agents(); slices.Contains(agents, "humna") {
		t.Fatal("the refused reassign made a mailbox")
	}
	typo.Del("to")
	if status, body := tw.post(actPath("reassign", moved), typo); status != 400 || !strings.Contains(body, "choose the agent") {
		t.Fatalf("a reassign to no one: %d\n%s", status, body)
	}
	// Every attempt is in the log, newest first.
	log, err := tw.store.AuditLog(0)
	if err != nil || len(log) != 5 {
		t.Fatalf("the audit log: %d entries, %v", len(log), err)
	}
	want := []struct{ action, agent, err string }{
		{"reassign", "toast", "choose the agent"}, {"reassign", "toast", "no agent humna"},
		{"release", "nux", "already reassigned to toast"}, {"reassign", "nux", ""}, {"release", "nux", "done (read)"},
	}
	for i, w := range want {
		e := log[i]
		if e.Action != w.action || e.Agent != w.agent || !strings.Contains(e.Error, w.err) || (w.err == "") != e.Done() || e.Subject == "" {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	// The page showed toast's claim; toast released the item and claimed
	// it again since: the same claimant, a new claim, which the page's
	// release would undo. Refused, naming when each claim was taken.
	_, ask = tw.get(actPath("release", moved))
	old := hiddenFields(ask)
	if _, err := tw.store.ReleaseSeen(toast, moved.ID, maildir.Seen{Done: true}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	tw.store.Now = func() time.Time { return later }
	if _, err := tw.store.Claim(maildir.Address{Kind: maildir.KindQueue, Name: "work"}, toast); err != nil {
		t.Fatal(err)
	}
	tw.store.Now = nil
	status, body = tw.post(actPath("release", moved), old)
	if status != 409 || !strings.Contains(body, "“WORK gt-1: stuck one” was released and claimed again by toast at "+later.UTC().Format("15:04:05Z")) {
		t.Fatalf("a release of a claim taken again since: %d\n%s", status, body)
	}
	if _, err := tw.store.Get(toast, moved.ID); err != nil {
		t.Fatalf("the refused release moved the item: %v", err)
	}
}
