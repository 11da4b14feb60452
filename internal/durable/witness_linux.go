package durable

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The witness of a create is Linux's dnotify: F_NOTIFY on the folder, with
// every change to its entries (a name made, removed, renamed in or out)
// raising a queued real-time signal aimed at the one thread making the
// create, which has it blocked and counts what is queued. dnotify, not
// inotify: closing an inotify instance waits out an SRCU grace period
// (8–20 ms here, more than the write it would witness), and dnotify's one
// group lives as long as the kernel, so ending a watch waits for nothing
// (arm, count and close: 4 µs).
//
// A signal says that something changed, not what. So the witness counts: a
// create (its temp made, then renamed to a new name) raises a fixed number
// of signals on a given kernel (four on Linux 6.x: made, and moved from,
// moved to and rename), which ProbeWitness learns in a folder of its own,
// where nothing else can happen (the caller keeps the count: the folder
// index does, per kernel). Any other change to the entries in the window —
// another writer's file, a removal, a rename — raises at least one more,
// and the witness says no. So does a full signal queue (the kernel then
// raises SIGIO instead, which the thread also counts) or anything it
// cannot set up. The folder moved elsewhere changes none of its entries
// and raises nothing; the witness still watches it there.

// witnessSignal is the real-time signal the witness asks for; nothing else
// in mailfs uses it, and Go ignores it on any other thread.
const witnessSignal = 40

// ProbeWitness measures how many signals a create raises in a watched
// folder on this kernel: its temp made, written, and renamed to a new
// name. It runs in a folder of its own, made in d for the probe and
// removed after, where nothing else can happen, so the count is the
// create's alone. The caller keeps the answer (it is the kernel's, and
// costs a millisecond to learn): [Dir.CreateWitnessed] takes it. An error
// means no witness here.
func (d *Dir) ProbeWitness() (int, error) {
	if err := d.root.writable(); err != nil {
		return 0, err
	}
	// Unique beside other probes (the pid, and a random number: math/rand,
	// not crypto/rand, whose initialisation every process would pay).
	name := fmt.Sprintf(".witness-probe-%d-%016x", os.Getpid(), rand.Uint64())
	if err := unix.Mkdirat(d.fd, name, 0o700); err != nil {
		return 0, d.err("probe", name, err)
	}
	defer unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
	dfd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, d.err("probe", name, err)
	}
	defer unix.Close(dfd)
	if !localFS(dfd) {
		return 0, d.err("probe", name, ErrNoWitness)
	}
	defer unix.Unlinkat(dfd, "probe", 0)
	defer unix.Unlinkat(dfd, ".probe", 0)
	w, err := watch(dfd)
	if err != nil {
		return 0, d.err("probe", name, err)
	}
	fd, err := unix.Openat(dfd, ".probe", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, uint32(Perm))
	if err == nil {
		err = unix.Fchmod(fd, uint32(Perm))
		if err == nil {
			_, err = unix.Write(fd, []byte("{}"))
		}
		unix.Close(fd)
	}
	if err == nil {
		err = unix.Renameat2(dfd, ".probe", dfd, "probe", unix.RENAME_NOREPLACE)
	}
	n, clean := w.end()
	switch {
	case err != nil:
		return 0, d.err("probe", name, err)
	case !clean || n <= 0:
		return 0, d.err("probe", name, ErrNoWitness)
	}
	return n, nil
}

// A witness counts the signals a folder raises from when it is armed.
type witness struct {
	fd  int // the folder, opened again: dnotify belongs to this descriptor
	old unix.Sigset_t
}

// witnessSet is the witness signal and SIGIO, which the kernel raises
// instead when the queue of real-time signals is full.
func witnessSet() unix.Sigset_t {
	var s unix.Sigset_t
	for _, sig := range []int{witnessSignal, int(unix.SIGIO)} {
		s.Val[(sig-1)/64] |= 1 << ((sig - 1) % 64)
	}
	return s
}

// watch locks the goroutine to its thread, blocks the witness's signals
// there, and arms dnotify on the folder dirfd names, its signals aimed at
// the thread. end undoes all of it.
func watch(dirfd int) (*witness, error) {
	runtime.LockOSThread()
	w := &witness{fd: -1}
	set := witnessSet()
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &w.old); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		w.fd = fd
		err = arm(fd)
	}
	if err != nil {
		w.end()
		return nil, err
	}
	if n, clean := drain(); n != 0 || !clean { // left over from before: not ours to count
		w.end()
		return nil, os.ErrInvalid
	}
	return w, nil
}

// fOwnerEx is struct f_owner_ex.
type fOwnerEx struct {
	Type int32
	PID  int32
}

const fOwnerTID = 0 // F_OWNER_TID: one thread, not the process

func arm(fd int) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETSIG, witnessSignal); err != nil {
		return err
	}
	own := fOwnerEx{Type: fOwnerTID, PID: int32(unix.Gettid())}
	if _, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&own))); e != 0 {
		return e
	}
	// DN_CREATE, DN_DELETE and DN_RENAME: changes to the folder's
	// entries, which its stamp follows, and with DN_MULTISHOT every one,
	// not only the first (x/sys/unix does not name them). Not DN_MODIFY or
	// DN_ATTRIB, changes to what an entry holds: watching those has the
	// kernel flag every cached child of the folder as it arms (1 ms at
	// 20,000 files, at every send), and they do not move the folder's
	// stamp, so an index never saw them anyway.
	const changes = 0x4 | 0x8 | 0x10 | 0x80000000
	_, err := unix.FcntlInt(uintptr(fd), unix.F_NOTIFY, changes)
	return err
}

// drain takes the witness signal from the thread's queue until none is
// left, and reports how many it took, and false if SIGIO was pending too
// (the queue overflowed: some were lost) or the queue could not be read.
func drain() (n int, clean bool) {
	clean = true
	set := witnessSet()
	var ts unix.Timespec // do not wait
	var info [128]byte   // siginfo_t
	for {
		// The kernel's sigset_t is 8 bytes (64 signals), not x/sys/unix's 128.
		sig, _, e := unix.Syscall6(unix.SYS_RT_SIGTIMEDWAIT, uintptr(unsafe.Pointer(&set)), uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&ts)), 8, 0, 0)
		switch {
		case e == unix.EAGAIN:
			return n, clean
		case e == unix.EINTR:
			continue
		case e != 0:
			return n, false
		case sig == witnessSignal:
			n++
		default: // SIGIO: the queue overflowed, and some were lost
			clean = false
		}
	}
}

// end closes the watch (which ends it), counts the signals it raised, and
// gives the thread back as it was; clean is false if any may be missing.
func (w *witness) end() (n int, clean bool) {
	n, clean = drain()
	if w.fd >= 0 {
		unix.Close(w.fd)
		m, c := drain() // any raised before the close took effect
		n, clean = n+m, clean && c
	}
	unix.PthreadSigmask(unix.SIG_SETMASK, &w.old, nil)
	runtime.UnlockOSThread()
	return n, clean
}

// armWitness starts a witness of d for a create about to be made, or
// returns nil when there can be none (not a local file system it knows,
// dnotify refused): then the caller must not take its word for anything.
func (d *Dir) armWitness() *witness {
	if !localFS(d.fd) {
		return nil
	}
	w, err := watch(d.fd)
	if err != nil {
		return nil
	}
	return w
}

// alone ends the witness and reports whether it saw exactly one create,
// raising expect signals, and nothing else.
func (w *witness) alone(expect int) bool {
	n, clean := w.end()
	return clean && expect > 0 && n == expect
}

// localFS reports whether the folder fd names is on a local file system
// the witness knows, where every change to it is made through this
// kernel and so raises its signal: not a network or FUSE mount, which
// another machine can change unseen.
func localFS(fd int) bool {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC:
		return true // EXT4_SUPER_MAGIC is ext2's and ext3's too
	}
	return false
}
