package hook_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// The prompt hook: collect, print, then commit.
func ExampleCollector_Collect() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, ".chipset")
	s, _ := maildir.Open(root)
	defer s.Close()
	q, _ := nudgeq.Open(root)
	defer q.Close()
	q.Enqueue("toast", nudgeq.Nudge{Sender: "witness", Message: "status?"}, 0)

	res := (&hook.Collector{Store: s, Nudges: q}).Collect(context.Background(), "toast")
	fmt.Print(res.Reminder)
	res.Commit()
	// Output:
	// <system-reminder>
	// Nudges for toast:
	// - [from witness] status?
	// </system-reminder>
}
