package townsim

import (
	"os"
	"syscall"
)

// loopAttr is how the soak starts a command that runs until stopped
// (sync --every): it gets SIGKILL when the test process ends, however it
// ends (a panic, go test's -timeout), so no loop outlives the soak.
func loopAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// cutAttr is how the soak starts a command under strace (a power cut):
// in a process group of its own, so that a kill takes strace's child
// too. strace forks the child, which stops itself until strace has
// attached; strace killed in that instant (a host crash, a fault) would
// leave it stopped for good, holding the soak's pipes.
func cutAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills (SIGKILL) the process group p leads.
func killGroup(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
}
