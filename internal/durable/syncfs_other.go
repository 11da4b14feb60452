//go:build unix && !linux

package durable

import "errors"

// CanSyncFS reports whether [Root.SyncFS] works here: not without Linux's
// syncfs(2); callers fsync each file instead ([Dir.ReplaceBatched]).
const CanSyncFS = false

func syncFS(int) error { return errors.ErrUnsupported }
