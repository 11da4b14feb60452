// Package watch tells agents about new mail the moment it lands, instead of
// making them poll.
//
// A [Watcher] reports one [Event] per message: every unread message already
// in a watched mailbox when it starts, then every message that arrives,
// each at most once (by id). It never reports a message before the whole
// file parses. [Watcher.Watch] starts it; [Watcher.Close] (or the end of
// Watch's context) stops it, and Close returns once it has stopped.
//
// # How
//
// On Linux and macOS it uses fsnotify (inotify, kqueue) on each mailbox
// directory and on state/mail, so a mailbox created later is picked up. It
// adds the watches before it scans, so nothing that arrives during start-up
// is missed, and it treats every event as a hint to look at the file
// itself: a message renamed into place is reported once, when its name
// appears; a file a script writes in several steps is retried at each write
// until it parses. A file that still does not parse after [Watcher.Grace]
// is reported to Warn once and skipped until it changes; a later valid
// rewrite is reported. When the kernel's event queue overflows
// (fsnotify.ErrEventOverflow) the watcher rescans every mailbox, so an
// overflow costs a rescan, never a message.
//
// With [Watcher.Poll] set it scans every mailbox at that interval instead,
// with the same events. Use it where inotify does not see other machines'
// writes or does not work at all: NFS and other network file systems, some
// FUSE and container mounts.
//
// # Limits
//
// inotify needs one watch per mailbox (plus a few for state/mail and its
// parents) and one instance per watcher. Linux's defaults are at least 8,192
// watches and 128 instances per user; when one runs out, [Watcher.Watch]
// fails with an error naming the sysctl to raise.
//
// "At most once" is by the ids a watcher remembers, and it remembers what
// its folders hold, not everything they ever held: once the ids it keeps
// pass twice what it kept last time plus 1,024, it lists the folder (no
// file opened) and forgets the ids no longer there, so a watcher running
// for weeks holds memory in proportion to its folders. A message that
// leaves and comes back after such a forget (restored from the archive, or
// a file a git checkout removed and wrote again just as the folder was
// listed) is reported again: twice, never missed.
package watch
