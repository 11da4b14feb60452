//go:build unix

package durable

import (
	"strings"

	"golang.org/x/sys/unix"
)

// SwapPrefix starts the name a rewritten file's old content has, for a
// moment, in the fallback rewrite (see [Dir.Exchange]); the rest is the
// file's own name. A file left under it by a crash is an older copy of a
// message whose name holds its newer content (or has moved on since):
// fsck quarantines it, never puts it back.
const SwapPrefix = ".mailfs-swap."

// The fallbacks, for file systems that refuse the renameat2 flags (EINVAL
// from some FUSE and network file systems), and for systems without them:
//
//   - a no-replace rename is link(2), which refuses an existing target, then
//     (between two folders) an fsync of the new name's folder, then
//     unlink(2) of the old name; a crash between the two leaves both names
//     on one file, never neither, and nothing is replaced — without the
//     fsync a power cut could keep the unlink and drop the link;
//   - an exchange is a link of the file to SwapPrefix+name (failing if it
//     has gone, so nothing is resurrected), then a plain rename(2) of the
//     new file over the name (atomic: readers see the old file or the new,
//     never neither), then a rename of the old one, now only under the
//     swap name, to the new file's temp name, where the caller finds the
//     displaced content. A crash after the link leaves the swap name a
//     second name of the file (fsck removes it); after the rename over the
//     name, an older copy beside the newer one (fsck quarantines it). The
//     name never goes missing, so a swap file never stands for a message
//     that has no other name: putting one back could only resurrect a
//     message moved or deleted since.
// In fallback mode every rename, exchange and removal in a directory holds
// the directory's advisory lock, so that a remove or a move waits for an
// exchange in progress instead of finding the file missing.
//
// The mode is the file system's, not the process's: a file system that
// refuses the flags refuses every process, so all writers of one tree use
// the fallbacks or none do. The two must not be mixed on one tree: a
// native rename takes no folder lock, so it could move a name out from
// under a fallback exchange in progress, which then writes the name again
// (one message, two files). Only tests force the fallbacks, and a test
// that runs writers side by side forces them on all or none.

// usesFallback reports whether r uses the fallbacks: because a test forced it,
// or because the file system refused the flags once.
func (r *Root) usesFallback() bool { return r.forced || r.refused.Load() }

// rename moves old in src to new in dst, never replacing new.
func (r *Root) rename(src *Dir, old string, dst *Dir, new string) error {
	if !r.usesFallback() {
		err := renameNoReplace(src, old, dst, new)
		if !isUnsupported(err) {
			return src.wrap("rename", old, err)
		}
		r.refused.Store(true)
	}
	unlock, err := src.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	if err := unix.Linkat(src.fd, old, dst.fd, new, 0); err != nil {
		return src.wrap("rename", old, err)
	}
	// Between two folders, the new name is made durable before the old
	// one goes: the two calls change two folders, and a power cut may
	// keep the unlink in one and drop the link in the other (the new
	// folder not yet fsynced), which leaves the file under no name.
	if dst.path != src.path {
		if err := dst.Sync(); err != nil {
			return err
		}
	}
	// A crash here leaves one file under both names, never neither.
	if err := r.step(StepLinked, dst.Join(new)); err != nil {
		return err
	}
	return src.wrap("rename", old, unix.Unlinkat(src.fd, old, 0))
}

// exchange swaps the names a (a temp) and b in d; both must exist.
func (r *Root) exchange(d *Dir, a, b string) error {
	if !r.usesFallback() {
		err := renameExchange(d, a, b)
		if !isUnsupported(err) {
			return d.wrap("exchange", b, err)
		}
		r.refused.Store(true)
	}
	unlock, err := d.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	aside := SwapPrefix + b
	if !ValidName(aside) {
		return d.err("exchange", b, unix.ENAMETOOLONG)
	}
	if err := unix.Linkat(d.fd, b, d.fd, aside, 0); err != nil {
		return d.err("exchange", b, err) // ENOENT: b has gone; nothing changed
	}
	if err := r.step(StepLinked, d.Join(aside)); err != nil {
		return err
	}
	// Under d's lock no mailfs process moves or removes b meanwhile: the
	// rename over it replaces the file just linked, never a name gone.
	if err := unix.Renameat(d.fd, a, d.fd, b); err != nil {
		unix.Unlinkat(d.fd, aside, 0) // still a second name of b's file
		return d.err("exchange", b, err)
	}
	if err := r.step(StepAside, d.Join(aside)); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd, aside, d.fd, a); err != nil {
		return d.err("exchange", b, err)
	}
	return nil
}

// remove unlinks name in d, under d's lock in fallback mode.
func (r *Root) remove(d *Dir, name string) error {
	if r.usesFallback() {
		unlock, err := d.Lock()
		if err != nil {
			return err
		}
		defer unlock()
	}
	return d.wrap("remove", name, unix.Unlinkat(d.fd, name, 0))
}

// linkRename is the no-replace rename by link, then unlink.
func linkRename(src *Dir, old string, dst *Dir, new string) error {
	if err := unix.Linkat(src.fd, old, dst.fd, new, 0); err != nil {
		return err
	}
	return unix.Unlinkat(src.fd, old, 0)
}

// IsSwap reports whether name is a file the fallback rewrite set aside, and
// returns the name it belongs under.
func IsSwap(name string) (orig string, ok bool) {
	orig, ok = strings.CutPrefix(name, SwapPrefix)
	return orig, ok && orig != ""
}

// settle reports whether name, missing, is being rewritten in fallback mode
// (its aside exists) and, if so, waits for the rewrite to finish, so that
// the caller can look again. Lookups made outside the directory's lock
// (Lstat, ReadFile) use it, so that a rewrite in progress does not make a
// message seem gone.
func (d *Dir) settle(name string) bool {
	if !d.root.usesFallback() || !ValidName(SwapPrefix+name) {
		return false
	}
	var st unix.Stat_t
	if unix.Fstatat(d.fd, SwapPrefix+name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	if unlock, err := d.Lock(); err == nil {
		unlock()
	}
	return true
}
