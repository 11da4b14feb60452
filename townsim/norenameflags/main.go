//go:build linux

// Command norenameflags runs a command as on a file system that does not
// know renameat2's flags (some FUSE and network file systems): a
// renameat2 with any flag fails with EINVAL, a plain one goes through. The
// town soak runs one host's commands so, and mailfs then takes its
// link-and-unlink fallbacks (internal/durable), as it would there.
//
// Usage: norenameflags COMMAND [ARG...]
//
// It installs a seccomp filter on itself (no privilege needed: it sets
// no_new_privs first) and executes the command, which keeps the filter,
// as do the processes that command starts.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: norenameflags COMMAND [ARG...]")
		os.Exit(2)
	}
	path, err := exec.LookPath(os.Args[1])
	if err == nil {
		// The filter is the thread's: the exec must come from that thread.
		runtime.LockOSThread()
		err = refuseRenameFlags()
	}
	if err == nil {
		err = syscall.Exec(path, os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "norenameflags:", err)
	os.Exit(2)
}

// refuseRenameFlags installs the filter: renameat2 with flags (its fifth
// argument) not zero fails with EINVAL; every other call is allowed.
func refuseRenameFlags() error {
	arch := map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}[runtime.GOARCH]
	if arch == 0 {
		return fmt.Errorf("no filter for %s", runtime.GOARCH)
	}
	const (
		ldW   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq   = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret   = unix.BPF_RET | unix.BPF_K
		nr    = 0  // offsetof(struct seccomp_data, nr)
		archO = 4  // offsetof(struct seccomp_data, arch)
		flags = 48 // args[4], its low 32 bits (little-endian)
	)
	prog := []unix.SockFilter{
		{Code: ldW, K: archO},
		{Code: jeq, K: arch, Jt: 0, Jf: 5},
		{Code: ldW, K: nr},
		{Code: jeq, K: unix.SYS_RENAMEAT2, Jt: 0, Jf: 3},
		{Code: ldW, K: flags},
		{Code: jeq, K: 0, Jt: 1, Jf: 0},
		{Code: ret, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EINVAL)},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
