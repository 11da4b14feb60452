package townsim

import "syscall"

// loopAttr is how the soak starts a command that runs until stopped
// (sync --every): it gets SIGKILL when the test process ends, however it
// ends (a panic, go test's -timeout), so no loop outlives the soak.
func loopAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
