//go:build !linux

package townsim

import (
	"os"
	"syscall"
)

// loopAttr: no parent-death signal here; the soak stops its loops itself.
func loopAttr() *syscall.SysProcAttr { return nil }

// cutAttr: no power cuts here (they need strace).
func cutAttr() *syscall.SysProcAttr { return nil }

// killGroup kills p.
func killGroup(p *os.Process) { p.Kill() }
