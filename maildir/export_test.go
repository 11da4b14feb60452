package maildir

import (
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// Test seams, compiled only into this package's tests.

// OpenWith opens the store at dir with durable's test seams: a fault at
// every step of every write (durable.WithFault), or the rename fallbacks of
// file systems without renameat2's flags (durable.WithFallback).
func OpenWith(dir string, opts ...durable.Option) (*Store, error) { return open(dir, opts...) }

// SetRacyWindow sets how old a folder's ctime must be for its index to be
// trusted on the stamp alone (see [RacyWindow]); negative means any age, so
// that a test can change a folder right after its index was written and
// check that the change is seen through the stamp, not the racy rule.
func SetRacyWindow(s *Store, d time.Duration) { s.racy = d }

// SetNotes says whether an index is carried forward by senders' notes
// (on by default).
func SetNotes(s *Store, on bool) { s.noNotes = !on }

// SetNoteFrom sets the size of directory from which sends note their adds
// (noteFromSize); 0 or less: every folder's.
func SetNoteFrom(s *Store, size int64) {
	if size <= 0 {
		size = -1
	}
	s.noteFrom = size
}

// SetCoarseClock makes s take every file system's clock as coarse, as
// before Linux 6.13: a folder's stamp is then trusted only past the racy
// window.
func SetCoarseClock(s *Store) { s.coarse = true }

// FineClock is fineClock for the device that holds the store's index.
func FineClock(s *Store) (bool, error) {
	d, err := s.mkdir(IndexDir)
	if err != nil {
		return false, err
	}
	defer d.Close()
	st, err := d.Stat()
	if err != nil {
		return false, err
	}
	return s.fineClock(st.Dev), nil
}
