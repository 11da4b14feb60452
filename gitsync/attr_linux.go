package gitsync

import "syscall"

// gitAttr is how a sync starts git: each git gets SIGTERM when the sync's
// process ends, however it ends (kill -9, the OOM killer), so that a push
// cannot go on to move the remote after the host's next sync has built on
// the remote as it was. (A parent-death signal, set by the kernel before
// git runs; tied to the thread that started git, and Go's runtime ends no
// thread but one a goroutine exits locked to. SIGTERM lets git remove its
// lock files.)
func gitAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
