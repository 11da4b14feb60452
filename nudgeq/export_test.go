package nudgeq

import "github.com/mailfs/mailfs/internal/durable"

// Test seams, compiled only into this package's tests.

// SetFault makes every write under q call f at each step (durable.Step).
func SetFault(q *Queue, f func(durable.Step, string) error) { q.root.SetFault(f) }

// ForceFallback makes q use the rename fallbacks of file systems without
// renameat2's flags.
func ForceFallback(q *Queue) { q.root.SetFallback(true) }
