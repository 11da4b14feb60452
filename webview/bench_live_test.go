package webview_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mailfs/mailfs/maildir"
)

// cpuTicks is the CPU time (user and system, in clock ticks of 1/100 s)
// process pid has used.
func cpuTicks(b testing.TB, pid int) int {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return utime + stime
}

// BenchmarkLiveTabs is the server's CPU while pages are open: 15 sends at
// one a second to a town of 100 agents × 500 messages (10,000 unread, as
// BenchmarkOverview), with 4 overview tabs open, against
// its floor, the same sends with no tab open (the watcher alone). It
// reports the server's CPU as a percentage of one core, and the page
// refetches per send per tab (1 is the least a live page can do).
// Headless Chromium runs it; without one it is skipped.
func BenchmarkLiveTabs(b *testing.B) {
	lt := newLiveTown(b)
	lt.run(chromedp.Navigate("about:blank")) // the browser starts; tabs open in it
	agents := 100
	if testing.Short() {
		agents = 10
	}
	fillTown(b, lt.root, agents, 500, 100)
	time.Sleep(maildir.RacyWindow) // the folders age past the racy window, as a live town's have
	// A server started on the town as it is (the one newLiveTown started
	// would take the fill for 50,000 new messages).
	lt.stop()
	lt.url = lt.serve("127.0.0.1:0")
	sends := func() float64 {
		start, t0 := cpuTicks(b, lt.pid), time.Now()
		for i := range 15 {
			next := t0.Add(time.Duration(i+1) * time.Second)
			lt.mailfs("send", fmt.Sprintf("agent%02d", i), "--from", "mayor", "-s", "live", "-m", "x")
			time.Sleep(time.Until(next))
		}
		time.Sleep(2 * time.Second)                                          // the last refetches
		return float64(cpuTicks(b, lt.pid)-start) / time.Since(t0).Seconds() // ticks/s = % of a core
	}
	// The server's first look at a town it has not seen (its watcher's
	// scan, the folder indexes built) is not the steady state measured.
	sends()
	for b.Loop() {
		idle := sends()
		var tabs []contextTab
		for range 4 {
			ctx, cancel := chromedp.NewContext(lt.ctx)
			if err := chromedp.Run(ctx, chromedp.Navigate(lt.url+"/"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil)); err != nil {
				b.Fatal(err)
			}
			tabs = append(tabs, contextTab{ctx, cancel})
		}
		open := sends()
		refetches := 0
		for _, tab := range tabs {
			var n string
			if err := chromedp.Run(tab.ctx, chromedp.Evaluate(`document.body.dataset.refreshes || "0"`, &n)); err != nil {
				b.Fatal(err)
			}
			k, _ := strconv.Atoi(n)
			refetches += k
			tab.cancel()
		}
		b.ReportMetric(open, "cpu%/4tabs")
		b.ReportMetric(idle, "cpu%/notab")
		b.ReportMetric(float64(refetches)/15/4, "refetches/send/tab")
	}
}

type contextTab struct {
	ctx    context.Context
	cancel context.CancelFunc
}
