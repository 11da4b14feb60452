package webview_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The address mailfs serve prints with --token carries the token as its
// password: the browser sends it once, answering a 401, and the server
// answers with the cookie and the page's own address, which holds no
// token. After the browser has written its profile out, the token is not
// in its history (the History database, whose text SQLite stores as it
// is), its favicons, its caches or anything else it keeps — but the cookie
// store (the cookie it became) and the session-restore files under
// Sessions/, which keep the first address of each open tab, credentials
// and all, for reopening the tabs after a crash (docs/operations.md says
// so). Without the password form, the token in ?token= or #token= was in
// History, Favicons and the cache too.
func TestBrowserTokenLeavesNoTrace(t *testing.T) {
	const token = "s3cret-token-for-the-history-test"
	lt := newLiveTown(t, "--token", token)
	if !strings.Contains(lt.url, token) {
		t.Fatalf("the printed address has no token: %s", lt.url)
	}
	if !strings.HasPrefix(lt.url, "http://mailfs:"+token+"@127.0.0.1:") {
		t.Fatalf("the printed address: %s", lt.url)
	}
	var href string
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "hello", "-m", "x")
	lt.run(chromedp.Navigate(lt.url), chromedp.WaitVisible(`#mailboxes`),
		chromedp.Evaluate(`location.href`, &href))
	if strings.Contains(href, token) {
		t.Fatalf("the address bar holds the token: %s", href)
	}
	lt.run(chromedp.Navigate(strings.Replace(lt.url, "mailfs:"+token+"@", "", 1)+"/activity"), chromedp.WaitVisible(`h1`))
	lt.quit()
	var found []string
	filepath.WalkDir(lt.profile, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), "Cookies") {
			return nil
		}
		if strings.Contains(path, string(filepath.Separator)+"Sessions"+string(filepath.Separator)) {
			return nil // the tabs to restore after a crash: see the comment above
		}
		if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(token)) {
			found = append(found, strings.TrimPrefix(path, lt.profile))
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(lt.profile, "Default", "History")); err != nil {
		t.Fatalf("the browser wrote no history to look in: %v", err)
	}
	if len(found) > 0 {
		t.Errorf("the token is in the browser's profile: %v", found)
	}
}
