//go:build darwin

package durable

import "golang.org/x/sys/unix"

// renameNoReplace is renamex_np(RENAME_EXCL).
func renameNoReplace(src *Dir, old string, dst *Dir, new string) error {
	return unix.RenameatxNp(src.fd, old, dst.fd, new, unix.RENAME_EXCL)
}

// renameExchange is renamex_np(RENAME_SWAP).
func renameExchange(d *Dir, a, b string) error {
	return unix.RenameatxNp(d.fd, a, d.fd, b, unix.RENAME_SWAP)
}

func isUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOTSUP
}
