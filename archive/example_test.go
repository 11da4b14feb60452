package archive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/archive"
	"github.com/mailfs/mailfs/maildir"
)

// A sweep moves read mail older than the cut-off into archive/ and keeps
// unread mail, however old, where the agent will see it.
func ExampleSweeper_Sweep() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	s, _ := maildir.Open(filepath.Join(dir, ".chipset"))
	defer s.Close()
	for _, read := range []bool{true, false} {
		sent, _ := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprint("read: ", read)})
		if read {
			s.MarkRead(mbox("toast"), sent[0].ID)
		}
	}
	// Two days later:
	sw := &archive.Sweeper{Store: s, Now: func() time.Time { return time.Now().Add(48 * time.Hour) }}
	rep, _ := sw.Sweep(context.Background())
	fmt.Println("archived", len(rep.Moved), "kept unread", rep.Kept)
	// Output: archived 1 kept unread 1
}
