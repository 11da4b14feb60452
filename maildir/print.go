package maildir

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// A FolderStamp identifies one state of a folder: its device, inode,
// modification and change times. The store's folder index trusts it by
// one rule, and so must anyone who keeps what they read of a folder
// (see [Store.Stamp]).
type FolderStamp = folderindex.Stamp

// Stamp returns the stamp of box b's folder (its archive when archived),
// to be taken before reading the folder, and whether it is settled. What
// was read after a settled stamp stands for the folder as long as its
// stamp stays the same: every change made through the directory — a
// send, a mark (a rewrite renamed over the file), an archive, a claim, a
// script's drop or mv, a git pull — moves its change time, which no
// caller can set back. An unsettled stamp may not move at the next change
// (the folder changed within [RacyWindow], on a file system whose clock
// moves in ticks, so a change in the same tick leaves it as it is): what
// was read after it must be read again next time. This is the folder
// index's own rule ([IndexDir]), and, like the index, a stamp does not see
// a file rewritten in place under its own name until its folder next
// changes.
//
// A folder that does not exist has the zero stamp, settled: its creation
// moves the stamp.
func (s *Store) Stamp(b Address, archived bool) (FolderStamp, bool, error) {
	d, err := s.root.Dir(b.Dir(archived))
	if d == nil {
		return FolderStamp{}, err == nil, err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return FolderStamp{}, false, err
	}
	return folderindex.StampOf(st), s.settled(st, s.now()), nil
}

// settled reports whether a folder whose stat is st, taken at now, may be
// trusted to move at its next change.
func (s *Store) settled(st durable.Stat, now time.Time) bool {
	return !s.rules(false).DirRacy(st, now)
}

// Print returns a number that changes whenever a folder of the town
// changes: the folders of every mailbox and its archive, every queue and
// every channel, the folders that hold them, and the folders inside each
// of extra (folders of folders, relative to the root, such as the nudge
// queues' runtime/nudge). It stats folders, never a file.
//
// Its rule is [Store.Stamp]'s: a print taken while any of those folders
// was unsettled is marked so, and differs from the print of the same
// folders once they settle, so that a caller comparing prints hears of a
// change made in the same clock tick as its look — at the latest one
// RacyWindow later.
func (s *Store) Print(extra ...string) uint64 {
	now := s.now()
	h := fnv.New64a()
	var buf [8]byte
	add := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	unsettled := false
	stamp := func(name string, st durable.Stat, err error) {
		h.Write([]byte(name))
		if err != nil {
			add(0)
			return
		}
		p := folderindex.StampOf(st)
		add(p.Dev)
		add(p.Ino)
		add(uint64(p.Mtime))
		add(uint64(p.Ctime))
		if !s.settled(st, now) {
			unsettled = true
		}
	}
	for i, top := range append([]string{MailDir, QueueDir, ChannelDir}, extra...) {
		d, err := s.root.Dir(top)
		if d == nil {
			stamp(top, durable.Stat{}, errors.Join(err, fs.ErrNotExist))
			continue
		}
		st, err := d.Stat()
		stamp(top, st, err)
		var names []string
		var links []bool
		d.Scan(func(name []byte, _ uint64, typ fs.FileMode) {
			if typ.IsDir() || typ&fs.ModeSymlink != 0 {
				names = append(names, string(name))
				links = append(links, typ&fs.ModeSymlink != 0)
			}
		})
		for j, n := range names {
			st, err := d.Lstat(n)
			if links[j] {
				// A folder shared with Gas Town (a nudge queue): the
				// folder it leads to, through the root's one way of
				// following a link, not the link.
				st, err = s.linkedStat(d.Join(n))
			}
			stamp(n, st, err)
			if i != 0 || !st.Mode.IsDir() {
				continue
			}
			if sub, err := d.Sub(n); err == nil {
				st, err := sub.Lstat(ArchiveDir)
				stamp(ArchiveDir, st, err)
				sub.Close()
			}
		}
		d.Close()
	}
	if unsettled {
		h.Write([]byte("unsettled"))
	}
	return h.Sum64()
}

// linkedStat stats the folder the link at rel leads to.
func (s *Store) linkedStat(rel string) (durable.Stat, error) {
	d, err := s.root.Linked(rel)
	if d == nil {
		return durable.Stat{}, errors.Join(err, fs.ErrNotExist)
	}
	defer d.Close()
	return d.Stat()
}
