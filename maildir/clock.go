package maildir

import (
	"errors"
	"io/fs"

	"github.com/mailfs/mailfs/internal/durable"
)

// fineClock reports whether the file system of device dev gives a
// directory a later ctime at every change (see [folderindex.Clock]).
// With the indexes off it answers coarse, the safe answer, without the
// probe: the probe writes in the index folder and keeps its verdict
// there, and with the indexes off a reader writes nothing at all.
func (s *Store) fineClock(dev uint64) bool {
	return !s.coarse && !s.NoIndex && s.clock.Fine(s.indexDir, dev)
}

// indexDir opens the index folder, IndexDir: for reading (nil, nil when
// there is none) or, with create, for writing, made if missing. The index
// is a cache a reader keeps too, so making it never makes the root, its
// .gitignore or its format record (only a verb's write does): in a root
// that does not exist it is (nil, nil), and a reader leaves no trace
// outside runtime/.
func (s *Store) indexDir(create bool) (*durable.Dir, error) {
	if !create {
		return s.root.Dir(IndexDir)
	}
	r, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.MkdirAll(IndexDir)
}
