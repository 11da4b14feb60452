//go:build unix && !linux

package durable

import "io/fs"

// EachName calls f with the name of every entry of the directory, from
// the first, and whether it is a regular file. The name is valid only
// during the call. (On Linux it reads with getdents(2) and allocates
// nothing per entry; elsewhere it is [Dir.Each].)
func (d *Dir) EachName(f func(name []byte, regular bool)) error {
	return d.Each(func(e fs.DirEntry) { f([]byte(e.Name()), e.Type().IsRegular()) })
}
