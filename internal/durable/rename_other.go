//go:build unix && !linux && !darwin

package durable

import "golang.org/x/sys/unix"

// rename moves old in src to new in dst, never replacing new. Without a
// no-replace rename on this system it links, then unlinks.
func (r *Root) rename(src *Dir, old string, dst *Dir, new string) error {
	if err := linkRename(src, old, dst, new); err != nil {
		return src.err("rename", old, err)
	}
	return nil
}

// exchange is not available on this system.
func (r *Root) exchange(d *Dir, a, b string) error {
	return d.err("exchange", b, unix.ENOTSUP)
}
