package maildir

import (
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// clockFile, in IndexDir, records what the probe of the file system's
// clock found: the kernel release, the device, and "fine" or "coarse".
const clockFile = "clock"

// fineClock reports whether the file system holding the folder index —
// and so, when dev is the same device, the folders it indexes — gives a
// directory a later ctime at every change once its ctime has been read.
// Linux 6.13 and later do so on ext4, xfs and btrfs ("multigrain"
// timestamps); before, and on other file systems, ctime moves in clock
// ticks, and two changes within one tick leave it the same. On a file
// system with a fine clock an unchanged stamp proves an unchanged folder
// the moment it is taken, with no racy window.
//
// It is measured, not assumed ([durable.Dir.ProbeClock] on IndexDir), once
// per kernel release and device; the verdict is kept in
// runtime/index/clock. Anything uncertain means coarse.
func (s *Store) fineClock(dev uint64) bool {
	s.clockMu.Lock()
	defer s.clockMu.Unlock()
	if v, ok := s.clocks[dev]; ok {
		return v
	}
	fine := s.probeClock(dev)
	if s.clocks == nil {
		s.clocks = map[uint64]bool{}
	}
	s.clocks[dev] = fine
	return fine
}

func (s *Store) probeClock(dev uint64) bool {
	d, err := s.mkdir(IndexDir)
	if err != nil {
		return false
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil || st.Dev != dev {
		return false
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	release := string(bytes.TrimRight(u.Release[:], "\x00"))
	key := fmt.Sprintf("%s %x", release, dev)
	if data, err := d.Head(clockFile, 512); err == nil {
		if k, verdict, ok := strings.Cut(strings.TrimSpace(string(data)), "\n"); ok && k == key {
			return verdict == "fine"
		}
	}
	fine := d.ProbeClock()
	verdict := "coarse"
	if fine {
		verdict = "fine"
	}
	_ = d.ReplaceEphemeral(clockFile, []byte(key+"\n"+verdict+"\n"))
	return fine
}
