package webview_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A channel folder without its configuration, a channel whose
// configuration cannot be read, a queue folder that cannot be read and a
// group file that is not a group are each shown as what they are, and the rest of the town as usual: never a 404 of the
// overview or the activity page.
func TestMalformedFoldersAreShownAsSuch(t *testing.T) {
	tw := newTown(t, "", "")
	if err := tw.store.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	tw.send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	for _, dir := range []string{"state/channel/broken", "state/queue/locked", "state/groups"} {
		if err := os.MkdirAll(filepath.Join(tw.dir, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tw.dir, "state/groups/crew.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A channel whose configuration cannot be read: its posts still
	// read, but posts to it are refused, so it is not shown as a channel
	// like the others.
	if err := tw.store.CreateChannel("garbled", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tw.dir, "state/channel/garbled.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(tw.dir, "state/queue/locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o700) })
	readable := os.Geteuid() == 0 // root reads a folder of mode 0

	status, body := tw.get("/")
	if status != 200 || !strings.Contains(body, `<td><a href="/box/toast">toast</a></td>`) && !strings.Contains(body, "/box/toast") {
		t.Fatalf("the overview with malformed folders: %d\n%s", status, body)
	}
	for _, want := range []string{
		`<tr class="malformed"><td><a href="/box/channel:broken">channel:broken</a></td><td colspan="2"><span class="mark">malformed</span>`,
		"its folder state/channel/broken/ is there but not its configuration state/channel/broken.json",
		`<a href="/box/channel:merges">channel:merges</a>`,
		`<ul id="malformed" class="error">`, "@crew: ",
		`<tr class="malformed"><td><a href="/box/channel:garbled">channel:garbled</a></td><td colspan="2"><span class="mark">malformed</span> channel:garbled: `,
		"the configuration state/channel/garbled.json cannot be read",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview has no %q", want)
		}
	}
	if !readable && !strings.Contains(body, `<tr class="malformed"><td><a href="/box/queue:locked">queue:locked</a></td>`) {
		t.Error("the unreadable queue is not shown as such")
	}
	status, body = tw.get("/activity")
	if status != 200 || !strings.Contains(body, `<ul id="skipped" class="error"><li>not read: channel:broken: `) || !strings.Contains(body, "hello") {
		t.Errorf("the activity page with malformed folders: %d\n%s", status, body)
	}
	status, body = tw.get("/box/channel:broken")
	if status == 404 || !strings.Contains(body, "malformed channel channel:broken") {
		t.Errorf("the malformed channel's page: %d\n%s", status, body)
	}
}

// A channel's page shows a page of its posts, newest first, with links to
// the others: a channel keeps every post by default, and a page of all of
// them grew without bound.
func TestChannelIsPaged(t *testing.T) {
	tw := newTown(t, "", "")
	if err := tw.store.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour)
	for i := range 250 {
		at := start.Add(time.Duration(i) * time.Second)
		body := fmt.Sprintf(`{"from":"refinery","subject":"MERGED gt-%d","timestamp":%q}`, i, at.UTC().Format(time.RFC3339Nano))
		dropFile(t, tw.dir, "../channel/merges", maildir.NewID(at, "refinery")+".json", body)
	}
	_, body := tw.get("/box/channel:merges")
	rows := strings.Count(body, `<tr class="unread p-normal">`)
	if rows != 100 || !strings.Contains(body, ">MERGED gt-249<") || strings.Contains(body, ">MERGED gt-149<") ||
		!strings.Contains(body, "page 1 of 3 (250 messages)") || !strings.Contains(body, `href="/box/channel:merges?page=2" rel="next"`) {
		t.Fatalf("the first page: %d rows\n%s", rows, body)
	}
	_, body = tw.get("/box/channel:merges?page=3")
	if rows := strings.Count(body, `<tr class="unread p-normal">`); rows != 50 || !strings.Contains(body, ">MERGED gt-0<") {
		t.Fatalf("the last page: %d rows", rows)
	}
}
