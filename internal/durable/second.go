//go:build unix

package durable

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ErrNotSecond is returned by [Dir.RemoveSecond] when the name it was asked
// to remove is not, at that moment, a second name of the file its caller
// judged: it is gone, it is another file, or it is the file's only name.
// Nothing was removed.
var ErrNotSecond = errors.New("not a second name of the file judged (changed since it was seen)")

// ErrLeftAside is joined to [ErrNotSecond] in the one case where
// [Dir.RemoveSecond] could not put a name back: it was taken again while
// the file was aside. The file is whole under [SwapPrefix]+name, where
// fsck's swap repair finds it.
var ErrLeftAside = errors.New("left under its set-aside name, its own taken meanwhile")

// Same reports whether a and b describe the same file (device and inode).
func Same(a, b Stat) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// RemoveSecond removes name from d only while it is one of at least two
// names of the file judged (identified by its device and inode), and
// keep, in dir kd, is another of them. It is how a repair ends a move or
// a write cut short between its link and its unlink without ever removing
// the last name of a message that moved meanwhile.
//
// The check and the removal cannot be one system call, so the name is
// first renamed aside, without replacing anything, to the name the
// fallback rewrite uses ([SwapPrefix]+name): once aside, no other process
// can reach it by any name it knows. Then the file it holds is checked —
// still the file judged, still with another name, and keep still that
// file — and only then unlinked. If the check fails the name is renamed
// back and [ErrNotSecond] returned; if the name was taken again
// meanwhile, the file stays aside, where fsck's swap repair puts it back
// or quarantines it, and the error says so. A crash at any step leaves
// the file under at least one name.
//
// The caller holds the locks the writers of both directories take, so
// that a fallback move in progress (link, then unlink, under the source
// directory's lock) is not mistaken for a finished one; RemoveSecond
// takes no lock itself. It fsyncs kd when that is another folder, before
// anything is removed; it does not sync d: call [Dir.Sync] after.
func (d *Dir) RemoveSecond(name string, kd *Dir, keep string, judged Stat) error {
	if err := d.root.writable(); err != nil {
		return err
	}
	aside := SwapPrefix + name
	if !ValidName(name) || !ValidName(aside) || !ValidName(keep) {
		return d.err("remove", name, ErrBadName)
	}
	second := func(n string) bool {
		a, aerr := d.lstatRaw(n)
		k, kerr := kd.lstatRaw(keep)
		return aerr == nil && kerr == nil && Same(a, judged) && Same(k, judged) && a.Nlink >= 2
	}
	if !second(name) {
		return d.err("remove", name, ErrNotSecond)
	}
	// The kept name, in another folder, is made durable first: a move cut
	// short after its link may have been stopped before it fsynced that
	// folder, and a power cut must not keep this removal and drop that
	// name.
	if kd.path != d.path {
		if err := kd.Sync(); err != nil {
			return err
		}
	}
	if err := linkRenameOrRename(d, name, aside); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return d.err("remove", name, ErrNotSecond)
		}
		return d.err("remove", name, err)
	}
	err := d.root.step(StepAside, d.Join(aside))
	if err == nil && second(aside) {
		return d.wrap("remove", aside, unix.Unlinkat(d.fd, aside, 0))
	}
	if err == nil {
		err = ErrNotSecond
	}
	// Not a second name any more: put it back as it was.
	if perr := linkRenameOrRename(d, aside, name); perr != nil {
		if st, serr := d.lstatRaw(name); serr == nil && Same(st, judged) {
			// The name came back as the same file: the aside is a
			// second name of it after all.
			unix.Unlinkat(d.fd, aside, 0)
			return d.err("remove", name, err)
		}
		return d.err("remove", name, errors.Join(err, ErrLeftAside, perr))
	}
	return d.err("remove", name, err)
}

// linkRenameOrRename renames old to new in d without replacing anything,
// with the fallback where the file system refuses renameat2's flags. It
// takes no lock: the caller holds d's.
func linkRenameOrRename(d *Dir, old, new string) error {
	if !d.root.usesFallback() {
		err := renameNoReplace(d, old, d, new)
		if !isUnsupported(err) {
			return err
		}
		d.root.refused.Store(true)
	}
	return linkRename(d, old, d, new)
}

// lstatRaw is [Dir.Lstat] without its wait for a fallback rewrite in
// progress, for a caller that holds the directory's lock itself.
func (d *Dir) lstatRaw(name string) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return Stat{}, err
	}
	return statOf(&st), nil
}
