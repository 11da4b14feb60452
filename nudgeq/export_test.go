package nudgeq

import "github.com/mailfs/mailfs/internal/durable"

// Test seams, compiled only into this package's tests.

// OpenWith opens the queues under dir with durable's test seams
// (durable.WithFault, durable.WithFallback).
func OpenWith(dir string, opts ...durable.Option) (*Queue, error) { return open(dir, opts...) }
