package maildir

import "github.com/mailfs/mailfs/internal/durable"

// Test seams, compiled only into this package's tests.

// OpenWith opens the store at dir with durable's test seams: a fault at
// every step of every write (durable.WithFault), or the rename fallbacks of
// file systems without renameat2's flags (durable.WithFallback).
func OpenWith(dir string, opts ...durable.Option) (*Store, error) { return open(dir, opts...) }
