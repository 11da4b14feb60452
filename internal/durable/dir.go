//go:build unix

package durable

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Perm and DirPerm are the modes of every file and directory mailfs creates,
// whatever the umask: mail can carry secrets.
const (
	Perm    fs.FileMode = 0o600
	DirPerm fs.FileMode = 0o700
)

// TempPrefix and TempSuffix frame the names of the temps that writes create.
// Such names start with a dot, so readers never take them for messages.
const (
	TempPrefix = ".mailfs-"
	TempSuffix = ".tmp"
)

var (
	// ErrNotDir is returned (inside an *fs.PathError) when a path element
	// that should be a directory is something else, a symbolic link included.
	ErrNotDir = errors.New("not a directory (symbolic links are not followed)")

	// ErrNotRegular is returned by [Dir.ReadFile] for anything that is not a
	// regular file: a directory, a symbolic link, a FIFO, a socket, a device.
	ErrNotRegular = errors.New("not a regular file")

	// ErrTooLarge is returned by [Dir.ReadFile] for a file larger than the
	// limit it was given; the file is not read.
	ErrTooLarge = errors.New("file too large")

	// ErrChanged is returned by [Dir.Exchange] when the file it displaced was
	// not the one its caller expected; the swap has been undone.
	ErrChanged = errors.New("file changed during rewrite")

	// ErrBadName is returned for a name that is not a single path element.
	ErrBadName = errors.New("invalid file name")
)

// A Root is an open directory tree. It is safe for concurrent use.
type Root struct {
	path    string
	dir     *Dir
	fault   func(Step, string) error
	fsyncFn func(fd int) error // nil: unix.Fsync
	forced  bool               // fallbacks forced, by a test
	onList  func(path string)  // told of each directory listing, by a test
	refused atomic.Bool        // the file system refused the renameat2 flags
	guard   func() error       // asked before every write (WithWriteGuard)
	base    string             // the root's own path in a larger tree (WithBase)
}

// OpenRoot opens the directory at path. The path itself may contain
// symbolic links; nothing below it is followed.
func OpenRoot(path string, opts ...Option) (*Root, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	r := &Root{path: path}
	for _, o := range opts {
		o(r)
	}
	r.dir = &Dir{root: r, f: os.NewFile(uintptr(fd), path), fd: fd, path: r.base}
	return r, nil
}

// writable asks the root's write guard, if it has one, whether writing
// may go on (see WithWriteGuard).
func (r *Root) writable() error {
	if r.guard == nil {
		return nil
	}
	return r.guard()
}

// Close releases the root's descriptors. Dirs opened from it stay usable
// until they are closed themselves.
func (r *Root) Close() error { return r.dir.Close() }

// Path returns the path the root was opened with.
func (r *Root) Path() string { return r.path }

// Open opens the directory at rel, a slash-separated path relative to the
// root ("" or "." is the root itself). A missing element is reported with an
// error matching [fs.ErrNotExist]; an element that is not a real directory
// with [ErrNotDir].
func (r *Root) Open(rel string) (*Dir, error) { return r.walk(rel, false) }

// MkdirAll opens the directory at rel, creating the missing elements with
// mode [DirPerm] exactly. Each directory that gains an entry is fsynced
// before MkdirAll returns, so a file later made durable in the new directory
// cannot be lost with it.
func (r *Root) MkdirAll(rel string) (*Dir, error) { return r.walk(rel, true) }

func (r *Root) walk(rel string, create bool) (*Dir, error) {
	if create {
		if err := r.writable(); err != nil {
			return nil, err
		}
	}
	if rel == "" || rel == "." {
		fd, err := unix.Dup(r.dir.fd)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: ".", Err: err}
		}
		unix.CloseOnExec(fd)
		return r.newDir(fd, ""), nil
	}
	parts := strings.Split(rel, "/")
	fd, owned := r.dir.fd, false
	closeOwned := func() {
		if owned {
			unix.Close(fd)
		}
	}
	for i, name := range parts {
		path := strings.Join(parts[:i+1], "/")
		if !ValidName(name) {
			closeOwned()
			return nil, &fs.PathError{Op: "open", Path: path, Err: ErrBadName}
		}
		next, err := openDir(fd, name)
		if err == unix.ENOENT && create {
			next, err = r.mkdirAt(fd, name)
		}
		closeOwned()
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: path, Err: dirErr(err)}
		}
		fd, owned = next, true
	}
	return r.newDir(fd, rel), nil
}

func openDir(parent int, name string) (int, error) {
	for {
		fd, err := unix.Openat(parent, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// mkdirAt creates name in parent with mode DirPerm whatever the umask, fsyncs
// parent, and opens the new directory. A directory created concurrently by
// another process is simply opened.
func (r *Root) mkdirAt(parent int, name string) (int, error) {
	err := unix.Mkdirat(parent, name, uint32(DirPerm))
	if err == unix.EEXIST {
		return openDir(parent, name)
	}
	if err != nil {
		return -1, err
	}
	fd, err := openDir(parent, name)
	if err != nil {
		return -1, err
	}
	if err := unix.Fchmod(fd, uint32(DirPerm)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := r.fsync(parent); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func dirErr(err error) error {
	if err == unix.ELOOP || err == unix.ENOTDIR {
		return ErrNotDir
	}
	return err
}

func (r *Root) newDir(fd int, rel string) *Dir {
	if r.base != "" {
		if rel == "" || rel == "." {
			rel = r.base
		} else {
			rel = r.base + "/" + rel
		}
	}
	return &Dir{root: r, f: os.NewFile(uintptr(fd), rel), fd: fd, path: rel}
}

// ValidName reports whether name can be used as one element of a path: not
// empty, not "." or "..", no "/" and no NUL byte.
func ValidName(name string) bool {
	return name != "" && name != "." && name != ".." && len(name) <= 255 &&
		!strings.ContainsAny(name, "/\x00")
}

// A Dir is an open directory below a [Root]. Its methods take single path
// elements, never paths. A Dir is safe for concurrent use, except for
// [Dir.Each].
type Dir struct {
	root *Root
	f    *os.File
	fd   int
	path string
}

// Sub opens the child directory name of d: one system call, with the same
// rules as [Root.Open] (no symbolic link followed).
func (d *Dir) Sub(name string) (*Dir, error) {
	if !ValidName(name) {
		return nil, d.err("open", name, ErrBadName)
	}
	fd, err := openDir(d.fd, name)
	if err != nil {
		return nil, d.err("open", name, dirErr(err))
	}
	return d.root.newDir(fd, d.Join(name)), nil
}

// MkSub opens the child directory name of d, creating it first (mode
// [DirPerm], d fsynced) if it is missing, as [Root.MkdirAll] does.
func (d *Dir) MkSub(name string) (*Dir, error) {
	if err := d.root.writable(); err != nil {
		return nil, err
	}
	if !ValidName(name) {
		return nil, d.err("open", name, ErrBadName)
	}
	fd, err := openDir(d.fd, name)
	if err == unix.ENOENT {
		fd, err = d.root.mkdirAt(d.fd, name)
	}
	if err != nil {
		return nil, d.err("open", name, dirErr(err))
	}
	return d.root.newDir(fd, d.Join(name)), nil
}

// Path returns the directory's slash-separated path relative to the root.
func (d *Dir) Path() string { return d.path }

// Join returns the root-relative path of name in d.
func (d *Dir) Join(name string) string {
	if d.path == "" {
		return name
	}
	return d.path + "/" + name
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Each calls f for every entry of the directory, from the first: it may be
// called again on the same Dir. Entries are read in batches, so memory stays
// flat for a large directory, and their types come from the directory
// itself, without a stat per entry. Each is not safe for concurrent use on
// one Dir.
func (d *Dir) Each(f func(fs.DirEntry)) error {
	d.listed()
	if _, err := d.f.Seek(0, io.SeekStart); err != nil {
		return d.err("seek", "", err)
	}
	for {
		ents, err := d.f.ReadDir(1024)
		for _, e := range ents {
			f(e)
		}
		if err == io.EOF || err == nil && len(ents) == 0 {
			return nil
		}
		if err != nil {
			return d.err("readdir", "", err)
		}
	}
}

// Lock takes an exclusive advisory lock (flock) on the directory, waiting
// for it, and returns the function that releases it. The kernel releases
// it too if the process dies. It serialises writers that must count before
// they write; readers never take it.
func (d *Dir) Lock() (unlock func(), err error) { return d.flock(unix.LOCK_EX) }

// LockShared takes the same lock as [Dir.Lock], shared: any number of
// holders of the shared lock at once, none while the exclusive one is
// held. It is for writers that must not run inside another's exclusive
// section but need not exclude each other.
func (d *Dir) LockShared() (unlock func(), err error) { return d.flock(unix.LOCK_SH) }

func (d *Dir) flock(how int) (unlock func(), err error) {
	for {
		err = unix.Flock(d.fd, how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, d.err("lock", "", err)
	}
	return func() { unix.Flock(d.fd, unix.LOCK_UN) }, nil
}

// Sync fsyncs the directory, making the renames, creations and removals
// done in it durable.
func (d *Dir) Sync() error {
	err := d.root.step(StepSyncDir, d.path)
	if err == nil {
		err = d.root.fsync(d.fd)
	}
	if err != nil {
		return d.err("fsync", "", err)
	}
	return nil
}

// Stat describes a file as [Dir.Lstat] and [Dir.ReadFile] saw it.
type Stat struct {
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
	// Ctime is the inode's change time: set by the kernel on every
	// change to the file (for a directory, every entry added, removed or
	// renamed), and never by a caller, unlike ModTime.
	Ctime time.Time
	Dev   uint64
	Ino   uint64
	Nlink uint64
}

func statOf(st *unix.Stat_t) Stat {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	sec, nsec := st.Mtim.Unix()
	csec, cnsec := st.Ctim.Unix()
	return Stat{
		Mode:    mode,
		Size:    st.Size,
		ModTime: time.Unix(sec, nsec),
		Ctime:   time.Unix(csec, cnsec),
		Dev:     uint64(st.Dev),
		Ino:     uint64(st.Ino),
		Nlink:   uint64(st.Nlink),
	}
}

// Stat describes the directory itself.
func (d *Dir) Stat() (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return Stat{}, d.err("stat", "", err)
	}
	return statOf(&st), nil
}

// SetMode sets the permission bits of the directory itself.
func (d *Dir) SetMode(perm fs.FileMode) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	return d.wrap("chmod", "", unix.Fchmod(d.fd, uint32(perm&fs.ModePerm)))
}

// Lstat describes name without following it.
func (d *Dir) Lstat(name string) (Stat, error) {
	if !ValidName(name) {
		return Stat{}, d.err("lstat", name, ErrBadName)
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT && d.settle(name) {
		err = unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return Stat{}, d.err("lstat", name, err)
	}
	return statOf(&st), nil
}

// ReadFile reads the regular file name whole. It never follows a symbolic
// link and never blocks on a FIFO: anything but a regular file is refused
// with [ErrNotRegular], and a file larger than limit bytes with
// [ErrTooLarge], both without reading any content.
func (d *Dir) ReadFile(name string, limit int64) ([]byte, Stat, error) {
	if !ValidName(name) {
		return nil, Stat{}, d.err("open", name, ErrBadName)
	}
	fd, s, err := d.openRegular(name, unix.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) && d.settle(name) {
		fd, s, err = d.openRegular(name, unix.O_RDONLY, 0)
	}
	if err != nil {
		return nil, s, err
	}
	defer unix.Close(fd)
	if s.Size > limit {
		return nil, s, d.err("read", name, fmt.Errorf("%w (%d bytes, limit %d)", ErrTooLarge, s.Size, limit))
	}
	buf := make([]byte, s.Size)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, s, d.err("read", name, err)
		}
		if m == 0 {
			break // truncated since fstat; the caller sees what is there
		}
		n += m
	}
	return buf[:n], s, nil
}

// Head reads at most n bytes from the start of the regular file name,
// with the same refusals as [Dir.ReadFile]: for a caller that needs only a
// file's first part, such as an index's header.
func (d *Dir) Head(name string, n int) ([]byte, error) { return d.ReadAt(name, 0, n) }

// ReadAt reads at most n bytes of the regular file name from offset off,
// with the same refusals as [Dir.ReadFile]: for a caller that keeps its
// place in a file, such as a claim's cursor.
func (d *Dir) ReadAt(name string, off int64, n int) ([]byte, error) {
	if !ValidName(name) {
		return nil, d.err("open", name, ErrBadName)
	}
	fd, st, err := d.openRegular(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	buf := make([]byte, max(0, min(int64(n), st.Size-off)))
	got := 0
	for got < len(buf) {
		m, err := unix.Pread(fd, buf[got:], off+int64(got))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, d.err("read", name, err)
		}
		if m == 0 {
			break
		}
		got += m
	}
	return buf[:got], nil
}

// openRegular is the one way mailfs opens a file it did not just create
// (a message, a record, a note, the format record): relative to d, with
// flags (O_RDONLY, or O_WRONLY|O_APPEND|O_CREAT for a log), never
// following a symbolic link, never blocking (O_NONBLOCK: a FIFO in the
// place of a file answers at once), never taking a terminal, and only a
// regular file: anything else is closed again and refused with
// [ErrNotRegular]. The caller closes fd.
func (d *Dir) openRegular(name string, flags int, perm uint32) (fd int, s Stat, err error) {
	for {
		fd, err = unix.Openat(d.fd, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, perm)
		if err != unix.EINTR {
			break
		}
	}
	if err == unix.ELOOP || err == unix.ENXIO { // a link; a FIFO without a reader, opened to write
		err = ErrNotRegular
	}
	if err != nil {
		return -1, Stat{}, d.err("open", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, Stat{}, d.err("stat", name, err)
	}
	s = statOf(&st)
	if !s.Mode.IsRegular() {
		unix.Close(fd)
		return -1, s, d.err("open", name, ErrNotRegular)
	}
	return fd, s, nil
}

// Create durably writes a new file name holding data, and never replaces
// one: if name exists, Create returns an error matching [fs.ErrExist] and
// leaves both files as they were. On success the file and its name are on
// stable storage. On failure nothing is visible under name.
func (d *Dir) Create(name string, data []byte) error { return d.create(name, data, true, nil) }

// Witnessed is what CreateWitnessed saw of its folder around the rename
// that made the new file.
type Witnessed struct {
	Before, After Stat // the folder's stat just before the temp was made, and just after the rename
	// Alone: nothing happened to the folder's entries between the two but
	// this create's own temp, made and renamed into name: a witness, armed
	// before Before was taken and read after After, counted only those
	// changes. False whenever that cannot be known: no witness on this
	// system, no count of what a create raises here, the rename's fallback
	// (link and unlink), a stat that failed. (What existing entries hold
	// — a file written in place, a mode changed — is not watched: it moves
	// no stamp either.)
	Alone bool

	expect int // the signals a create raises here (see ProbeWitness)
}

// CreateWitnessed is [Dir.Create], and also reports what the folder did
// around the rename, so that a caller can say of the folder "from stamp
// Before to stamp After, this one file moved in and nothing else" — the
// sender's note a reader follows instead of listing the folder. A witness
// that cannot be had only makes Alone false; the create itself is the
// same as Create's.
//
// expect is what a create raises in a watched folder on this kernel, as
// [Dir.ProbeWitness] measured it; 0 or less means unknown (Alone is false).
func (d *Dir) CreateWitnessed(name string, data []byte, expect int) (Witnessed, error) {
	w := Witnessed{expect: expect}
	err := d.create(name, data, true, &w)
	return w, err
}

// ErrNoWitness: this system or file system offers no witness of a
// folder's changes (see [Dir.ProbeWitness]).
var ErrNoWitness = errors.New("durable: no witness of a folder's changes here")

// CreateEphemeral writes a new file as [Dir.Create] does, atomically and
// never replacing one, but without the two fsyncs: the file survives the
// writer's crash, not a power cut. It is for runtime state such as nudges,
// which are worthless after a reboot anyway.
func (d *Dir) CreateEphemeral(name string, data []byte) error {
	return d.create(name, data, false, nil)
}

// create is the one durable create; seen, when not nil, is given what a
// witness of the rename saw (see CreateWitnessed).
func (d *Dir) create(name string, data []byte, durable bool, seen *Witnessed) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("create", name, ErrBadName)
	}
	var w *witness
	var berr error
	if seen != nil && seen.expect > 0 && !d.root.usesFallback() {
		if w = d.armWitness(); w != nil {
			seen.Before, berr = d.Stat()
		}
	}
	tmp, err := d.writeTemp(name, data, durable)
	if err == nil {
		if err = d.root.step(StepRename, d.Join(name)); err != nil {
			err = d.err("rename", name, err)
		} else {
			err = d.root.rename(d, tmp, d, name)
		}
		if err != nil {
			d.unlink(tmp)
		}
	}
	if w != nil {
		var aerr error
		if err == nil {
			seen.After, aerr = d.Stat()
		}
		seen.Alone = w.alone(seen.expect) && err == nil && berr == nil && aerr == nil
	}
	if err != nil {
		return err
	}
	if !durable {
		return nil
	}
	if err := d.Sync(); err != nil {
		// Not durable, so not delivered: take it back rather than leave a
		// file whose sender was told it failed.
		d.unlink(name)
		return err
	}
	return d.root.step(StepDone, d.Join(name))
}

// Exchange durably rewrites the existing file name with data. The new
// content is swapped in with one atomic exchange, which fails with an error
// matching [fs.ErrNotExist] if name has gone meanwhile: a rewrite never
// resurrects a file that another process moved or removed. If check is not
// nil it is given the content that was displaced; if it returns false the
// swap is undone and Exchange returns [ErrChanged], for the caller to start
// again from a fresh read.
func (d *Dir) Exchange(name string, data []byte, check func(old []byte) bool) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("exchange", name, ErrBadName)
	}
	tmp, err := d.writeTemp(name, data, true)
	if err != nil {
		return err
	}
	if err := d.root.step(StepRename, d.Join(name)); err != nil {
		d.unlink(tmp)
		return d.err("exchange", name, err)
	}
	if err := d.root.exchange(d, tmp, name); err != nil {
		d.unlink(tmp)
		return err
	}
	// tmp now holds the displaced content.
	if check != nil {
		old, _, err := d.ReadFile(tmp, 1<<40)
		if err != nil || !check(old) {
			if xerr := d.root.exchange(d, tmp, name); xerr != nil {
				return fmt.Errorf("%w; undoing it failed, the displaced file is %s: %w", ErrChanged, d.Join(tmp), xerr)
			}
			d.unlink(tmp)
			if err != nil {
				return err
			}
			return d.err("exchange", name, ErrChanged)
		}
	}
	if err := d.Sync(); err != nil {
		return err
	}
	d.unlink(tmp)
	return d.root.step(StepDone, d.Join(name))
}

// Replace durably writes name with data, replacing any file of that name.
// It is for files whose last writer should win, such as configuration; mail
// never goes through it. It is the durable write with a plain rename(2) at
// its heart, relative to d's descriptor like every other operation: a dot-
// temp in d, fsync, rename over name, fsync d.
func (d *Dir) Replace(name string, data []byte) error { return d.replace(name, data, true) }

// ReplaceBatched writes name as [Dir.Replace] does — whole and fsynced,
// then renamed into place — but leaves the directory's fsync to the
// caller, who makes it once for a batch of files before relying on their
// names: one directory fsync instead of one per file. It may be called
// from several goroutines at once.
func (d *Dir) ReplaceBatched(name string, data []byte) error { return d.swapIn(name, data, true) }

// ReplaceUnsynced writes name whole and renames it into place, as
// [Dir.ReplaceBatched] does, but fsyncs nothing: it is for a batch of many
// files that the caller makes durable at once with [Root.SyncFS] (where
// [CanSyncFS]), then a [Dir.Sync] of each folder, before relying on any of
// them. It may be called from several goroutines at once.
func (d *Dir) ReplaceUnsynced(name string, data []byte) error { return d.swapIn(name, data, false) }

// SyncFS makes every write to the file system that holds r durable, at
// once (Linux's syncfs(2)): the batch form of an fsync per file, for a
// caller that wrote many with [Dir.ReplaceUnsynced]. Where [CanSyncFS] is
// false it returns an error matching errors.ErrUnsupported.
func (r *Root) SyncFS() error {
	err := r.step(StepSyncDir, r.path)
	if err == nil {
		if r.fsyncFn != nil {
			err = r.fsyncFn(r.dir.fd) // a test's stand-in sees the batch's one sync
		} else {
			err = syncFS(r.dir.fd)
		}
	}
	if err != nil {
		return r.dir.err("syncfs", "", err)
	}
	return nil
}

// ReplaceEphemeral writes name as [Dir.Replace] does, atomically, but
// without the two fsyncs: readers see the old file or the new, never a
// part, and after a power cut either may be there. It is for runtime state
// rewritten on hot paths, such as when an agent's hook last ran.
func (d *Dir) ReplaceEphemeral(name string, data []byte) error { return d.replace(name, data, false) }

// AppendEphemeral appends data to the file name (made if missing), in one
// write(2) with O_APPEND: concurrent appenders' records do not interleave
// on a local file system. Nothing is fsynced: for caches, whose readers
// check each record and stop at the first that does not check out.
func (d *Dir) AppendEphemeral(name string, data []byte) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("append", name, ErrBadName)
	}
	fd, _, err := d.openRegular(name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT, uint32(Perm))
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, data); err != nil {
		return d.err("append", name, err)
	}
	return nil
}

func (d *Dir) replace(name string, data []byte, durable bool) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if err := d.swapIn(name, data, durable); err != nil || !durable {
		return err
	}
	return d.Sync()
}

// swapIn writes data to a temp (fsynced when sync) and renames it over
// name, leaving the directory's fsync to the caller.
func (d *Dir) swapIn(name string, data []byte, sync bool) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("replace", name, ErrBadName)
	}
	tmp, err := d.writeTemp(name, data, sync)
	if err != nil {
		return err
	}
	err = d.root.step(StepRename, d.Join(name))
	if err == nil {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		d.unlink(tmp)
		return d.err("rename", name, err)
	}
	return nil
}

// Move renames name in d to newname in dst without replacing anything. An
// error matching [fs.ErrNotExist] means name was gone (typically another
// process moved it first); one matching [fs.ErrExist] means newname was
// taken, and nothing moved. Move does not sync: call [Dir.Sync] on both
// directories once a batch of moves is done, before reporting them durable.
func (d *Dir) Move(name string, dst *Dir, newname string) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("rename", name, ErrBadName)
	}
	if !ValidName(newname) {
		return dst.err("rename", newname, ErrBadName)
	}
	if err := d.root.step(StepRename, dst.Join(newname)); err != nil {
		return d.err("rename", name, err)
	}
	return d.root.rename(d, name, dst, newname)
}

// MoveOver renames name to newname in d, replacing a file of that name:
// readers see the old file or the new one, never neither. Like Move it
// does not sync.
func (d *Dir) MoveOver(name, newname string) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("rename", name, ErrBadName)
	}
	if !ValidName(newname) {
		return d.err("rename", newname, ErrBadName)
	}
	if err := d.root.step(StepRename, d.Join(newname)); err != nil {
		return d.err("rename", name, err)
	}
	return d.wrap("rename", name, unix.Renameat(d.fd, name, d.fd, newname))
}

// Touch creates the empty file name, never replacing one, and syncs
// nothing: one system call, for a caller that needs a change to the
// directory rather than a file, such as a probe of its clock.
func (d *Dir) Touch(name string) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("create", name, ErrBadName)
	}
	fd, err := unix.Openat(d.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return d.err("create", name, err)
	}
	return d.wrap("close", name, unix.Close(fd))
}

// Remove removes the file name. It does not sync.
func (d *Dir) Remove(name string) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("remove", name, ErrBadName)
	}
	return d.root.remove(d, name)
}

// Chmod sets the permission bits of name, which must not be a symbolic
// link.
func (d *Dir) Chmod(name string, perm fs.FileMode) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	fd, _, err := d.openRegular(name, unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, uint32(perm&fs.ModePerm)); err != nil {
		return d.err("chmod", name, err)
	}
	return nil
}

// writeTemp writes data to a new uniquely named dot-temp in d, with mode
// Perm whatever the umask, and fsyncs it when sync is true. It returns the temp's name. On
// failure it removes the temp: a write that failed is started again from a
// new temp, never retried on the same file.
func (d *Dir) writeTemp(target string, data []byte, sync bool) (string, error) {
	var (
		tmp string
		fd  int
		err error
	)
	if err := d.root.step(StepCreateTemp, d.Join(target)); err != nil {
		return "", d.err("create", target, err)
	}
	for range 100 {
		tmp = fmt.Sprintf("%s%016x%s", TempPrefix, rand.Uint64(), TempSuffix)
		fd, err = unix.Openat(d.fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(Perm))
		if err != unix.EEXIST && err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return "", d.err("create", tmp, err)
	}
	fail := func(op string, err error) (string, error) {
		unix.Close(fd)
		d.unlink(tmp)
		return "", d.err(op, target, err)
	}
	if err := unix.Fchmod(fd, uint32(Perm)); err != nil {
		return fail("chmod", err)
	}
	if err := d.root.step(StepWrite, d.Join(target)); err != nil {
		return fail("write", err)
	}
	for n := 0; n < len(data); {
		m, err := unix.Write(fd, data[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail("write", err)
		}
		n += m
	}
	if sync {
		err := d.root.step(StepSync, d.Join(target))
		if err == nil {
			err = d.root.fsync(fd)
		}
		if err != nil {
			return fail("fsync", err)
		}
	}
	if err := unix.Close(fd); err != nil {
		d.unlink(tmp)
		return "", d.err("close", target, err)
	}
	return tmp, nil
}

func (d *Dir) unlink(name string) { _ = unix.Unlinkat(d.fd, name, 0) }

// wrap is err for an error from a system call that may have succeeded.
func (d *Dir) wrap(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return d.err(op, name, err)
}

func (d *Dir) err(op, name string, err error) error {
	path := d.path
	if name != "" {
		path = d.Join(name)
	}
	path = cmp.Or(path, ".")
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// SetTimes sets the access and modification times of name, which must not
// be a symbolic link (the link itself would be changed, never its target).
func (d *Dir) SetTimes(name string, t time.Time) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	if !ValidName(name) {
		return d.err("chtimes", name, ErrBadName)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	return d.wrap("chtimes", name, unix.UtimesNanoAt(d.fd, name, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// listed tells a test's WithListHook that d is being listed.
func (d *Dir) listed() {
	if d.root != nil && d.root.onList != nil {
		d.root.onList(d.path)
	}
}

// ErrLocked is returned by [Dir.TryLockFile] when another open file
// description (another process, most often) holds the lock.
var ErrLocked = errors.New("locked by another holder")

// TryLockFile takes, without waiting, an exclusive lock (flock) on the
// file name in d, made if missing (mode [Perm]), through the one open
// that never blocks and takes only a regular file. It returns the
// function that lets it go, which removes the name while still holding the
// lock, so that a lock leaves nothing behind; a taker that opened the file
// just before it was removed sees that the name no longer leads to the
// file it locked, and tries again with a new file: two takers never both
// hold it. A lock held elsewhere is [ErrLocked]. The kernel lets the lock
// go if the process dies (the file stays, and the next taker takes it).
func (d *Dir) TryLockFile(name string) (unlock func(), err error) {
	if err := d.root.writable(); err != nil {
		return nil, err
	}
	if !ValidName(name) {
		return nil, d.err("lock", name, ErrBadName)
	}
	for {
		fd, held, err := d.openRegular(name, unix.O_RDWR|unix.O_CREAT, uint32(Perm))
		if err != nil {
			return nil, err
		}
		for {
			err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			unix.Close(fd)
			if err == unix.EWOULDBLOCK {
				return nil, d.err("lock", name, ErrLocked)
			}
			return nil, d.err("lock", name, err)
		}
		named, err := d.lstatRaw(name)
		if err != nil || !Same(named, held) {
			unix.Close(fd) // removed by the holder that left: try the name again
			continue
		}
		return func() {
			unix.Unlinkat(d.fd, name, 0) // while still held: see above
			unix.Close(fd)
		}, nil
	}
}
