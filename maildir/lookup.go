package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// folders is a box's two folders, the active one and its archive, opened
// once for any number of lookups. Either may be nil: it does not exist.
type folders struct {
	box     Address
	dirs    [2]*durable.Dir // [0] the folder, [1] its archive
	archive bool            // the archive was asked for

	looked func(i int) // tests: called after find looks in folder i
}

// openFolders opens box b's folder and, with archive, its archive. parent,
// if not nil, is the folder that holds b's folder (state/mail for an
// agent), already open: a search over many boxes opens each with one call.
func (s *Store) openFolders(b Address, archive bool, parent *durable.Dir) (*folders, error) {
	f := &folders{box: b, archive: archive}
	var err error
	if parent != nil {
		f.dirs[0], err = parent.Sub(path.Base(b.Dir(false)))
		if errors.Is(err, fs.ErrNotExist) {
			return f, nil
		}
	} else {
		f.dirs[0], err = s.openFolder(b, false)
	}
	if err != nil || f.dirs[0] == nil || !archive {
		return f, err
	}
	f.dirs[1], err = f.dirs[0].Sub(ArchiveDir)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if err != nil {
		f.Close()
	}
	return f, err
}

// Close closes the folders still open.
func (f *folders) Close() {
	for i, d := range f.dirs {
		if d != nil {
			d.Close()
			f.dirs[i] = nil
		}
	}
}

// take hands folder i to the caller, who closes it; f no longer does.
func (f *folders) take(i int) *durable.Dir {
	d := f.dirs[i]
	f.dirs[i] = nil
	return d
}

// find resolves id in the folders: the exact id (or file name) in the
// folder, then in the archive, then, unless exact, a unique prefix of the
// id in either. It returns which folder (0 or 1) and the file name. This is
// the one place an id is resolved: Get, Load, ReadFile, the marks, moves,
// Delete, Release and Find all come here.
//
// A name that is there exactly but is not a regular file (a FIFO, a link)
// is reported as such, not as "not found". A prefix that matches several
// messages gives an [*AmbiguousError]; none, [ErrNotFound].
func (f *folders) find(id string, exact bool) (int, string, error) {
	id, err := ParseID(id)
	if err != nil {
		return 0, "", err
	}
	name := id + ".json"
	// Two looks, because a message can move between the folders while it
	// is looked for: archived (or restored) after find looked in the one
	// it moves to, before it looks in the one it leaves. Between the two,
	// an archive made meanwhile is opened.
	for look := range 2 {
		if look == 1 {
			f.openArchiveSince()
		}
		for i, d := range f.dirs {
			if d == nil {
				continue
			}
			st, err := d.Lstat(name)
			if f.looked != nil {
				f.looked(i)
			}
			switch {
			case err != nil:
			case st.Mode.IsRegular():
				return i, name, nil
			case !st.Mode.IsDir():
				return 0, "", &fs.PathError{Op: "read", Path: d.Join(name), Err: fmt.Errorf("%w: it is %s", ErrNotMessage, TypeName(st.Mode))}
			}
		}
	}
	if exact {
		return 0, "", notFound(f.box, id)
	}
	type match struct {
		name string
		dir  int
	}
	var matches []match
	seen := map[string]bool{}
	for i, d := range f.dirs {
		if d == nil {
			continue
		}
		err := eachEntry(d, func(n string, why error) {
			if why == nil && strings.HasPrefix(n, id) && !seen[n] {
				seen[n] = true // an id both active and archived counts once
				matches = append(matches, match{n, i})
			}
		})
		if err != nil {
			return 0, "", err
		}
	}
	switch len(matches) {
	case 0:
		return 0, "", notFound(f.box, id)
	case 1:
		return matches[0].dir, matches[0].name, nil
	}
	c := make([]string, len(matches))
	for i, m := range matches {
		c[i] = strings.TrimSuffix(m.name, ".json")
	}
	slices.Sort(c)
	return 0, "", &AmbiguousError{ID: id, Candidates: c}
}

// openArchiveSince opens the archive when it was asked for, did not exist
// when the folders were opened, and does now, and reports whether it did.
// A box's first archiving makes the folder and moves the message into it:
// a lookup that opened the folders just before, and looked in the box just
// after, would otherwise find the message nowhere.
func (f *folders) openArchiveSince() bool {
	if !f.archive || f.dirs[0] == nil || f.dirs[1] != nil {
		return false
	}
	d, err := f.dirs[0].Sub(ArchiveDir)
	if err != nil {
		return false
	}
	f.dirs[1] = d
	return true
}

// locate finds message id in box b or its archive, as folders.find does,
// and returns its folder, open (the caller closes it), its file name and
// whether it is archived.
func (s *Store) locate(b Address, id string) (*durable.Dir, string, bool, error) {
	f, err := s.openFolders(b, true, nil)
	if err != nil {
		return nil, "", false, err
	}
	defer f.Close()
	i, name, err := f.find(id, false)
	if err != nil {
		return nil, "", false, err
	}
	return f.take(i), name, i == 1, nil
}

func notFound(b Address, id string) error {
	return &fs.PathError{Op: "find", Path: b.Dir(false) + "/" + id, Err: ErrNotFound}
}

// TypeName names a file type that is not a regular file, for messages:
// "a symbolic link", "a FIFO", "a directory", ….
func TypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}
