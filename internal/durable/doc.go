// Package durable is the one path by which mailfs touches the disk.
//
// Every package of mailfs (maildir, archive, nudgeq, watch, the command)
// reads and writes through a [Root] and the [Dir] handles it opens, so the
// rules below hold everywhere and are written once. Roots are opened only
// by internal/chipset (a mailfs root, with its format guard and its one
// link rule; any other directory by chipset.OpenOther), never by
// [OpenRoot] elsewhere: TestOnlyChipsetOpensARoot keeps it so.
//
// # Writes
//
// [Dir.Create] writes a new file: a uniquely named dot-temp in the target
// directory, write, fsync, rename into place without replacing anything
// (renameat2 RENAME_NOREPLACE on Linux, renamex_np RENAME_EXCL on macOS),
// then fsync the directory. [Dir.Exchange] rewrites an existing file the
// same way but swaps it in with RENAME_EXCHANGE, which fails when the
// target has gone: a rewrite never brings back a file that another process
// moved or deleted meanwhile. [Dir.Replace] is for small configuration files
// where replacing is the point: the same steps with a plain rename(2).
//
// The rename gives atomicity: a reader sees the old state or the new one,
// never a partial file. The fsync of the file before the rename, and of the
// directory after it, give durability: once a write method returns nil the
// new name survives a power cut. A write that fails part-way leaves at most
// a dot-temp behind, and removes even that when it can.
//
// # Witnessed creates
//
// [Dir.CreateWitnessed] is Create that also says whether the folder saw
// nothing else between a stat taken before its temp was made and one
// taken after its rename: what lets a sender note "this one file moved in,
// and nothing else" for readers to follow instead of listing the folder
// (the folder index's adds log). On Linux the witness is dnotify, each
// change raising a queued real-time signal aimed at the writing thread,
// counted against what a create raises on this kernel, learnt once a
// process in a folder of its own (witness_linux.go says why dnotify and
// not inotify, and how it counts). It says "alone" only on that evidence:
// any other change to the folder in the window raises at least one signal
// more, a lost signal shows as SIGIO, and whatever cannot be set up or
// read says "not alone". What it cannot see is a change the kernel does
// not raise: another machine writing to a network file system. So it
// answers only on local file systems it knows (ext2/3/4, XFS, Btrfs,
// tmpfs, F2FS); everywhere else it says "not alone", and readers list the
// folder as before.
//
// # Confinement
//
// A [Root] is opened once; every directory below it is reached from the
// root's descriptor one path element at a time with O_NOFOLLOW, and every
// file is opened relative to its directory's descriptor with O_NOFOLLOW and
// O_NONBLOCK. No symbolic link below the root is ever followed, not even one
// that points back inside it (stricter than [os.Root], which follows those),
// a FIFO never blocks a reader, and a name containing "/" or equal to "." or
// ".." is refused before any system call.
//
// # Caveats
//
// The guarantees assume a local POSIX file system. rename(2) is not atomic
// on every network file system, and some (and some FUSE mounts) reject the
// renameat2 flags; see the project README for what mailfs promises there.
package durable
