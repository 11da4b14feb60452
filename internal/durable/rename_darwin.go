//go:build darwin

package durable

import "golang.org/x/sys/unix"

// rename moves old in src to new in dst, never replacing new.
func (r *Root) rename(src *Dir, old string, dst *Dir, new string) error {
	err := unix.RenameatxNp(src.fd, old, dst.fd, new, unix.RENAME_EXCL)
	if isUnsupported(err) {
		err = linkRename(src, old, dst, new)
	}
	if err != nil {
		return src.err("rename", old, err)
	}
	return nil
}

// exchange swaps the names a and b in d atomically; both must exist.
func (r *Root) exchange(d *Dir, a, b string) error {
	if err := unix.RenameatxNp(d.fd, a, d.fd, b, unix.RENAME_SWAP); err != nil {
		return d.err("exchange", b, err)
	}
	return nil
}

func isUnsupported(err error) bool {
	return err == unix.EINVAL || err == unix.ENOTSUP
}
