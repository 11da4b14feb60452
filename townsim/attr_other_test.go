//go:build !linux

package townsim

import "syscall"

// loopAttr: no parent-death signal here; the soak stops its loops itself.
func loopAttr() *syscall.SysProcAttr { return nil }
