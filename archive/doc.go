// Package archive keeps mailboxes small: it moves messages older than a
// cut-off (24 hours by default) from mail/<agent>/ into mail/<agent>/archive/,
// where they stay readable and can be restored.
//
// # Age
//
// A message's age comes from the stamp at the start of its file name, else
// from its "timestamp" key, else from the file's mtime. A sweep reads only
// the directory for names that carry a stamp: it opens a file only when the
// name has no stamp, or when [Sweeper.KeepUnread] needs its "read" key. A
// message stamped in the future is never old enough to move.
//
// # Guarantees
//
// Each move is a rename that never replaces a file; both folders are
// fsynced once per sweep, after the moves and before the sweep reports
// them. A sweep is idempotent and safe to run from cron and from several
// processes at once, alongside senders and markers: every message ends up
// exactly once, in the mailbox or in its archive. When the archive already
// holds a message with the same id (restored, then delivered again by a
// script), neither file is moved or replaced: the newer one stays in the
// mailbox and the sweep reports the clash on every run until someone
// resolves it (mailfs never renames a message, since its id is what replies
// and threads refer to).
package archive
