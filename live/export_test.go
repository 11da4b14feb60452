package live

import "time"

// OnStarted sets d's test seam: f runs with the session's start mark
// (the record's inode change time) before the mailbox is first scanned.
func OnStarted(d *Deliverer, f func(mark time.Time)) { d.started = f }

// OnWatching sets d's test seam: f runs once the mailbox's first scan is
// done.
func OnWatching(d *Deliverer, f func()) { d.watching = f }
