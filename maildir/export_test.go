package maildir

import "github.com/mailfs/mailfs/internal/durable"

// Test seams, compiled only into this package's tests.

// SetFault makes every write under s call f at each step (durable.Step).
func SetFault(s *Store, f func(durable.Step, string) error) { s.root.SetFault(f) }

// ForceFallback makes s use the rename fallbacks of file systems without
// renameat2's flags.
func ForceFallback(s *Store) { s.root.SetFallback(true) }
