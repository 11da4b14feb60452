//go:build !linux

package codexdoor

import "syscall"

// childAttr is how Run starts Codex's processes. Only Linux has a
// parent-death signal: elsewhere (macOS) a launcher killed with SIGKILL
// leaves them running. group puts the child in a process group of its
// own.
func childAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
