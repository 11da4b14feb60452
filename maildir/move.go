package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

var (
	// ErrClash is returned by [Store.Archive] and [Store.Restore] for a
	// message whose id is already taken where it would go. Neither file is
	// moved or replaced.
	ErrClash = errors.New("maildir: the destination already holds a message with this id")

	// ErrNotMessage is the reason given for a directory entry that cannot be
	// a message: a name not ending in .json, a directory, a symlink, ….
	ErrNotMessage = errors.New("maildir: not a message")
)

// An Entry is a message file found by listing a folder, before it is opened.
type Entry struct {
	Box      Address // the folder it is in
	ID       string
	Archived bool
	Stamp    time.Time // from the file name; zero when the name carries none
}

// Entries lists the message files of box b, or in its archive, without
// opening any of them: it reads the directory only. Entries that cannot be
// messages are returned in skipped (not reported to Warn); dot-files and
// the archive and quarantine folders are left out in silence.
func (s *Store) Entries(b Address, archived bool) (entries []Entry, skipped []*SkipError, err error) {
	if err := s.check(b); err != nil {
		return nil, nil, err
	}
	d, err := s.openFolder(b, archived)
	if d == nil {
		return nil, nil, err
	}
	defer d.Close()
	err = eachEntry(d, func(name string, why error) {
		if why != nil {
			skipped = append(skipped, &SkipError{Path: d.Join(name), Err: why})
			return
		}
		t, _ := ParseStamp(name)
		entries = append(entries, Entry{Box: b, ID: strings.TrimSuffix(name, ".json"), Archived: archived, Stamp: t})
	})
	return entries, skipped, err
}

// Archive moves messages from the folder of b into its archive folder,
// under the same names, and returns one error per id (nil when the message
// was moved or was already archived). Each move is a rename that never
// replaces a file: a clash gives [ErrClash] and leaves both files where
// they are. Both folders are fsynced once, after all the moves, before
// Archive returns. The error returned alone is for the mailbox as a whole
// (for example an "archive" that is not a directory), and then nothing was
// moved. ids are resolved as [Store.Get] does.
func (s *Store) Archive(b Address, ids []string) ([]error, error) {
	return s.move(b, ids, true)
}

// Restore moves archived messages back into the folder of b, as
// [Store.Archive] moves them out; a message that is already there is not
// an error.
func (s *Store) Restore(b Address, ids []string) ([]error, error) {
	return s.move(b, ids, false)
}

func (s *Store) move(b Address, ids []string, toArchive bool) ([]error, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	if err := s.MayChange(b); err != nil {
		return nil, err
	}
	if b.Kind == KindQueue && !toArchive {
		unlock, err := s.lockQueues(true) // an add to a queue: see folderindex.ClaimWindow
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	f, err := s.openFolders(b, true, nil)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	errs := make([]error, len(ids))
	names := make([]string, 0, len(ids))
	index := make([]int, 0, len(ids))
	for i, id := range ids {
		// Exact ids, as a sweep gives, cost one lstat in the open folder.
		dir, name, err := f.find(id, false)
		from := 0 // the folder this verb moves the message out of
		if !toArchive {
			from = 1
		}
		settled := false
		if err == nil {
			settled, err = f.settleTwoNames(name, from)
		}
		switch {
		case err != nil:
			errs[i] = err
		case settled, (dir == 1) == toArchive:
			// already where it should be
		default:
			names = append(names, name)
			index = append(index, i)
		}
	}
	if len(names) == 0 {
		return errs, nil
	}
	moveErrs, err := s.moveNames(b, names, toArchive)
	if err != nil {
		return nil, err
	}
	for j, e := range moveErrs {
		errs[index[j]] = e
	}
	return errs, nil
}

// settleTwoNames ends, in the direction a verb asks, a move that a crash
// cut between its link and its unlink (the rename fallback of file systems
// without renameat2's flags), which left one message file under its name
// in both the box's folder and its archive: the name in folder from goes,
// the other stays, so that the verb's outcome is the one that lasts — fsck,
// which cannot know which move was meant, would otherwise finish the old
// move later and undo an acknowledged restore. It reports whether it
// removed a name. The name is removed only while it is at that moment a
// second name of the file the other holds ([durable.Dir.RemoveSecond]),
// under both folders' locks, which the fallback's moves hold.
func (f *folders) settleTwoNames(name string, from int) (bool, error) {
	src, dst := f.dirs[from], f.dirs[1-from]
	if src == nil || dst == nil {
		return false, nil
	}
	a, aerr := src.Lstat(name)
	b, berr := dst.Lstat(name)
	if aerr != nil || berr != nil || !durable.Same(a, b) || a.Nlink < 2 {
		return false, nil
	}
	first, second := f.dirs[0], f.dirs[1] // the locks in fsck's order: by path
	for _, d := range []*durable.Dir{first, second} {
		unlock, err := d.Lock()
		if err != nil {
			return false, err
		}
		defer unlock()
	}
	err := src.RemoveSecond(name, dst, name, a)
	if errors.Is(err, durable.ErrNotSecond) {
		return false, nil // changed meanwhile: the verb goes on as usual
	}
	if err != nil {
		return false, err
	}
	return true, syncBoth(src, dst)
}

// moveNames moves the exact file names between a box's folder and its
// archive, then fsyncs both folders once. A name that is gone from the
// source was moved or deleted by someone else: if it is now at the
// destination that is success, otherwise ErrNotFound.
func (s *Store) moveNames(b Address, names []string, toArchive bool) ([]error, error) {
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	src, err := r.Open(b.Dir(!toArchive))
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := r.MkdirAll(b.Dir(toArchive))
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	errs := make([]error, len(names))
	moved := false
	for i, name := range names {
		err := src.Move(name, dst, name)
		switch {
		case err == nil:
			moved = true
		case errors.Is(err, fs.ErrExist):
			errs[i] = &fs.PathError{Op: "move", Path: src.Join(name), Err: ErrClash}
		case errors.Is(err, fs.ErrNotExist):
			if _, lerr := dst.Lstat(name); lerr != nil {
				errs[i] = notFound(b, strings.TrimSuffix(name, ".json"))
			}
		default:
			errs[i] = err
		}
	}
	if moved {
		if err := syncBoth(src, dst); err != nil {
			return nil, err
		}
	}
	return errs, nil
}

// syncBoth makes renames between two folders durable: the destination
// first, so a crash between the two leaves the name in both folders at
// worst, never in neither.
func syncBoth(src, dst *durable.Dir) error {
	if err := dst.Sync(); err != nil {
		return err
	}
	return src.Sync()
}

// eachEntry calls f for every directory entry of d that is not a dot-file
// or a known folder, with why set when it cannot be a message.
func eachEntry(d *durable.Dir, f func(name string, why error)) error {
	return EachEntry(d, func(name string, _ fs.FileMode, class EntryClass, why error) {
		if class == Candidate || class == NotMessage {
			f(name, why)
		}
	})
}

// Arrived is when m's file took the name it has in its folder: the file's
// inode change time, which this machine's kernel sets at the rename that
// delivered it, and which no sender can set. Unlike m.Timestamp, which is
// the sender's clock, a skewed host cannot move it. Any later change to
// the inode (a second name, a chmod, a checkout rewriting the file) moves
// it on, so a message can seem to have arrived later than it did, never
// earlier. A file no longer there gives [ErrNotFound].
func (s *Store) Arrived(m *Message) (time.Time, error) {
	d, err := s.openFolder(m.Box, m.Archived)
	if err != nil {
		return time.Time{}, err
	}
	if d == nil {
		return time.Time{}, fmt.Errorf("%w: %s", ErrNotFound, m.ID)
	}
	defer d.Close()
	st, err := d.Lstat(m.ID + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, fmt.Errorf("%w: %s", ErrNotFound, m.ID)
	}
	if err != nil {
		return time.Time{}, err
	}
	return st.Ctime, nil
}

// An Oversize file is a message file over [MaxSize]: no reader reads one,
// so a tool that shows a folder names it instead.
type Oversize struct {
	Name string // the file's name
	Size int64
}

// Oversize returns the message files of b's folder (its archive when
// archived) too large to be messages. It stats every file of the folder;
// a listing reads names only.
func (s *Store) Oversize(b Address, archived bool) ([]Oversize, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	d, err := s.openFolder(b, archived)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	if err := eachEntry(d, func(name string, why error) {
		if why == nil {
			names = append(names, name)
		}
	}); err != nil {
		return nil, err
	}
	var out []Oversize
	for _, n := range names {
		if st, err := d.Lstat(n); err == nil && st.Size > MaxSize {
			out = append(out, Oversize{Name: n, Size: st.Size})
		}
	}
	return out, nil
}
