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

// An address with ?token= is exchanged for the cookie and the page's own
// address: the token leaves the address bar and the session's history
// (back goes to no address with it), and the redirect is not cached. The
// browser's History database and favicons still record the address it
// was given, as they do every address visited — no server can take that
// back, which is why mailfs serve prints the token as the address's
// password instead (TestBrowserTokenLeavesNoTrace).
func TestBrowserQueryTokenIsExchanged(t *testing.T) {
	const token = "s3cret-token-for-the-query-test"
	lt := newLiveTown(t, "--token", token)
	plain := strings.Replace(lt.url, "mailfs:"+token+"@", "", 1)
	var href string
	var entries int
	lt.run(chromedp.Navigate(plain+"/?token="+token), chromedp.WaitVisible(`#main`),
		chromedp.Evaluate(`location.href`, &href), chromedp.Evaluate(`history.length`, &entries))
	if strings.Contains(href, token) {
		t.Fatalf("the address bar holds the token: %s", href)
	}
	lt.run(chromedp.Navigate(plain+"/activity"), chromedp.WaitVisible(`h1`), chromedp.NavigateBack(), chromedp.WaitVisible(`#main`),
		chromedp.Evaluate(`location.href`, &href))
	if strings.Contains(href, token) {
		t.Fatalf("back went to the address with the token: %s", href)
	}
	lt.quit()
	filepath.WalkDir(filepath.Join(lt.profile, "Default", "Cache"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(token)) {
			t.Errorf("the token is in the browser's cache: %s", strings.TrimPrefix(path, lt.profile))
		}
		return nil
	})
}
