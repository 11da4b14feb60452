package webview_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// An address with ?token= is exchanged for the cookie and a page that
// stands in at once for the address without it: no navigation entry of
// the tab holds the token — neither an entry's address nor the address it
// was asked for (a redirect's first address, which its reload goes back
// to) — nor does back lead to it, nor the browser's cache. What the
// browser still keeps is its History database's record of the address it
// was sent to, as of every address visited, and the page's icon filed
// under that address (Favicons): no server can take
// that back, which is why mailfs serve prints the token as the address's
// password instead (TestBrowserTokenLeavesNoTrace checks the whole profile
// for that form).
func TestBrowserQueryTokenIsExchanged(t *testing.T) {
	const token = "s3cret-token-for-the-query-test"
	lt := newLiveTown(t, "--token", token)
	plain := strings.Replace(lt.url, "mailfs:"+token+"@", "", 1)
	var href string
	var entries []string
	navigation := chromedp.ActionFunc(func(ctx context.Context) error {
		_, es, err := page.GetNavigationHistory().Do(ctx)
		for _, e := range es {
			entries = append(entries, e.URL, e.UserTypedURL)
		}
		return err
	})
	lt.run(chromedp.Navigate(plain+"/activity?token="+token), chromedp.WaitVisible(`#main`),
		chromedp.Evaluate(`location.href`, &href), navigation)
	if strings.Contains(href, token) || !strings.HasSuffix(href, "/activity") {
		t.Fatalf("the address bar: %s", href)
	}
	lt.run(chromedp.Navigate(plain+"/search?q=x"), chromedp.WaitVisible(`h1`), chromedp.NavigateBack(), chromedp.WaitVisible(`#main`),
		chromedp.Evaluate(`location.href`, &href), navigation)
	if strings.Contains(href, token) {
		t.Fatalf("back went to the address with the token: %s", href)
	}
	if len(entries) == 0 {
		t.Fatal("the tab has no navigation entries")
	}
	for _, e := range entries {
		if strings.Contains(e, token) {
			t.Errorf("a navigation entry holds the token: %s", e)
		}
	}
	lt.quit()
	for _, kept := range []string{"Cache"} {
		filepath.Walk(filepath.Join(lt.profile, "Default", kept), func(path string, fi os.FileInfo, err error) error {
			if err != nil || fi.IsDir() {
				return nil
			}
			if data, err := os.ReadFile(path); err == nil && bytes.Contains(data, []byte(token)) {
				t.Errorf("the token is in the browser's %s: %s", kept, strings.TrimPrefix(path, lt.profile))
			}
			return nil
		})
	}
	if _, err := os.Stat(filepath.Join(lt.profile, "Default", "Cache")); err != nil {
		t.Errorf("the browser wrote no cache to look in: %v", err)
	}
}
