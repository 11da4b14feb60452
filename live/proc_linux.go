package live

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// statFields returns the fields of /proc/<pid>/stat after the command
// name (which may hold spaces and parentheses): field 3 is at index 0.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoProcess
	}
	if err != nil {
		return nil, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, errors.New("live: unreadable /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return strings.Fields(s[i+1:]), nil
}

// procStart is field 22 of /proc/<pid>/stat: the start time in clock
// ticks since boot, as Claude Code's and Qwen Code's registries write it.
func procStart(pid int) (string, error) {
	f, err := statFields(pid)
	if err != nil {
		return "", err
	}
	if len(f) < 20 {
		return "", errors.New("live: short /proc/" + strconv.Itoa(pid) + "/stat")
	}
	return f[19], nil
}

// parentOf is field 4 of /proc/<pid>/stat.
func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// bootID is the kernel's id of this boot, which Qwen Code puts before the
// start ticks in its procStart.
func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

// watchExit returns a channel closed when the process with p's pid exits,
// through a pidfd (Linux 5.3 and later): the deliverer then learns of its
// session's end without looking. The caller checks the session's identity
// after the watch is open (its door knows the runtime's own record of the
// process's start, in whatever form the runtime writes it), so a pid
// reused in between is never taken for the session; stop ends the watch.
// It fails where pidfds are not to be had, and the caller looks instead.
func (p Process) watchExit() (exited <-chan struct{}, stop func(), err error) {
	fd, err := unix.PidfdOpen(p.PID, 0)
	if err != nil {
		return nil, nil, err
	}
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	ch, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fd)
		defer unix.Close(wake[0])
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == unix.EINTR {
				continue
			}
			if err == nil && fds[0].Revents != 0 {
				close(ch)
			}
			return
		}
	}()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			unix.Close(wake[1])
			<-done // the poll wakes, closes its descriptors and ends
		})
	}, nil
}
