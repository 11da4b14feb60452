package maildir

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// An EntryClass is what a directory entry in a folder of messages is
// (SPEC §1), as [Classify] decides it.
type EntryClass int

const (
	// Candidate is a regular file named *.json: a message, if it parses.
	Candidate EntryClass = iota
	// Hidden is a name starting with ".": a temp or hidden file, never
	// read as a message and never reported by readers.
	Hidden
	// OwnFolder is the archive/ or quarantine/ folder of a box (not of an
	// archive): passed over in silence.
	OwnFolder
	// NotMessage is anything else: never opened as a message; Classify
	// says why.
	NotMessage
)

// Classify is the one rule for what an entry of a folder of messages is,
// used by every reader and by fsck. name and typ are the entry's, and
// archived says whether the folder is an archive (which has no folders of
// its own). For NotMessage the error says why: [ErrNotMessage] for a name
// that does not end in .json, [durable.ErrNotRegular] for a directory,
// link, FIFO, socket or device.
func Classify(name string, typ fs.FileMode, archived bool) (EntryClass, error) {
	switch {
	case strings.HasPrefix(name, "."):
		return Hidden, nil
	case typ.IsDir() && !archived && (name == ArchiveDir || name == QuarantineDir):
		return OwnFolder, nil
	case !strings.HasSuffix(name, ".json"):
		return NotMessage, fmt.Errorf("%w (the name does not end in .json)", ErrNotMessage)
	case !typ.IsRegular():
		return NotMessage, durable.ErrNotRegular
	}
	if why := idProblem(strings.TrimSuffix(name, ".json")); why != "" {
		// A newline or another control character in the name: no command
		// could name it, so it is no message (fsck reports it).
		return NotMessage, fmt.Errorf("%w (the name is no message id: it %s)", ErrNotMessage, why)
	}
	return Candidate, nil
}

// EachEntry calls f for every entry of the folder of messages d (a box's
// folder, or an archive: its path says which), classified by [Classify], in
// directory order. It is the walker every reader of a folder uses, and
// fsck's.
func EachEntry(d *durable.Dir, f func(name string, typ fs.FileMode, class EntryClass, why error)) error {
	archived := strings.HasSuffix(d.Path(), "/"+ArchiveDir)
	return d.Each(func(e fs.DirEntry) {
		class, why := Classify(e.Name(), e.Type(), archived)
		f(e.Name(), e.Type(), class, why)
	})
}
