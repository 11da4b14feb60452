package webview_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A release asked for on a page that went stale — the claimant marked the
// item done after the question was shown — is refused by the server,
// saying who finished it; the finished item stays finished, and the next
// claim does not hand it out again. The page, updates held back while
// text is selected, still shows the question: the refusal is the
// server's, not the page's.
func TestBrowserStaleReleaseRefusedAfterMarkRead(t *testing.T) {
	lt := triageTown(t, "--as", "human")
	const item = "2026-01-01T00-00-00Z-mayor" // nux's stuck claim, WORK gt-400
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#stuck a[data-act=release]`), chromedp.Click(`#stuck a[data-act=release]`),
		chromedp.WaitVisible(`#confirm`),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.Evaluate(`(function () {
			var r = document.createRange(); r.selectNodeContents(document.querySelector("h1"));
			getSelection().removeAllRanges(); getSelection().addRange(r); return true;
		})()`, nil))
	lt.mailfs("mark-read", "nux", item)
	var refused string
	lt.run(chromedp.Poll(`document.getElementById("live").textContent.indexOf("updates wait while text is selected") >= 0`, nil),
		chromedp.Evaluate(`document.getElementById("act").submit()`, nil),
		chromedp.WaitVisible(`#error`), textOf(`#error`, &refused))
	if !strings.Contains(refused, "nux marked “WORK gt-400: flaky test” done (read)") {
		t.Fatalf("the stale release: %q", refused)
	}
	if got := lt.mailfs("claim", "queue:work", "--as", "toast", "--json"); !strings.Contains(got, "WORK gt-410") {
		t.Fatalf("the next claim handed out %s", got)
	}
	if audit := lt.mailfs("audit"); !strings.Contains(audit, " release ") || !strings.Contains(audit, "failed: nux marked") {
		t.Errorf("the refused release is not in the audit log as refused:\n%s", audit)
	}
	// Live, the question page itself turns into the refusal once the item
	// is done: it no longer offers to release finished work.
	lt.mailfs("send", "queue:work", "--from", "mayor", "-s", "WORK gt-420: next", "-m", "x")
	id := lt.mailfs("claim", "queue:work", "--as", "nux", "--id")
	lt.run(chromedp.Navigate(lt.url+"/act/release/nux/"+id), chromedp.WaitVisible(`#confirm`),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))
	lt.mailfs("mark-read", "nux", id)
	lt.run(chromedp.WaitVisible(`#error`), textOf(`#error`, &refused))
	if !strings.Contains(refused, "nux marked “WORK gt-420: next” done (read)") {
		t.Errorf("the question page after the mark read: %q", refused)
	}
}

// The reassign's choice starts blank and offers only the town's agents;
// a name the page did not offer (as a hand-made request would send) is
// refused with the agents there are, and no mailbox is made.
func TestBrowserReassignToAnUnknownNameRefused(t *testing.T) {
	lt := triageTown(t, "--as", "human")
	var chosen string
	var options []string
	lt.run(chromedp.Navigate(lt.url+"/act/reassign/nux/2026-01-01T00-00-00Z-mayor"), chromedp.WaitVisible(`#confirm`),
		chromedp.Value(`select[name=to]`, &chosen),
		chromedp.Evaluate(`Array.prototype.map.call(document.querySelectorAll("select[name=to] option"), function (o) { return o.value; })`, &options))
	if chosen != "" || strings.Join(options, ",") != ",toast" {
		t.Fatalf("the reassign offers %q, chosen %q", options, chosen)
	}
	var refused string
	lt.run(chromedp.Evaluate(`(function () {
			var s = document.querySelector("select[name=to]"), o = document.createElement("option");
			o.textContent = "humna"; s.appendChild(o); s.value = "humna"; return true;
		})()`, nil),
		chromedp.Click(`#confirm`), chromedp.WaitVisible(`#error`), textOf(`#error`, &refused))
	if !strings.Contains(refused, "there is no agent humna in this town: reassign to one of toast") {
		t.Fatalf("the reassign to humna: %q", refused)
	}
	if agents := lt.mailfs("agents"); strings.Contains(agents, "humna") {
		t.Errorf("a mailbox was made: %s", agents)
	}
}

// A channel folder without its configuration is shown as malformed on the
// overview and named on the activity page; both pages load, and the
// command line's channel list still lists the channels.
func TestBrowserMalformedChannelFolder(t *testing.T) {
	lt := newLiveTown(t)
	lt.mailfs("channel", "create", "merges")
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "hello", "-m", "x")
	if err := os.Mkdir(filepath.Join(lt.root, "state/channel/broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	var row, skipped, mailbox string
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#mailboxes`),
		textOf(`#channels tr.malformed`, &row), textOf(`#mailboxes #box-toast`, &mailbox))
	if !strings.Contains(row, "channel:broken") || !strings.Contains(row, "malformed") || !strings.Contains(mailbox, "toast") {
		t.Fatalf("the overview: channel row %q, toast's row %q", row, mailbox)
	}
	lt.run(chromedp.Navigate(lt.url+"/activity"), chromedp.WaitVisible(`#recent`), textOf(`#skipped`, &skipped))
	if !strings.Contains(skipped, "channel:broken") {
		t.Errorf("the activity page: %q", skipped)
	}
	if list := lt.mailfs("channel", "list"); !strings.Contains(list, "channel:merges") || !strings.Contains(list, "malformed") {
		t.Errorf("mailfs channel list:\n%s", list)
	}
}
