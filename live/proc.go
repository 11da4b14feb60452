package live

import (
	"errors"
	"strconv"
	"syscall"
)

// A Process names one process for as long as it lives: its pid and the
// time it started, so a pid the kernel hands to another process later is
// never taken for it.
type Process struct {
	PID   int    `json:"pid"`
	Start string `json:"proc_start,omitempty"` // the kernel's start time, in its own units; "" when unknown
}

// Alive reports whether p still runs: the pid exists and, when p.Start is
// known, it started when p says.
func (p Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	if err := syscall.Kill(p.PID, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if p.Start == "" {
		return true
	}
	start, err := procStart(p.PID)
	if err != nil {
		return !errors.Is(err, errNoProcess)
	}
	return start == p.Start
}

// Self is this process.
func Self() Process {
	pid := syscall.Getpid()
	start, _ := procStart(pid)
	return Process{PID: pid, Start: start}
}

// ProcessOf returns the process with this pid as it is now.
func ProcessOf(pid int) (Process, error) {
	start, err := procStart(pid)
	if err != nil {
		return Process{}, err
	}
	return Process{PID: pid, Start: start}, nil
}

var errNoProcess = errors.New("live: no such process")

// Ancestors returns the pids above pid, its parent first, up to (not
// including) pid 1.
func Ancestors(pid int) []int {
	var up []int
	for range 64 {
		ppid, err := parentOf(pid)
		if err != nil || ppid <= 1 {
			break
		}
		up = append(up, ppid)
		pid = ppid
	}
	return up
}

func itoa(n int) string { return strconv.Itoa(n) }
