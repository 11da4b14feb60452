package webview_test

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// drop writes a message file into a mailbox of the live town, as a
// script would, under the name it chose.
func (lt *liveTown) drop(box, name, content string) {
	lt.t.Helper()
	dropFile(lt.t, lt.root, box, name, content)
}

// triageTown is a town with what an overseer looks for: a queue item
// claimed three days ago and not done, and urgent mail unread for twenty
// minutes.
func triageTown(t testing.TB, serveArgs ...string) *liveTown {
	lt := newLiveTown(t, serveArgs...)
	lt.mailfs("queue", "create", "work")
	lt.mailfs("send", "queue:work", "--from", "mayor", "-s", "WORK gt-410: waiting", "-m", "x")
	stamp := func(d time.Duration) string { return time.Now().Add(-d).UTC().Format(time.RFC3339Nano) }
	lt.drop("nux", "2026-01-01T00-00-00Z-mayor.json", fmt.Sprintf(`{"from":"mayor","subject":"WORK gt-400: flaky test","timestamp":%q,"claim":{"queue":"queue:work","agent":"nux","at":%q}}`, stamp(73*time.Hour), stamp(72*time.Hour)))
	lt.drop("toast", "2026-01-01T00-00-01Z-witness.json", fmt.Sprintf(`{"from":"witness","priority":"urgent","subject":"MERGE_FAILED gt-401","timestamp":%q}`, stamp(20*time.Minute)))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "WORK gt-402: docs", "-m", "x")
	return lt
}

// The overseer's first questions have answers on the overview: what is
// stuck and with whom (the claim, its claimant, its age; also on the
// queue's page), and who is waited on (urgent mail unread past its time,
// with its sender).
func TestBrowserShowsStuckWorkAndWhoIsWaitedOn(t *testing.T) {
	lt := triageTown(t)
	var claim, waiting, queueClaim string
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#mailboxes`),
		textOf(`table.claims tr.stuck[data-agent=nux]`, &claim),
		textOf(`#waiting tr[data-agent=toast]`, &waiting))
	if !strings.Contains(claim, "WORK gt-400: flaky test") || !strings.Contains(claim, "3d") || !strings.Contains(claim, "stuck") {
		t.Errorf("the stuck claim on the overview: %q", claim)
	}
	if !strings.Contains(waiting, "MERGE_FAILED gt-401") || !strings.Contains(waiting, "witness") || !strings.Contains(waiting, "20m") {
		t.Errorf("waiting on toast: %q", waiting)
	}
	lt.shot("triage.png")
	lt.run(chromedp.Navigate(lt.url+"/box/queue:work"), chromedp.WaitVisible(`#messages`),
		textOf(`table.claims tr.stuck[data-agent=nux]`, &queueClaim))
	if !strings.Contains(queueClaim, "WORK gt-400: flaky test") || !strings.Contains(queueClaim, "nux") || !strings.Contains(queueClaim, "3d") {
		t.Errorf("the stuck claim on the queue's page: %q", queueClaim)
	}
}

// At 390×844, a phone, every overview column that carries a badge — the
// urgent and unread counts, the oldest unread and its marks — is on the
// screen: the page's screenshot is the screen's width (nothing to scroll
// sideways), and each badge lies inside it.
func TestBrowserPhoneShowsEveryBadge(t *testing.T) {
	lt := triageTown(t)
	var shot []byte
	var outside []string
	lt.run(chromedp.EmulateViewport(390, 844), chromedp.Navigate(lt.url+"/"), chromedp.WaitVisible(`#mailboxes`),
		chromedp.Evaluate(`(function () {
			var out = [];
			var sels = ["#mailboxes td[data-col=urgent]", "#mailboxes td[data-col=unread]", "#mailboxes td[data-col=oldest]",
				"#mailboxes .mark", "#waiting .mark", "table.claims .mark", "#queues td[data-col=claimed]"];
			sels.forEach(function (s) {
				var els = document.querySelectorAll(s);
				if (els.length === 0) out.push(s + ": none");
				els.forEach(function (e) {
					var r = e.getBoundingClientRect();
					if (r.width === 0 || r.left < 0 || r.right > window.innerWidth + 0.5) out.push(s + " at " + r.left + "–" + r.right);
				});
			});
			return out;
		})()`, &outside),
		chromedp.FullScreenshot(&shot, 100)) // 100: a PNG
	for _, o := range outside {
		t.Errorf("off the screen at 390 px: %s", o)
	}
	img, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if img.Width != 390 {
		t.Errorf("the screenshot is %d px wide, not the phone's 390: the page scrolls sideways", img.Width)
	}
	if *screenshots != "" {
		if err := os.WriteFile(filepath.Join(*screenshots, "phone.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A list keeps the subject on the screen, wrapped.
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "WORK gt-403: rebase the polecat branch onto main and run the flaky integration suite again", "-m", "x")
	var subject []float64
	lt.run(chromedp.Navigate(lt.url+"/box/toast"), chromedp.WaitVisible(`#messages`),
		chromedp.Evaluate(`(function () {
			var r = document.querySelector("#messages td:nth-child(4)").getBoundingClientRect();
			return [r.left, r.right, window.innerWidth, document.documentElement.scrollWidth];
		})()`, &subject))
	if len(subject) != 4 || subject[0] < 0 || subject[1] > subject[2]+0.5 || subject[3] > subject[2] {
		t.Errorf("the subject column at 390 px: left, right, screen, page width = %v", subject)
	}
}

// Mark read and Archive, clicked in a real browser on messages a script
// named dup?x and arc#y, act on exactly those: not on dup and arc.
func TestBrowserActionsHitTheirMessage(t *testing.T) {
	lt := newLiveTown(t, "--as", "human")
	for _, name := range []string{"dup", "dup?x", "arc", "arc#y"} {
		lt.drop("human", name+".json", `{"from":"script","subject":"`+name+`"}`)
	}
	lt.form(lt.url+"/msg/human/dup%3Fx",
		chromedp.Click(`//button[text()="Mark read"]`),
		chromedp.WaitVisible(`//h1[@id="subject"]`), chromedp.WaitNotPresent(`//button[text()="Mark read"]`))
	lt.form(lt.url+"/msg/human/arc%23y",
		chromedp.Click(`//button[text()="Archive"]`),
		chromedp.WaitVisible(`//h1[text()="human"]`))
	state := func(id string) string {
		return lt.mailfs("show", "human", id, "--json")
	}
	if s := state("dup?x"); !strings.Contains(s, `"read":true`) {
		t.Errorf("dup?x after Mark read: %s", s)
	}
	if s := state("dup"); strings.Contains(s, `"read":true`) {
		t.Errorf("Mark read on dup?x marked dup: %s", s)
	}
	archived, _ := filepath.Glob(filepath.Join(lt.root, "state/mail/human/archive/*.json"))
	if len(archived) != 1 || filepath.Base(archived[0]) != "arc#y.json" {
		t.Errorf("archived: %v, want arc#y.json alone", archived)
	}
}

// Keyboard focus stays where it was across a live update: a person
// tabbing through the overview is not thrown back to the top of the page.
func TestBrowserFocusStaysAcrossALiveUpdate(t *testing.T) {
	lt := newLiveTown(t)
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "one", "-m", "x")
	lt.mailfs("send", "nux", "--from", "mayor", "-s", "one", "-m", "x")
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.Evaluate(`document.querySelector("#box-nux a").focus()`, nil),
		chromedp.Evaluate(`window.oldMain = document.getElementById("main"); window.oldTable = document.getElementById("mailboxes")`, nil))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "two", "-m", "x")
	var focused string
	var swapped bool
	lt.run(chromedp.Poll(`document.querySelector("#box-toast td[data-col=unread]").textContent === "2"`, nil),
		chromedp.Evaluate(`window.oldMain === document.getElementById("main") && window.oldTable !== document.getElementById("mailboxes")`, &swapped),
		chromedp.Evaluate(`document.activeElement ? (document.activeElement.getAttribute("href") || document.activeElement.tagName) : ""`, &focused))
	if !swapped {
		t.Fatal("the page was not updated in place, the changed part replaced")
	}
	if focused != "/box/nux" {
		t.Errorf("focus after the update: %q, want the link to /box/nux", focused)
	}
}

// A send is one refetch of an open page, not two: its mail event, and the
// change its new file made to the folder, stand for the same folder print,
// and the page already showing that print does not fetch itself again.
func TestBrowserOneRefetchPerSend(t *testing.T) {
	lt := newLiveTown(t)
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "one", "-m", "x")
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "two", "-m", "x")
	var refreshes string
	// The watch for other changes looks each second: three of its looks
	// pass before the count is read.
	lt.run(chromedp.Poll(`document.querySelector("#box-toast td[data-col=unread]").textContent === "2"`, nil),
		chromedp.Sleep(3*time.Second),
		chromedp.Evaluate(`document.body.dataset.refreshes || "0"`, &refreshes))
	if refreshes != "1" {
		t.Errorf("one send refetched the page %s times", refreshes)
	}
}

// Times are shown in the reader's own zone: a message sent at 03:04:05
// UTC reads 12:04:05 in Tokyo; an age keeps its text, with the local time
// as its title.
func TestBrowserShowsLocalTimes(t *testing.T) {
	lt := newLiveTown(t)
	lt.drop("toast", "2026-01-02T03-04-05Z-mayor.json", `{"from":"mayor","subject":"at three","timestamp":"2026-01-02T03:04:05Z"}`)
	var sent, ageTitle string
	lt.run(emulation.SetTimezoneOverride("Asia/Tokyo"),
		chromedp.Navigate(lt.url+"/msg/toast/2026-01-02T03-04-05Z-mayor"), chromedp.WaitVisible(`#subject`),
		textOf(`time.when`, &sent),
		chromedp.Navigate(lt.url+"/box/toast?all=1"), chromedp.WaitVisible(`#messages`),
		chromedp.Evaluate(`document.querySelector("#messages time").title`, &ageTitle))
	if !strings.Contains(sent, "12:04:05") {
		t.Errorf("sent at 03:04:05Z reads %q in Tokyo", sent)
	}
	if !strings.Contains(ageTitle, "12:04:05") {
		t.Errorf("the age's title reads %q in Tokyo", ageTitle)
	}
}
