//go:build unix

package durable

import "golang.org/x/sys/unix"

// linkRename is the no-replace rename for file systems without one: link(2)
// refuses an existing target, then the old name is removed. A crash between
// the two steps leaves both names on one file; nothing is ever replaced.
func linkRename(src *Dir, old string, dst *Dir, new string) error {
	if err := unix.Linkat(src.fd, old, dst.fd, new, 0); err != nil {
		return err
	}
	return unix.Unlinkat(src.fd, old, 0)
}
