package codexdoor

import "syscall"

// childAttr is how Run starts Codex's processes: each gets SIGTERM when
// this process ends, however it ends (a parent-death signal, set by the
// kernel before the child runs; it is tied to the thread that started the
// child, and Go's runtime ends no thread but one a goroutine exits locked
// to). group puts the child in a process
// group of its own.
func childAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group, Pdeathsig: syscall.SIGTERM}
}
