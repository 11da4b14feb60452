//go:build unix && !linux

package durable

import (
	"io/fs"
	"syscall"
)

// EachName calls f with the name of every entry of the directory, from
// the first, and whether it is a regular file. The name is valid only
// during the call. (On Linux it reads with getdents(2) and allocates
// nothing per entry; elsewhere it is [Dir.Each].)
func (d *Dir) EachName(f func(name []byte, regular bool)) error {
	return d.Each(func(e fs.DirEntry) { f([]byte(e.Name()), e.Type().IsRegular()) })
}

// Scan calls f with the name, inode number and type of every entry of the
// directory, from the first. (On Linux it reads with getdents(2);
// elsewhere it is [Dir.Each] and an lstat per entry for the inode.)
func (d *Dir) Scan(f func(name []byte, ino uint64, typ fs.FileMode)) error {
	return d.Each(func(e fs.DirEntry) {
		info, err := e.Info()
		if err != nil {
			return // gone since the listing
		}
		var ino uint64
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			ino = uint64(st.Ino)
		}
		f([]byte(e.Name()), ino, e.Type())
	})
}
