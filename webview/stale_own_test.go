package webview_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// pageForm returns the fields of the form of page path whose action
// starts with /action/, as the page filled them in, and its target.
func (tw *town) pageForm(path, action string) (string, url.Values) {
	tw.t.Helper()
	_, page := tw.get(path)
	forms := regexp.MustCompile(`(?s)<form method="post" action="([^"]+)".*?</form>`).FindAllStringSubmatch(page, -1)
	for _, f := range forms {
		target := html.UnescapeString(f[1])
		if !strings.HasPrefix(target, "/"+action+"/") {
			continue
		}
		vals := url.Values{}
		for _, in := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"`).FindAllStringSubmatch(f[0], -1) {
			vals.Set(in[1], html.UnescapeString(in[2]))
		}
		return target, vals
	}
	tw.t.Fatalf("%s has no %s form", path, action)
	return "", nil
}

// Mark read, Archive and Reply act on the message as the page showed it:
// one marked read or unread since is not archived (archiving mail marked
// unread again would hide work), one read since is left read by Mark read
// (nothing undone), and one gone since is refused saying what became of
// it, never with a file's path.
func TestOwnMailActionsCheckWhatThePageShowed(t *testing.T) {
	tw := newTown(t, "human", "")
	me := maildir.Address{Kind: maildir.KindAgent, Name: "human"}
	m := tw.send(&maildir.Message{From: "mayor", To: "human", Subject: "the plan"})
	page := "/msg/human/" + url.PathEscape(m.ID)
	archiveAt, archiveForm := tw.pageForm(page, "archive")
	markAt, markForm := tw.pageForm(page, "mark-read")
	if archiveForm.Get("seen") != "unread" || markForm.Get("seen") != "unread" || archiveForm.Get("subject") != "the plan" {
		t.Fatalf("the forms carry %v and %v", archiveForm, markForm)
	}

	// Read by the agent since the page was shown.
	if _, err := tw.store.MarkRead(me, m.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := tw.post(archiveAt, archiveForm); code != http.StatusConflict || !strings.Contains(body, "“the plan” was marked read since the page was shown (it showed it unread)") {
		t.Fatalf("archive of a message read since: %d %s", code, body)
	}
	if got, err := tw.store.Get(me, m.ID); err != nil || got.Archived {
		t.Fatalf("the refused archive moved it: %v", err)
	}
	if code, body := tw.post(markAt, markForm); code != http.StatusSeeOther {
		t.Fatalf("mark read of a message read since: %d %s", code, body)
	}

	// Marked unread again since a page showed it read.
	archiveAt, archiveForm = tw.pageForm(page, "archive")
	if archiveForm.Get("seen") != "read" {
		t.Fatalf("the form carries %v", archiveForm)
	}
	if _, err := tw.store.MarkUnread(me, m.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := tw.post(archiveAt, archiveForm); code != http.StatusConflict || !strings.Contains(body, "was marked unread since the page was shown (it showed it read)") {
		t.Fatalf("archive of a message marked unread since: %d %s", code, body)
	}
	if got, err := tw.store.Get(me, m.ID); err != nil || got.Archived || got.Read {
		t.Fatalf("the refused archive changed it: %+v %v", got, err)
	}
	archiveAt, archiveForm = tw.pageForm(page, "archive")
	if code, body := tw.post(archiveAt, archiveForm); code != http.StatusSeeOther {
		t.Fatalf("archive as shown: %d %s", code, body)
	}
	if got, err := tw.store.Get(me, m.ID); err != nil || !got.Archived {
		t.Fatalf("not archived: %v", err)
	}

	// Gone since the page was shown.
	gone := tw.send(&maildir.Message{From: "mayor", To: "human", Subject: "short-lived"})
	page = "/msg/human/" + url.PathEscape(gone.ID)
	archiveAt, archiveForm = tw.pageForm(page, "archive")
	replyAt, replyForm := tw.pageForm(page, "reply")
	replyForm.Set("body", "on it")
	if err := tw.store.Delete(me, gone.ID); err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]struct {
		at   string
		form url.Values
	}{"archive": {archiveAt, archiveForm}, "reply": {replyAt, replyForm}} {
		code, body := tw.post(c.at, c.form)
		if code != http.StatusConflict || !strings.Contains(html.UnescapeString(body), "“short-lived” is no longer in human's mailbox") || strings.Contains(body, "state/mail") {
			t.Errorf("%s of a message deleted since: %d %s", what, code, body)
		}
	}
}
