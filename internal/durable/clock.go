package durable

import (
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ProbeClock reports whether every kind of change to d — a file created,
// renamed, renamed over another, removed — gives d a later ctime than the
// one read just before it. Linux 6.13 and later do so on ext4, xfs and
// btrfs ("multigrain" timestamps: a ctime that has been read is followed by
// a fine-grained one); otherwise ctime moves in clock ticks, and a change
// in the same tick as a read leaves it unchanged (tmpfs on 6.18 does so for
// a rename over a file and for a removal, as measured).
//
// It makes 65 such changes with a hidden name in d as fast as they come,
// reading d's ctime after each: all later than the one before, within
// 48 ms, means fine. On a coarse clock (a tick of 1 ms or more) 65 changes
// within 48 ms put two in one tick at least 17 times, so a "fine" cannot
// come from luck. When the machine is too slow to tell, it tries three
// times, then says false.
func (d *Dir) ProbeClock() bool {
	const cycles, within = 13, 48 * time.Millisecond
	base := ".clock-probe-" + strconv.Itoa(os.Getpid()) + "-"
	a, b := base+"a", base+"b"
	defer func() {
		unix.Unlinkat(d.fd, a, 0)
		unix.Unlinkat(d.fd, b, 0)
	}()
	var st unix.Stat_t
	ctime := func() (int64, bool) {
		if unix.Fstat(d.fd, &st) != nil {
			return 0, false
		}
		return st.Ctim.Nano(), true
	}
	touch := func(name string) error {
		fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			err = unix.Close(fd)
		}
		return err
	}
	steps := []func() error{
		func() error { return touch(a) },
		func() error { return unix.Renameat(d.fd, a, d.fd, b) },
		func() error { return touch(a) },
		func() error { return unix.Renameat(d.fd, a, d.fd, b) }, // over b
		func() error { return unix.Unlinkat(d.fd, b, 0) },
	}
	for range 3 {
		start := time.Now()
		prev, ok := ctime()
		if !ok {
			return false
		}
		for range cycles {
			for _, step := range steps {
				if step() != nil {
					return false
				}
				now, ok := ctime()
				if !ok || now <= prev {
					return false
				}
				prev = now
			}
		}
		if time.Since(start) < within {
			return true
		}
	}
	return false
}
