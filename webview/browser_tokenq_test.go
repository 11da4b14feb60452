package webview_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// An address with ?token= is exchanged for the cookie and a page that
// stands in at once for the address without it: no navigation entry of
// the tab holds the token — neither an entry's address nor the address it
// was asked for (a redirect's first address, which its reload goes back
// to) — nor does back lead to it, nor the browser's cache, nor any file
// of its profile but those named below. What the browser still keeps is
// its record of the address it was sent to, as of every address visited
// (History, the page's icon filed under it in Favicons, and the
// segmentation platform's UKM store): no server can take that back, which
// is why mailfs serve prints the token as the address's password instead
// (TestBrowserTokenLeavesNoTrace checks the whole profile for that form).
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
	// Every file the browser keeps is read. Only these may hold it:
	// the cookie it became, the tabs to restore (as with the printed
	// address), and the records of the address visited — History,
	// Favicons (the icon filed under that address) and the segmentation
	// platform's UKM store — which a browser writes for any page it
	// shows, whatever the server answers (a 303, a 4xx page or this
	// refresh alike; only a response that shows no page, a 204, leaves
	// none). Anything else (the cache, a second database) is a leak.
	known := []string{"/Default/History", "/Default/Favicons", "/segmentation_platform/ukm_db"}
	var kept []string
	filepath.Walk(lt.profile, func(path string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || strings.HasPrefix(fi.Name(), "Cookies") || strings.Contains(path, "/Sessions/") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte(token)) {
			return nil
		}
		rel := strings.TrimPrefix(path, lt.profile)
		if slices.Contains(known, rel) {
			kept = append(kept, rel)
		} else {
			t.Errorf("the token is in the browser's %s", rel)
		}
		return nil
	})
	t.Logf("the visited address, token and all, is in %v: docs/operations.md says so", kept)
	if _, err := os.Stat(filepath.Join(lt.profile, "Default", "Cache")); err != nil {
		t.Errorf("the browser wrote no cache to look in: %v", err)
	}
}
