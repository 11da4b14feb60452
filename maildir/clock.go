package maildir

import "github.com/mailfs/mailfs/internal/durable"

// fineClock reports whether the file system of device dev gives a
// directory a later ctime at every change (see [folderindex.Clock]).
func (s *Store) fineClock(dev uint64) bool { return !s.coarse && s.clock.Fine(s.indexDir, dev) }

// indexDir opens the index folder, IndexDir: for reading (nil, nil when
// there is none) or, with create, for writing.
func (s *Store) indexDir(create bool) (*durable.Dir, error) {
	if create {
		return s.mkdir(IndexDir)
	}
	return s.root.Dir(IndexDir)
}
