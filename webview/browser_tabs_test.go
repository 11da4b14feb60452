package webview_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Eight tabs of one browser all load and all go live: the tabs share one
// live feed (one holds the feed's lock, the others wait for it), so the
// browser's six connections to a host are never all held by feeds. A
// send reaches every tab, and when the tab holding the feed closes,
// another takes it over and the rest stay live.
func TestBrowserEightTabsAllLive(t *testing.T) {
	lt := newLiveTown(t)
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "first", "-m", "x")
	const n = 8
	tabs := make([]context.Context, n)
	closers := make([]func(), n)
	lt.run(chromedp.Navigate(lt.url + "/")) // the browser, and its first tab
	for i := range tabs {
		ctx, cancel := lt.ctx, func() {}
		if i > 0 { // another tab of the same browser
			ctx, cancel = chromedp.NewContext(lt.ctx)
			t.Cleanup(cancel)
		}
		tabs[i], closers[i] = ctx, cancel
		page := "/"
		if i%2 == 1 {
			page = "/box/toast"
		}
		if err := chromedp.Run(ctx, chromedp.Navigate(lt.url+page), chromedp.WaitVisible(`#main`),
			chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
			t.Fatalf("tab %d: %v", i+1, err)
		}
	}
	var locks []int
	if err := chromedp.Run(tabs[0], chromedp.Evaluate(`navigator.locks.query().then(function (s) {
			return [s.held.filter(function (l) { return l.name === "mailfs-live"; }).length,
				s.pending.filter(function (l) { return l.name === "mailfs-live"; }).length];
		})`, &locks, awaitPromise)); err != nil {
		t.Fatal(err)
	}
	if locks[0] != 1 || locks[1] != n-1 {
		t.Fatalf("the feed's lock: %d held, %d waiting; want 1 and %d", locks[0], locks[1], n-1)
	}
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "to every tab", "-m", "x")
	seen := func(tabs []context.Context, subject string) {
		t.Helper()
		for i, ctx := range tabs {
			if err := chromedp.Run(ctx, chromedp.Poll(fmt.Sprintf(`document.getElementById("main").textContent.indexOf(%q) >= 0 || document.querySelector("#box-toast td[data-col=unread]") !== null && document.querySelector("#box-toast td[data-col=unread]").textContent === %q`, subject, "2"), nil, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
				var state string
				chromedp.Run(ctx, chromedp.Evaluate(`location.href + " " + document.getElementById("live").textContent + " " + document.body.dataset.feed + " refreshes " + document.body.dataset.refreshes + " " + document.getElementById("main").textContent.replace(/\s+/g, " ").slice(0, 400)`, &state))
				t.Fatalf("tab %d did not show %q: %v (%s)", i+1, subject, err, state)
			}
		}
	}
	seen(tabs, "to every tab")
	// Close the leader: another tab takes the feed over.
	leader := -1
	for i, ctx := range tabs {
		var role string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.body.dataset.feed || ""`, &role)); err != nil {
			t.Fatal(err)
		}
		if role == "leader" {
			leader = i
		}
	}
	if leader < 0 {
		t.Fatal("no tab holds the feed")
	}
	if leader == 0 {
		// The first tab is the browser's own context: close it by leaving
		// the page instead, which lets its lock go as closing would.
		if err := chromedp.Run(tabs[0], chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
	} else {
		closers[leader]()
	}
	rest := append(append([]context.Context{}, tabs[:leader]...), tabs[leader+1:]...)
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "after the leader left", "-m", "x")
	for i, ctx := range rest {
		err := chromedp.Run(ctx, chromedp.Poll(`document.getElementById("main").textContent.indexOf("after the leader left") >= 0 || document.querySelector("#box-toast td[data-col=unread]") !== null && document.querySelector("#box-toast td[data-col=unread]").textContent === "3"`, nil, chromedp.WithPollingInterval(100*time.Millisecond)))
		if err != nil {
			t.Fatalf("tab %d after the leader closed: %v", i+1, err)
		}
	}
	if !strings.Contains(lt.mailfs("inbox", "toast"), "after the leader left") {
		t.Fatal("the send did not land")
	}
}

func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
