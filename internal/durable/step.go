//go:build unix

package durable

import "golang.org/x/sys/unix"

// A Step is a point in a durable write, named for fault-injection tests.
type Step int

// The steps of a write, in order. A fault at a step stands in for the
// system call that step makes: an error from it fails the write exactly as
// that call's error would, and the call is not made; a process killed there
// leaves the tree as it was just before the call.
const (
	StepCreateTemp Step = iota + 1 // open the dot-temp (nothing exists yet)
	StepWrite                      // write the data (the temp exists, empty)
	StepSync                       // fsync the temp (it holds the data)
	StepRename                     // the rename, exchange or move (the temp is durable)
	StepSyncDir                    // fsync the directory (the name is in place)
	StepDone                       // nothing: the write is durable and about to return

	// StepLinked is reached only in the fallbacks: in the rename (link,
	// then unlink), in place of the unlink: the file has its new name and
	// still its old one; in the exchange, after the file is linked to its
	// swap name: the swap name is a second name of it.
	StepLinked

	// StepAside is reached in [Dir.RemoveSecond], between renaming a name
	// aside and checking the file it holds (a test changes the world there
	// to prove the check is made after the rename), and in the fallback
	// exchange after the new file is renamed over the name: the old one is
	// only under its swap name.
	StepAside
)

var stepNames = [...]string{"", "create-temp", "write", "fsync", "rename", "fsync-dir", "done", "linked", "aside"}

func (s Step) String() string {
	if s > 0 && int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "step?"
}

// An Option configures a [Root] as [OpenRoot] opens it. The options are
// test seams, for tests in this module (the package is internal).
type Option func(*Root)

// WithFault makes every write under the root call f at each step, with the
// root-relative path being written; an error f returns stands in for that
// step's system call.
func WithFault(f func(step Step, path string) error) Option { return func(r *Root) { r.fault = f } }

// WithWriteGuard makes every write under the root (a file created,
// replaced, moved, removed, a mode or time set, a folder made) ask guard
// first: an error it returns fails the write before anything is touched.
// Reading is never asked. The caller keeps guard cheap (it is asked at
// every write) and must not write from it. Given more than once (a test's
// guard beside chipset's format guard), every guard is asked, in order,
// and the first error fails the write.
func WithWriteGuard(guard func() error) Option {
	return func(r *Root) {
		prev := r.guard
		if prev == nil {
			r.guard = guard
			return
		}
		r.guard = func() error {
			if err := prev(); err != nil {
				return err
			}
			return guard()
		}
	}
}

// WithFsync makes the root call f in place of fsync(2), for every file and
// directory it makes durable: a test counts the calls (and makes them),
// so that a durability claim fails its test if a call is lost.
func WithFsync(f func(fd int) error) Option { return func(r *Root) { r.fsyncFn = f } }

// fsync is fsync(2), or the test's stand-in.
func (r *Root) fsync(fd int) error {
	if r.fsyncFn != nil {
		return r.fsyncFn(fd)
	}
	return unix.Fsync(fd)
}

// WithFallback forces the rename fallbacks of file systems that refuse
// renameat2's flags (see [Root.rename]).
func WithFallback() Option { return func(r *Root) { r.forced = true } }

func (r *Root) step(s Step, path string) error {
	if r.fault == nil {
		return nil
	}
	return r.fault(s, path)
}

// WithListHook has f told the path of every directory listed (getdents or
// ReadDir), for tests that hold a reader to the listings it promises.
func WithListHook(f func(path string)) Option { return func(r *Root) { r.onList = f } }

// WithBase says that the root is the directory rel of a larger tree,
// reached by a link the caller chose to follow (a nudge queue shared with
// Gas Town): every [Dir.Path], error path and fault path is then given
// relative to that tree, so that what a caller prints or opens again by
// path names the directory where it sits in the tree.
func WithBase(rel string) Option { return func(r *Root) { r.base = rel } }
