package webview_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// phonePages are the pages the phone and accessibility tests visit in the
// triage town (as human): every kind the overseer reads.
var phonePages = []string{
	"/", "/activity", "/search?q=gt-41", "/search?q=flaky+from:mayor", "/box/toast", "/box/queue:work", "/box/queue:work?claimed=1",
	"/box/gastown.furiosa-the-long-named", "/msg/nux/2026-01-01T00-00-00Z-mayor", "/act/reassign/nux/2026-01-01T00-00-00Z-mayor",
}

// phoneTown is the triage town with a long agent name, long subjects and
// a snippet to mark, as a phone must show them.
func phoneTown(t *testing.T) *liveTown {
	lt := triageTown(t, "--as", "human")
	long := "WORK gt-411: rebase the polecat branch onto main and run the flaky integration suite again"
	lt.mailfs("send", "gastown.furiosa-the-long-named", "--from", "mayor", "--priority", "high", "-s", long, "-m", "the flaky suite fails on main about once in ten runs")
	lt.mailfs("send", "toast", "--from", "gastown.furiosa-the-long-named", "-s", "Re: "+long, "-m", "on it")
	lt.mailfs("send", "queue:work", "--from", "mayor", "-s", "WORK gt-412: waiting too", "-m", "x")
	lt.mailfs("claim", "queue:work", "--as", "gastown.furiosa-the-long-named")
	return lt
}

// At 360 px every page fits the screen (no sideways scrolling, no table
// wider than its place), agent names break only at their dots and dashes,
// and what a thumb taps (actions, tabs, the header's links, buttons,
// page links) is at least 44 px tall.
func TestBrowserPhoneFitsAt360(t *testing.T) {
	lt := phoneTown(t)
	lt.run(chromedp.EmulateViewport(360, 740))
	for _, page := range phonePages {
		var r struct {
			Width, Scroll float64
			Wide, Small   []string
			Broken        []string
		}
		lt.run(chromedp.Navigate(lt.url+page), chromedp.WaitVisible(`#main`), chromedp.Evaluate(`(function () {
			var out = {Width: innerWidth, Scroll: document.documentElement.scrollWidth, Wide: [], Small: [], Broken: []};
			document.querySelectorAll("table").forEach(function (t) {
				var box = t.parentElement.getBoundingClientRect();
				if (t.getBoundingClientRect().width > Math.min(box.width, innerWidth) + 0.5) out.Wide.push((t.id || t.className) + " " + Math.round(t.getBoundingClientRect().width));
			});
			document.querySelectorAll("a.act, header a, .tabs a, .pager a, button, select, input:not([type=hidden]):not([type=checkbox])").forEach(function (a) {
				var r = a.getBoundingClientRect();
				if (r.height < 44 - 0.5 && r.width > 0) out.Small.push(a.tagName + " " + a.textContent.trim() + " " + Math.round(r.height));
			});
			document.querySelectorAll("a.agent").forEach(function (a) {
				var text = a.textContent;
				// a break mid-word: a line of the name ending in a letter or
				// digit followed by one on the next line
				var lines = lineEnds(a);
				for (var j = 0; j < lines.length; j++) if (/[a-z0-9]$/.test(lines[j])) out.Broken.push(text);
			});
			function lineEnds(el) {
				var w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT), n, chars = [];
				while ((n = w.nextNode())) for (var i = 0; i < n.length; i++) chars.push([n, i]);
				var ends = [], top = null, line = "";
				var rg = document.createRange();
				for (var k = 0; k < chars.length; k++) {
					rg.setStart(chars[k][0], chars[k][1]); rg.setEnd(chars[k][0], chars[k][1] + 1);
					var t = rg.getBoundingClientRect().top;
					if (top !== null && Math.abs(t - top) > 2) { ends.push(line); line = ""; }
					top = t; line += chars[k][0].data[chars[k][1]];
				}
				return ends;
			}
			return out;
		})()`, &r))
		if r.Scroll > r.Width+0.5 || len(r.Wide) > 0 {
			t.Errorf("%s at 360 px: the page is %.0f px wide in %.0f; tables wider than their place: %v", page, r.Scroll, r.Width, r.Wide)
		}
		if len(r.Small) > 0 {
			t.Errorf("%s at 360 px: tap targets under 44 px: %v", page, r.Small)
		}
		if len(r.Broken) > 0 {
			t.Errorf("%s at 360 px: agent names broken mid-word: %v", page, r.Broken)
		}
	}
}

// axeSource finds axe-core where .ci/run installs it (or $MAILFS_AXE).
func axeSource(t *testing.T) string {
	paths := []string{os.Getenv("MAILFS_AXE")}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache")
		}
	}
	paths = append(paths, filepath.Join(cache, "mailfs-ci/runtimes/node_modules/axe-core/axe.min.js"))
	for _, p := range paths {
		if p == "" {
			continue
		}
		if data, err := os.ReadFile(p); err == nil {
			return string(data)
		}
	}
	t.Skip("skipping the accessibility test: no axe-core (npm install axe-core into ~/.cache/mailfs-ci/runtimes, as .ci/run does, or set MAILFS_AXE)")
	return ""
}

// axe-core finds no serious or critical violation on any page, on a desk
// and on a phone.
func TestBrowserAxeFindsNothingSerious(t *testing.T) {
	lt := phoneTown(t)
	axe := axeSource(t)
	for _, vp := range [][2]int64{{1400, 900}, {360, 740}} {
		lt.run(chromedp.EmulateViewport(vp[0], vp[1]))
		for _, page := range phonePages {
			var out string
			lt.run(chromedp.Navigate(lt.url+page), chromedp.WaitVisible(`#main`),
				chromedp.Evaluate(axe, nil),
				chromedp.Evaluate(`axe.run(document, {resultTypes: ["violations"]}).then(function (r) {
					return JSON.stringify(r.violations.filter(function (v) { return v.impact === "serious" || v.impact === "critical"; }).map(function (v) {
						return {id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(function (n) { return n.target.join(" ") + ": " + n.failureSummary; })};
					}));
				})`, &out, awaitPromise))
			var violations []any
			if err := json.Unmarshal([]byte(out), &violations); err != nil {
				t.Fatal(err)
			}
			if len(violations) > 0 {
				pretty, _ := json.MarshalIndent(violations, "", "  ")
				t.Errorf("%s at %d px: %d serious or critical: %s", page, vp[0], len(violations), strings.ReplaceAll(string(pretty), "\\n", " "))
			}
		}
	}
}
