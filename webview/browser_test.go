package webview_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mailfs/mailfs/internal/leakcheck"
)

// These tests drive headless Chromium against the real server (a
// "mailfs serve" process) on a scratch town, and send mail with the real
// command line. Without Chromium they are skipped; .ci/run installs it.

var screenshots = flag.String("screenshots", "", "write the README's screenshots into this folder")

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// mailfsBin builds the mailfs and mailfs-serve commands once for the
// browser tests, and returns mailfs.
func mailfsBin(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mailfs-webview-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mailfs") // mailfs serve runs the mailfs-serve beside it
		out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", dir+"/", "../cmd/mailfs", "../cmd/mailfs-serve").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building mailfs: %v", buildErr)
	}
	return binPath
}

func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("skipping the browser tests: no Chromium on $PATH (apt install chromium; .ci/run installs it)")
	return ""
}

// liveTown is a scratch root served by a real "mailfs serve" process,
// and a headless browser.
type liveTown struct {
	t    testing.TB
	pid  int // the server's process
	root string
	bin  string
	url  string
	ctx  context.Context
	stop func() // stops the server

	profile string // the browser's profile folder, removed after the test
	quit    func() // closes the browser (its profile written out)
}

func newLiveTown(t testing.TB, serveArgs ...string) *liveTown {
	t.Helper()
	browser := chromium(t)
	leakcheck.Check(t) // chromedp's goroutines end with the browser; a server's wait with it
	lt := &liveTown{t: t, root: filepath.Join(t.TempDir(), ".chipset"), bin: mailfsBin(t)}
	lt.mailfs("init")

	lt.url = lt.serve("127.0.0.1:0", serveArgs...)

	// The profile is removed after the browser, not by t.TempDir: Chromium
	// may still be writing it as its process ends.
	profile, err := os.MkdirTemp("", "mailfs-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(profile), chromedp.WindowSize(1000, 760))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute) // eight tabs on two busy cores take most of a minute
	lt.profile = profile
	var once sync.Once
	lt.quit = func() {
		once.Do(func() {
			chromedp.Cancel(ctx) // Browser.close: the browser writes its profile out and exits
			cancelTimeout()
			cancelCtx()
			cancelAlloc()
		})
	}
	t.Cleanup(func() {
		lt.quit()
		for range 3 {
			if os.RemoveAll(profile) == nil {
				break
			}
		}
	})
	lt.ctx = ctx
	return lt
}

// serve starts "mailfs serve" on addr and returns the address it printed;
// the test's end stops it with ^C, which must be a clean exit.
func (lt *liveTown) serve(addr string, args ...string) string {
	t := lt.t
	t.Helper()
	cmd := exec.Command(lt.bin, append([]string{"--root", lt.root, "serve", "--addr", addr}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lt.pid = cmd.Process.Pid // mailfs serve execs mailfs-serve in its place
	lt.stop = func() {
		cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("mailfs serve after ^C: %v", err)
		}
		lt.stop = func() {}
	}
	t.Cleanup(func() { lt.stop() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("mailfs serve printed no address: %v", err)
	}
	return strings.TrimRight(strings.TrimSpace(line), "/")
}

// mailfs runs the command line against the town and returns its output.
func (lt *liveTown) mailfs(args ...string) string {
	lt.t.Helper()
	out, err := exec.Command(lt.bin, append([]string{"--root", lt.root}, args...)...).Output()
	if err != nil {
		lt.t.Fatalf("mailfs %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func (lt *liveTown) run(actions ...chromedp.Action) {
	lt.t.Helper()
	if err := chromedp.Run(lt.ctx, actions...); err != nil {
		lt.t.Fatal(err)
	}
}

// form fills and submits a form as a person would, starting again (up to
// three times) when the page reloaded under the typing: a live update
// replaces the page, and the node being typed into is gone ("Could not
// find node"). The submit is the last action, so a retry never sends
// twice.
func (lt *liveTown) form(url string, actions ...chromedp.Action) {
	lt.t.Helper()
	var err error
	for range 3 {
		err = chromedp.Run(lt.ctx, append([]chromedp.Action{chromedp.Navigate(url)}, actions...)...)
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err != nil {
		lt.t.Fatal(err)
	}
}

// shotAction is shot as an action, to take among others in one run.
func (lt *liveTown) shotAction(name string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		if *screenshots == "" {
			return nil
		}
		var png []byte
		if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(*screenshots, name), png, 0o644)
	})
}

func (lt *liveTown) shot(name string) {
	if *screenshots == "" {
		return
	}
	var png []byte
	lt.run(chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(*screenshots, name), png, 0o644); err != nil {
		lt.t.Fatal(err)
	}
}

// The overview shows the right counts, and a message sent from the
// command line appears without a reload.
func TestBrowserOverviewIsLive(t *testing.T) {
	lt := newLiveTown(t)
	urgentID := lt.mailfs("send", "toast", "--from", "mayor", "--priority", "urgent", "-s", "MERGE_FAILED gt-201", "-m", "Branch: polecat/toast\n\nRebase onto main.")
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "WORK gt-202: release notes", "-m", "x")
	lt.mailfs("send", "nux", "--from", "mayor", "--priority", "high", "-s", "WORK gt-203: docs", "-m", "x")
	lt.mailfs("queue", "create", "work")
	lt.mailfs("send", "queue:work", "--from", "mayor", "-s", "WORK gt-204", "-m", "x")
	lt.mailfs("nudge", "nux", "check your mail", "--from", "witness")
	lt.mailfs("channel", "create", "merges")
	lt.mailfs("send", "channel:merges", "--from", "refinery", "-s", "MERGED gt-198 into main", "-m", "x")
	// Mail a script dropped two days ago, still unread.
	old := time.Now().Add(-48 * time.Hour).UTC().Format("2006-01-02T15-04-05Z")
	if err := os.MkdirAll(filepath.Join(lt.root, "state/mail/witness"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lt.root, "state/mail/witness", old+"-deacon.json"), []byte(`{"from":"deacon","subject":"patrol report"}`), 0o600); err != nil {
		t.Fatal(err)
	}

	var urgent, unread, high, nudges, depth string
	lt.run(chromedp.Navigate(lt.url+"/"),
		chromedp.WaitVisible(`#mailboxes`),
		textOf(`#box-toast td[data-col=urgent]`, &urgent),
		textOf(`#box-toast td[data-col=unread]`, &unread),
		textOf(`#box-nux td[data-col=high]`, &high),
		textOf(`#box-nux td[data-col=nudges]`, &nudges),
		textOf(`#queues td[data-col=depth]`, &depth),
	)
	if urgent != "1" || unread != "2" || high != "1" || nudges != "1" || depth != "1" {
		t.Fatalf("counts: toast urgent %s unread %s, nux high %s nudges %s, queue %s", urgent, unread, high, nudges, depth)
	}
	var stale, latest string
	lt.run(textOf(`#box-witness`, &stale), textOf(`#channels`, &latest))
	if !strings.Contains(stale, "past the sweep's cut-off") || !strings.Contains(latest, "MERGED gt-198 into main") {
		t.Fatalf("witness row %q; channels %q", stale, latest)
	}
	// The feed is up; mark the page, send from the command line, and wait
	// for the count to change in this same page.
	lt.run(chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.Evaluate(`window.sameLoad = true`, nil))
	lt.mailfs("send", "toast", "--from", "refinery", "-s", "MERGED gt-199", "-m", "x")
	var sameLoad bool
	lt.run(chromedp.Poll(`document.querySelector("#box-toast td[data-col=unread]").textContent === "3"`, nil),
		chromedp.Evaluate(`window.sameLoad === true`, &sameLoad))
	if !sameLoad {
		t.Fatal("the page was reloaded, not updated in place")
	}
	// An agent reads its mail: the count drops, live too.
	lt.mailfs("mark-read", "toast", urgentID)
	lt.run(chromedp.Poll(`document.querySelector("#box-toast td[data-col=urgent]").textContent === "0"`, nil))

	// The same on a mailbox page: the new subject appears.
	lt.run(chromedp.Navigate(lt.url+"/box/toast"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))
	lt.mailfs("send", "toast", "--from", "witness", "-s", "are you stuck?", "-m", "x")
	lt.run(chromedp.WaitVisible(`//table[@id="messages"]//a[text()="are you stuck?"]`))
}

// A hostile subject and body stay text in a real browser: no script runs,
// no element is made from them.
func TestBrowserHostileTextStaysText(t *testing.T) {
	lt := newLiveTown(t)
	id := lt.mailfs("send", "toast", "--from", "mayor", "-s", hostile, "-m", hostile)
	var pwned, imgs, scripts int
	var subject, body string
	check := chromedp.Tasks{
		chromedp.Evaluate(`window.pwned === undefined ? 0 : 1`, &pwned),
		chromedp.Evaluate(`document.querySelectorAll("img").length`, &imgs),
		chromedp.Evaluate(`document.querySelectorAll("script").length`, &scripts),
	}
	lt.run(chromedp.Navigate(lt.url+"/box/toast"), chromedp.WaitVisible(`#messages`), check)
	if pwned != 0 || imgs != 0 || scripts != 1 {
		t.Fatalf("mailbox page: pwned %d, img %d, script %d", pwned, imgs, scripts)
	}
	lt.run(chromedp.Navigate(lt.url+"/msg/toast/"+id), chromedp.WaitVisible(`#body`),
		textOf(`#subject`, &subject), textOf(`#body`, &body), check)
	if pwned != 0 || imgs != 0 || scripts != 1 || subject != hostile || strings.TrimSpace(body) != hostile {
		t.Fatalf("message page: pwned %d, img %d, script %d, subject %q, body %q", pwned, imgs, scripts, subject, body)
	}
}

// A message composed on the page lands as a file, from the identity the
// page acts as; a reply from the message page too.
func TestBrowserComposeLandsAsAFile(t *testing.T) {
	lt := newLiveTown(t, "--as", "human")
	id := lt.mailfs("send", "human", "--from", "mayor", "-s", "WORK gt-300: review", "-m", "Issue: gt-300\nBranch: polecat/nux/gt-300\n\nPlease review before the merge.")
	lt.run(chromedp.Navigate(lt.url+"/msg/human/"+id), chromedp.WaitVisible(`#fields`))
	lt.shot("message.png")
	lt.mailfs("agent", "add", "toast")
	// A slip of the keyboard: "toats" is no agent of the town. The page
	// asks, names the agent meant, and keeps the draft; nothing is sent.
	var unknown, kept string
	lt.form(lt.url+"/",
		chromedp.SendKeys(`#compose input[name=to]`, "toats"),
		chromedp.SendKeys(`#compose input[name=subject]`, "from the browser"),
		chromedp.SendKeys(`#compose textarea[name=body]`, "Typed in a page."),
		chromedp.SetValue(`#compose select[name=priority]`, "high"),
		chromedp.Submit(`#compose input[name=subject]`),
		chromedp.WaitVisible(`#unknown`), textOf(`#unknown`, &unknown),
		chromedp.Value(`#compose textarea[name=body]`, &kept),
	)
	if !strings.Contains(unknown, "There is no agent toats in this town — did you mean toast?") || kept != "Typed in a page." {
		t.Fatalf("the question: %q; the draft kept: %q", unknown, kept)
	}
	if dirs, _ := filepath.Glob(filepath.Join(lt.root, "state", "mail", "toats")); len(dirs) != 0 {
		t.Fatal("asking created the mailbox")
	}
	// Corrected, it is sent, and the page it lands on says so.
	var sent, prio string
	lt.run(chromedp.SetValue(`#compose input[name=to]`, "toast"), chromedp.Value(`#compose select[name=priority]`, &prio),
		chromedp.Click(`#confirm`), chromedp.WaitVisible(`#sent`), textOf(`#sent`, &sent))
	if sent != "Sent “from the browser” to toast." || prio != "high" {
		t.Errorf("after the send: %q (priority kept: %q)", sent, prio)
	}
	files, _ := filepath.Glob(filepath.Join(lt.root, "state", "mail", "toast", "*.json"))
	if len(files) != 1 {
		t.Fatalf("files in toast's mailbox: %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil || !strings.Contains(string(data), `"from": "human"`) || !strings.Contains(string(data), `"subject": "from the browser"`) {
		t.Fatalf("the file: %s %v", data, err)
	}
	lt.form(lt.url+"/msg/human/"+id,
		chromedp.SendKeys(`#reply textarea[name=body]`, "Looks good."),
		chromedp.Submit(`#reply textarea[name=body]`),
		chromedp.WaitVisible(`//h1[text()="human"]`))
	if out := lt.mailfs("inbox", "mayor"); !strings.Contains(out, "Re: WORK gt-300: review") {
		t.Fatalf("the reply did not land: %s", out)
	}
}

// The page says when the live feed drops, and picks up what landed while
// it was down once the server is back.
func TestBrowserSaysWhenTheFeedDrops(t *testing.T) {
	lt := newLiveTown(t)
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "before", "-m", "x")
	lt.run(chromedp.Navigate(lt.url+"/box/toast"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))
	lt.stop()
	lt.run(chromedp.Poll(`document.getElementById("live").textContent.startsWith("live feed lost")`, nil))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "while it was down", "-m", "x")
	lt.serve(strings.TrimPrefix(lt.url, "http://"))
	lt.run(chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.WaitVisible(`//table[@id="messages"]//a[text()="while it was down"]`))
}

// A live update changes only the parts of the page the server renders
// differently, and never takes from the person what they are doing: a
// draft and a chosen priority in the compose form stay while the counts
// above it change; a selection of text holds the update back (the badge
// says so) until it is let go; an opened "as written" stays open when the
// message's state changes; a typed, unsubmitted search stays while its
// results grow.
func TestBrowserLiveKeepsWhatThePersonIsDoing(t *testing.T) {
	lt := newLiveTown(t, "--as", "human")
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "one", "-m", "x")
	lt.run(chromedp.Navigate(lt.url+"/"), chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.SendKeys(`#compose input[name=subject]`, "a draft"),
		chromedp.SetValue(`#compose select[name=priority]`, "urgent"),
		chromedp.Blur(`#compose input[name=subject]`))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "two", "-m", "x")
	var draft, priority string
	lt.run(chromedp.Poll(`document.querySelector("#box-toast td[data-col=unread]").textContent === "2"`, nil),
		chromedp.Value(`#compose input[name=subject]`, &draft),
		chromedp.Value(`#compose select[name=priority]`, &priority))
	if draft != "a draft" || priority != "urgent" {
		t.Fatalf("after an update: draft %q, priority %q", draft, priority)
	}

	// A selection holds the update, and says so.
	lt.run(chromedp.Evaluate(`(function () {
			var r = document.createRange(); r.selectNodeContents(document.querySelector("h1"));
			var s = window.getSelection(); s.removeAllRanges(); s.addRange(r); return true;
		})()`, nil))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "three", "-m", "x")
	var badge, unread, selected string
	lt.run(chromedp.Poll(`document.getElementById("live").textContent.indexOf("text is selected") > 0`, nil),
		textOf(`#live`, &badge), textOf(`#box-toast td[data-col=unread]`, &unread),
		chromedp.Evaluate(`window.getSelection().toString()`, &selected))
	if unread != "2" || selected != "Town" {
		t.Fatalf("while text is selected (%q): unread %s, selection %q", badge, unread, selected)
	}
	lt.run(chromedp.Evaluate(`window.getSelection().removeAllRanges(); true`, nil),
		chromedp.Poll(`document.querySelector("#box-toast td[data-col=unread]").textContent === "3"`, nil),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil))

	// An open "as written" stays open when the message is marked read.
	id := strings.Fields(lt.mailfs("send", "nux", "--from", "mayor", "-s", "the plan", "-m", "Exit: MERGED"))[0]
	lt.run(chromedp.Navigate(lt.url+"/msg/nux/"+id), chromedp.WaitVisible(`#subject`),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.Click(`details summary`))
	lt.mailfs("mark-read", "nux", id)
	var open bool
	lt.run(chromedp.Poll(`document.querySelector("table.head").textContent.indexOf("unread") < 0`, nil),
		chromedp.Evaluate(`document.querySelector("details").open`, &open))
	if !open {
		t.Error("the open \"as written\" closed when the message was marked read")
	}

	// A typed search, not yet run, stays while the results of the last one
	// grow.
	lt.run(chromedp.Navigate(lt.url+"/search?q=gt-7"), chromedp.WaitVisible(`form.search`),
		chromedp.Poll(`document.getElementById("live").textContent === "live"`, nil),
		chromedp.SetValue(`form.search input[name=q]`, "gt-7 more"))
	lt.mailfs("send", "toast", "--from", "mayor", "-s", "WORK gt-7", "-m", "x")
	var query string
	lt.run(chromedp.WaitVisible(`#results`), chromedp.Value(`form.search input[name=q]`, &query))
	if query != "gt-7 more" {
		t.Errorf("the typed query after an update: %q", query)
	}
}

// textOf reads the text of the element sel matches, in one evaluation in
// the page, once it exists. chromedp.Text finds the node and then reads
// it in two steps, and the page's live feed may swap <main> in between
// (a change event for a send made just before), leaving a node id that no
// longer exists.
func textOf(sel string, out *string) chromedp.Action {
	js := fmt.Sprintf("document.querySelector(%q)", sel)
	return chromedp.Tasks{
		chromedp.Poll(js+" !== null", nil),
		chromedp.Evaluate(js+".innerText", out),
	}
}
