package maildir_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// A channel folder without its configuration is listed by Channels and
// refused by everything that reads or posts to it as malformed (not as a
// channel that does not exist); CreateChannel makes it a channel again,
// keeping its posts.
func TestMalformedChannel(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateChannel("merges", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(ts.path("state/channel/broken"), 0o700); err != nil {
		t.Fatal(err)
	}
	ts.write(t, "state/channel/broken/2026-01-01T00-00-00Z-refinery.json", `{"from":"refinery","subject":"kept"}`)
	if names, err := ts.Channels(); err != nil || !slices.Equal(names, []string{"broken", "merges"}) {
		t.Fatalf("Channels: %v, %v", names, err)
	}
	_, cerr := ts.Channel("broken")
	_, lerr := ts.List(mbox("channel:broken"), maildir.ListOptions{All: true})
	_, serr := ts.Send(&maildir.Message{From: "mayor", To: "channel:broken", Subject: "x"})
	for name, err := range map[string]error{"Channel": cerr, "List": lerr, "Send": serr} {
		if !errors.Is(err, maildir.ErrMalformed) || errors.Is(err, maildir.ErrNoChannel) || !strings.Contains(err.Error(), "state/channel/broken.json") {
			t.Errorf("%s of the malformed channel: %v", name, err)
		}
	}
	if err := ts.CreateChannel("broken", maildir.ChannelChange{}); err != nil {
		t.Fatal(err)
	}
	if posts, err := ts.List(mbox("channel:broken"), maildir.ListOptions{All: true}); err != nil || len(posts) != 1 {
		t.Fatalf("after CreateChannel: %d posts, %v", len(posts), err)
	}
}
