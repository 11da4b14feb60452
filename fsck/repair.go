package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// ErrChanged is what a repair returns when what the scan judged is no
// longer so at the moment it would act: a message moved, a temp was
// renamed into place, a file was rewritten. Nothing was changed; the next
// run looks again. It reaches the caller only as a finding's Action.
var ErrChanged = errors.New("fsck: changed since the scan; not repaired")

// changedAction is the Action of a finding whose repair met ErrChanged.
const changedAction = "changed since the scan; not repaired (the next run looks again)"

// Every repair acts in three steps: take the locks the verbs that could
// be changing the same names take, look again at what the scan judged,
// and act only if it is still so. The scan's view is never enough on its
// own: a folder-by-folder scan can see one message under two names because
// it moved between two folders while they were listed.
//
// The locks are the folders' own (a rename or removal in a folder holds
// it on file systems without renameat2's flags, so a link-then-unlink
// move in progress is never taken for one cut short) and, where a queue
// is involved, the queues' folder, which claims and releases hold. They
// are taken in one order: the queues' folder first (claims and releases
// hold it, then at most one folder's), then the others sorted by path.

// underLocks opens the folders at paths (relative to the root), locks them
// as the verbs do, and runs act with them open; act must use these handles
// (a second handle on a locked folder would wait for itself).
func (c *checker) underLocks(paths []string, act func(open map[string]*durable.Dir) error) error {
	paths = slices.Clone(paths)
	slices.SortFunc(paths, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == maildir.QueueDir:
			return -1
		case b == maildir.QueueDir:
			return 1
		case a < b:
			return -1
		}
		return 1
	})
	paths = slices.Compact(paths)
	open := make(map[string]*durable.Dir, len(paths))
	defer func() {
		for _, d := range open {
			d.Close()
		}
	}()
	for _, p := range paths {
		d, err := c.reopen(p)
		if errors.Is(err, fs.ErrNotExist) {
			return ErrChanged // the folder itself went
		}
		if err != nil {
			return err
		}
		open[p] = d
		unlock, err := d.Lock()
		if err != nil {
			return err
		}
		defer unlock()
	}
	return act(open)
}

// queueLock returns the queues' folder when any of places is in a queue,
// so that a repair of a queue item holds the lock claims and releases take.
func queueLock(places []place) []string {
	for _, p := range places {
		if p.box.Kind == maildir.KindQueue {
			return []string{maildir.QueueDir}
		}
	}
	return nil
}

// still looks name up in d again and reports ErrChanged unless it is the
// file the scan judged (same inode, same size and modification time, the
// same number of names).
func still(d *durable.Dir, name string, judged durable.Stat) error {
	now, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return ErrChanged
	}
	if err != nil {
		return err
	}
	if !durable.Same(now, judged) || now.Size != judged.Size || !now.ModTime.Equal(judged.ModTime) || now.Nlink != judged.Nlink {
		return ErrChanged
	}
	return nil
}

// stillSame reports whether name in d is still the file judged (see still).
func stillSame(d *durable.Dir, name string, judged durable.Stat) bool {
	return still(d, name, judged) == nil
}

// dropSecondNames ends a move cut short between its link and its unlink:
// every place of id but keep is removed, each only while it is at that
// moment a second name of the file keep holds ([durable.Dir.RemoveSecond]).
func (c *checker) dropSecondNames(id string, ps []place, keep int) error {
	paths := queueLock(ps)
	for _, p := range ps {
		paths = append(paths, p.dir)
	}
	name := id + ".json"
	return c.underLocks(paths, func(open map[string]*durable.Dir) error {
		kd := open[ps[keep].dir]
		for i, p := range ps {
			if i == keep {
				continue
			}
			d := open[p.dir]
			if err := d.RemoveSecond(name, kd, name, ps[keep].st); err != nil {
				return err
			}
			if err := d.Sync(); err != nil {
				return err
			}
		}
		return nil
	})
}

// removeSecond removes name from d, a second name of keep in the same
// folder (a temp linked into place, a set-aside copy never taken apart),
// under the folder's lock.
func (c *checker) removeSecond(d *durable.Dir, name, keep string, judged durable.Stat) error {
	return c.underLocks([]string{d.Path()}, func(open map[string]*durable.Dir) error {
		dd := open[d.Path()]
		if err := dd.RemoveSecond(name, dd, keep, judged); err != nil {
			return err
		}
		return dd.Sync()
	})
}

// removeTemp removes an old dot-temp, only while it is still the temp the
// scan judged: the same file, unchanged, with no other name.
func (c *checker) removeTemp(d *durable.Dir, name string, judged durable.Stat) error {
	return c.underLocks([]string{d.Path()}, func(open map[string]*durable.Dir) error {
		dd := open[d.Path()]
		if err := still(dd, name, judged); err != nil {
			return err
		}
		if judged.Nlink != 1 {
			return ErrChanged // never the last name of anything but itself
		}
		if err := dd.Remove(name); err != nil {
			return err
		}
		return dd.Sync()
	})
}

// moveBack renames name to orig in d (a set-aside file back under its
// name, an orphaned nudge claim back into its queue), only while name is
// still the file the scan judged; it never replaces a file.
func (c *checker) moveBack(d *durable.Dir, name, orig string, judged durable.Stat) error {
	return c.underLocks([]string{d.Path()}, func(open map[string]*durable.Dir) error {
		dd := open[d.Path()]
		if err := still(dd, name, judged); err != nil {
			return err
		}
		if err := dd.Move(name, dd, orig); err != nil {
			return err
		}
		return dd.Sync()
	})
}

// quarantineJudged moves name, judged not a valid message, into the
// folder's quarantine only while it is still the file the scan read: a
// script that rewrote it since gets another look next time.
func (c *checker) quarantineJudged(d *durable.Dir, name, why string, judged durable.Stat) (dest string, err error) {
	err = c.underLocks([]string{d.Path()}, func(open map[string]*durable.Dir) error {
		dd := open[d.Path()]
		if err := still(dd, name, judged); err != nil {
			return err
		}
		dest, err = c.quarantine(dd, name, why)
		return err
	})
	return dest, err
}

// outcome records what a repair's error means in f.
func outcome(f *Finding, err error) {
	switch {
	case errors.Is(err, ErrChanged), errors.Is(err, durable.ErrNotSecond):
		f.Action = changedAction
		if errors.Is(err, durable.ErrLeftAside) {
			f.Action += fmt.Sprintf("; %v", err)
		}
	default:
		f.Action = "not repaired: " + err.Error()
	}
}
