package durable

import (
	"bytes"
	"encoding/binary"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// EachName calls f with the name of every entry of the directory, from
// the first, and whether the directory lists it as a regular file (also
// true when the file system does not say: check before trusting it). The
// name is valid only during the call. Entries are read with getdents(2)
// into one buffer, so listing allocates nothing per entry: for callers
// that scan a large directory for a few names. It is not safe for
// concurrent use on one Dir, nor with [Dir.Each].
func (d *Dir) EachName(f func(name []byte, regular bool)) error {
	return d.getdents(func(name []byte, _ uint64, typ byte) {
		f(name, typ == unix.DT_REG || typ == unix.DT_UNKNOWN)
	})
}

// Scan calls f with the name, inode number and type of every entry of the
// directory, from the first, as [Dir.EachName] does: one getdents(2)
// buffer, nothing allocated per entry, the name valid only during the
// call. The type comes from the directory; where the file system does not
// say, Scan asks with an lstat.
func (d *Dir) Scan(f func(name []byte, ino uint64, typ fs.FileMode)) error {
	var st unix.Stat_t
	return d.getdents(func(name []byte, ino uint64, typ byte) {
		var mode fs.FileMode
		switch typ {
		case unix.DT_REG:
		case unix.DT_DIR:
			mode = fs.ModeDir
		case unix.DT_LNK:
			mode = fs.ModeSymlink
		case unix.DT_FIFO:
			mode = fs.ModeNamedPipe
		case unix.DT_SOCK:
			mode = fs.ModeSocket
		case unix.DT_CHR:
			mode = fs.ModeDevice | fs.ModeCharDevice
		case unix.DT_BLK:
			mode = fs.ModeDevice
		default:
			if unix.Fstatat(d.fd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
				return // gone since the listing
			}
			mode = statOf(&st).Mode.Type()
		}
		f(name, ino, mode)
	})
}

func (d *Dir) getdents(f func(name []byte, ino uint64, typ byte)) error {
	d.listed()
	if _, err := unix.Seek(d.fd, 0, io.SeekStart); err != nil {
		return d.err("seek", "", err)
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(d.fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return d.err("getdents", "", err)
		}
		if n <= 0 {
			return nil
		}
		// struct linux_dirent64: ino u64, off s64, reclen u16, type u8,
		// then the name, NUL-terminated and padded.
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen < 19 || off+reclen > n {
				return d.err("getdents", "", unix.EIO)
			}
			ino, typ, name := binary.NativeEndian.Uint64(buf[off:]), buf[off+18], buf[off+19:off+reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			if string(name) == "." || string(name) == ".." {
				continue
			}
			f(name, ino, typ)
		}
	}
}
