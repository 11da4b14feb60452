// Package durable is the one path by which mailfs touches the disk: every
// package reads and writes through a [Root] and the [Dir] handles it
// opens.
//
// [Dir.Create] writes a new file (dot-temp, write, fsync, rename without
// replacing, fsync the directory); [Dir.Exchange] rewrites one that must
// still be there; [Dir.Replace] is for small files where replacing is the
// point. The rename gives atomicity, the two fsyncs durability. No
// symbolic link below the root is ever followed. Roots are opened only by
// internal/chipset (its format guard and link rule), never by [OpenRoot]
// elsewhere: TestOnlyChipsetOpensARoot keeps it so.
//
// # Caveats
//
// The guarantees assume a local POSIX file system: rename(2) is not
// atomic on every network file system, and some (and some FUSE mounts)
// reject the renameat2 flags. Witnessed creates ([Dir.CreateWitnessed])
// answer only on local file systems they know. The long form:
// docs/durable.md.
package durable
