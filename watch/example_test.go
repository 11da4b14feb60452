package watch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

// A watcher reports each message once, the moment its file lands.
func ExampleWatcher_Watch() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	s, _ := maildir.Open(filepath.Join(dir, ".chipset"))
	defer s.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := (&watch.Watcher{Store: s, Boxes: []maildir.Address{mbox("refinery")}}).Watch(ctx)
	if err != nil {
		panic(err)
	}
	s.Send(&maildir.Message{From: "witness", To: "refinery", Subject: "MERGE_READY nux"})
	ev := <-events
	fmt.Println(ev.Box.String(), ev.Message.Subject)
	// Output: refinery MERGE_READY nux
}
