//go:build linux

package durable

import "golang.org/x/sys/unix"

// renameNoReplace is renameat2(RENAME_NOREPLACE).
func renameNoReplace(src *Dir, old string, dst *Dir, new string) error {
	return unix.Renameat2(src.fd, old, dst.fd, new, unix.RENAME_NOREPLACE)
}

// renameExchange is renameat2(RENAME_EXCHANGE).
func renameExchange(d *Dir, a, b string) error {
	return unix.Renameat2(d.fd, a, d.fd, b, unix.RENAME_EXCHANGE)
}

// isUnsupported reports whether err says the file system does not know the
// renameat2 flags (some FUSE and network file systems).
func isUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.ENOTSUP
}
