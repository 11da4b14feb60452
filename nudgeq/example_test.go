package nudgeq_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailfs/mailfs/nudgeq"
)

// A witness nudges a polecat; the polecat's hook claims the nudges, shows
// them, and only then commits, so a crash in between redelivers.
func ExampleQueue_Claim() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	q, _ := nudgeq.Open(filepath.Join(dir, ".chipset"))
	defer q.Close()

	q.Enqueue("toast", nudgeq.Nudge{Sender: "witness", Message: "status?"}, 0)
	q.Enqueue("toast", nudgeq.Nudge{Sender: "refinery", Message: "MERGE_FAILED: rebase", Priority: nudgeq.Urgent}, 0)

	b, _ := q.Claim("toast")
	for _, n := range b.Nudges {
		fmt.Printf("[%s] %s: %s\n", n.Priority, n.Sender, n.Message)
	}
	b.Commit()
	left, _ := q.Len("toast")
	fmt.Println(left, "left")
	// Output:
	// [normal] witness: status?
	// [urgent] refinery: MERGE_FAILED: rebase
	// 0 left
}
