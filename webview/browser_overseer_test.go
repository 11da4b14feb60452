package webview_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// firstScreen reports, for each selector, whether its element begins
// within the first screen (no scrolling) and lies within its width.
func firstScreen(lt *liveTown, sels ...string) []string {
	var off []string
	for _, sel := range sels {
		var r []float64
		lt.run(chromedp.Evaluate(`(function () {
			var e = document.querySelector(`+"`"+sel+"`"+`);
			if (!e) return [-1, -1, -1, innerHeight, innerWidth];
			var r = e.getBoundingClientRect();
			return [r.top, r.left, r.right, innerHeight, innerWidth];
		})()`, &r))
		if r[0] < 0 || r[0] >= r[3] || r[1] < 0 || r[2] > r[4]+0.5 {
			off = append(off, sel)
		}
	}
	return off
}

// The overseer's first screen, on a desk and on a phone, answers "what is
// stuck and who is waited on": the stuck claim with its actions, and the
// waiting-on table, without scrolling.
func TestBrowserStuckWorkOnTheFirstScreen(t *testing.T) {
	lt := triageTown(t, "--as", "human")
	for _, vp := range []struct {
		w, h int64
		shot string
	}{{1400, 900, "overseer.png"}, {390, 844, "overseer-phone.png"}} {
		lt.run(chromedp.EmulateViewport(vp.w, vp.h), chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#stuck`))
		if off := firstScreen(lt, `#stuck tr[data-agent=nux]`, `#stuck tr[data-agent=nux] a[data-act=nudge]`, `#waiting tr[data-agent=toast]`); len(off) > 0 {
			t.Errorf("at %d×%d, not on the first screen: %v", vp.w, vp.h, off)
		}
		lt.shot(vp.shot)
	}
}

// Release, reassign and nudge, each clicked and confirmed in a real
// browser: each is done (as the command line sees it afterwards), the
// page it returns to says so, and the audit log has it.
func TestBrowserReleaseReassignNudge(t *testing.T) {
	lt := triageTown(t, "--as", "human")
	lt.mailfs("claim", "queue:work", "--as", "toast") // WORK gt-410, fresh
	lt.run(chromedp.EmulateViewport(1400, 900))
	confirm := func(from, link string, fill ...chromedp.Action) string {
		t.Helper()
		var ask, done string
		steps := []chromedp.Action{chromedp.WaitVisible(link), chromedp.Click(link), chromedp.WaitVisible(`#confirm`), textOf(`h1`, &ask)}
		steps = append(steps, fill...)
		if strings.Contains(link, "reassign") {
			steps = append(steps, lt.shotAction("act.png"))
		}
		steps = append(steps, chromedp.Click(`#confirm`), chromedp.WaitVisible(`#done`), textOf(`#done`, &done))
		lt.form(from, steps...)
		if !strings.HasSuffix(ask, "this claim?") {
			t.Errorf("the question: %q", ask)
		}
		return done
	}

	done := confirm(lt.url+"/", `#stuck tr[data-agent=nux] a[data-act=release]`)
	if !strings.Contains(done, "human") || !strings.Contains(done, "released nux's") {
		t.Errorf("after release: %q", done)
	}
	if q := lt.mailfs("queue", "show", "work"); !strings.Contains(q, "WORK gt-400: flaky test") {
		t.Errorf("the released item is not waiting in the queue:\n%s", q)
	}

	done = confirm(lt.url+"/", `#claimed tr[data-agent=toast] a[data-act=reassign]`, chromedp.SetValue(`select[name=to]`, "nux"))
	if !strings.Contains(done, "reassigned toast's") || !strings.Contains(done, "to nux") {
		t.Errorf("after reassign: %q", done)
	}
	id := lt.mailfs("inbox", "nux", "--json")
	if !strings.Contains(id, "WORK gt-410: waiting") || !strings.Contains(id, `"claim":{"agent":"nux"`) {
		t.Errorf("nux's inbox after the reassign:\n%s", id)
	}

	var item string
	lt.run(chromedp.Navigate(lt.url+"/box/nux"), chromedp.WaitVisible(`#messages`))
	lt.run(chromedp.Click(`#messages a`), chromedp.WaitVisible(`#claim`), textOf(`#claim`, &item))
	if !strings.Contains(item, "claimed by nux") {
		t.Errorf("the item's claim: %q", item)
	}
	var here string
	lt.run(chromedp.Evaluate(`location.pathname`, &here))
	done = confirm(lt.url+here, `#claim a[data-act=nudge]`, chromedp.SetValue(`textarea[name=note]`, "gt-410 is yours now"))
	if !strings.Contains(done, "nudged nux's") || !strings.Contains(done, "gt-410 is yours now") {
		t.Errorf("after nudge: %q", done)
	}
	if n := lt.mailfs("drain", "nux"); !strings.Contains(n, "gt-410 is yours now") {
		t.Errorf("nux's nudges: %q", n)
	}

	audit := lt.mailfs("audit")
	for _, want := range []string{"release", "reassign", "nudge"} {
		if !strings.Contains(audit, " human ") || !strings.Contains(audit, " "+want+" ") {
			t.Errorf("the audit log has no %s by human:\n%s", want, audit)
		}
	}
	if strings.Count(audit, "done") != 3 {
		t.Errorf("the audit log:\n%s", audit)
	}
}

// A part of the page the person is using that changes on the server is
// kept as they left it, and the badge says updates wait; once they are
// done with it, it is brought up to date.
func TestBrowserUpdatesWaitOnAFormInUse(t *testing.T) {
	lt := triageTown(t, "--as", "human")
	lt.run(chromedp.Navigate(lt.url+"/act/reassign/nux/2026-01-01T00-00-00Z-mayor"), chromedp.WaitVisible(`#confirm`),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.SetValue(`select[name=to]`, "toast"))
	lt.mailfs("send", "furiosa", "--from", "mayor", "-s", "welcome", "-m", "x") // a new agent: a new choice
	var chosen string
	var options int
	lt.run(chromedp.Poll(`document.getElementById("live").textContent === "live — updates wait while you write"`, nil),
		chromedp.Value(`select[name=to]`, &chosen),
		chromedp.Evaluate(`document.querySelectorAll("select[name=to] option").length`, &options))
	if chosen != "toast" || options != 2 { // "choose an agent", toast
		t.Fatalf("while in use: chose %q among %d options", chosen, options)
	}
	// Back to the choice as served: the form is up to date at once.
	lt.run(chromedp.Evaluate(`(function () {
			var s = document.querySelector("select[name=to]");
			s.selectedIndex = -1;
			for (var i = 0; i < s.options.length; i++) s.options[i].selected = s.options[i].defaultSelected;
			return s.dispatchEvent(new Event("change", {bubbles: true}));
		})()`, nil),
		chromedp.Poll(`document.querySelectorAll("select[name=to] option").length === 3`, nil),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))
}

// On a phone, search results and the activity lists keep the subject
// readable (at least 40% of the screen's width, the page not scrolling
// sideways), agent names do not break mid-word, and a mailbox's list
// shows a priority that is not normal beside the subject.
func TestBrowserPhoneReadsSearchAndActivity(t *testing.T) {
	lt := triageTown(t)
	long := "WORK gt-411: rebase the polecat branch onto main and run the flaky integration suite again"
	lt.mailfs("send", "gastown.furiosa-the-long-named", "--from", "mayor", "--priority", "high", "-s", long, "-m", "x")
	lt.run(chromedp.EmulateViewport(1400, 900), chromedp.Navigate(lt.url+"/search?q=gt-41+from:mayor"), chromedp.WaitVisible(`#results`), lt.shotAction("search.png"))
	lt.run(chromedp.EmulateViewport(390, 844))
	for _, page := range []struct{ url, table, col string }{
		{"/search?q=gt-411", "#results", "4"},
		{"/activity", "#recent", "4"},
		{"/activity", "#awaiting", "4"},
	} {
		var m []float64
		lt.run(chromedp.Navigate(lt.url+page.url), chromedp.WaitVisible(page.table),
			chromedp.Evaluate(`(function () {
				var rows = document.querySelectorAll("`+page.table+` tbody tr"), min = 1e9;
				rows.forEach(function (r) { var w = r.querySelector("td:nth-child(`+page.col+`)").getBoundingClientRect().width; if (w < min) min = w; });
				return [min, innerWidth, document.documentElement.scrollWidth];
			})()`, &m))
		if m[0] < 0.4*m[1] || m[2] > m[1] {
			t.Errorf("%s %s at 390 px: the narrowest subject is %.0f px of %.0f; the page is %.0f wide", page.url, page.table, m[0], m[1], m[2])
		}
	}
	var broken []string
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#mailboxes`),
		chromedp.Evaluate(`(function () {
			var out = [];
			document.querySelectorAll("#mailboxes td:first-child a").forEach(function (a) {
				var r = document.createRange(); r.selectNodeContents(a);
				if (r.getClientRects().length > 1 && a.textContent.indexOf("-") < 0 && a.textContent.indexOf(".") < 0) out.push(a.textContent);
			});
			return out;
		})()`, &broken))
	if len(broken) > 0 {
		t.Errorf("agent names broken mid-word at 390 px: %v", broken)
	}
	var prio string
	lt.run(chromedp.Navigate(lt.url+"/box/gastown.furiosa-the-long-named"), chromedp.WaitVisible(`#messages`),
		textOf(`#messages .prio`, &prio))
	if prio != "high" {
		t.Errorf("the priority beside the subject on a phone: %q", prio)
	}
}
