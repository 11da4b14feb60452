package live

import (
	"errors"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// procStart is the process's start time (seconds and microseconds).
func procStart(pid int) (string, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return "", errNoProcess
		}
		return "", err
	}
	if kp.Proc.P_pid != int32(pid) {
		return "", errNoProcess
	}
	t := kp.Proc.P_starttime
	return strconv.FormatInt(int64(t.Sec), 10) + "." + strconv.FormatInt(int64(t.Usec), 10), nil
}

func parentOf(pid int) (int, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, err
	}
	if kp.Proc.P_pid != int32(pid) {
		return 0, errNoProcess
	}
	return int(kp.Eproc.Ppid), nil
}

func bootID() string { return "" }

// watchExit is not to be had here (a kqueue EVFILT_PROC would do; not yet
// written): the deliverer looks at its session every Check instead.
func (p Process) watchExit() (exited <-chan struct{}, stop func(), err error) {
	return nil, nil, errors.ErrUnsupported
}
