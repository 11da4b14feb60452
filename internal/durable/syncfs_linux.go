//go:build linux

package durable

import "golang.org/x/sys/unix"

// CanSyncFS reports whether [Root.SyncFS] works here: Linux's syncfs(2).
const CanSyncFS = true

func syncFS(fd int) error { return unix.Syncfs(fd) }
