package folderindex

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// The adds log. A folder's stamp moves at every change, and a reader that
// finds it moved lists the folder again: at 100,000 messages the listing
// alone costs more than all of a read at 10,000. But the commonest change
// is one new message a sender wrote, and the sender can say so: it notes
// the folder's stamp before and after its write, and the name it added,
// in the folder's adds log beside the index (AddsName) — only when a
// witness (dnotify on the folder, armed before the sender's temp was made
// and read after its rename: durable.CreateWitnessed) saw nothing happen to
// the folder but the sender's own create. A reader whose index
// stands at a stamp from which an unbroken chain of such notes leads to
// the folder's stamp now knows the folder is the indexed one plus those
// names, without listing it.
//
// Why it cannot show a stale folder: each note proves the folder went
// from its first stamp to its second by that one add and nothing else
// (the witness saw every change to the folder's entries in between); the
// chain proves there was no change between one note's second stamp and
// the next one's first (the stamp would differ); and the chain ends at
// the stamp the reader has just read, which, settled (on a fine clock
// at once, else past the racy window), moves at any later change. A note
// that is missing, torn, out of order, or from a sender that saw another
// change breaks the chain, and the reader lists as before. The added files
// go to the names to read: what the sender wrote is read, never assumed.
//
// The chain is followed however long ago the index was listed: what it
// proves does not age, since each link is checked against the stamps the
// folder had (a quiet spell between two sends changes no stamp, or the
// chain breaks). So a reader after a quiet spell pays for the new file,
// not for a listing.
//
// What it gives up: the index never sees a file rewritten in place under
// its own name (its folder's stamp does not move, and a witness does not
// watch what an entry holds), and a listing at the folder's next change
// is what used to show it. A reader that follows notes does not list:
// with only sends coming, such a rewrite is seen when the chain ends —
// after maxAdds notes, when the next reader lists the folder and starts
// the log again — and with any other change (a mark, a delete, a script's
// drop), at once, as before.

// AddsName is the adds log of folder rel, in the index folder.
func AddsName(rel string) string { return FileName(rel) + ".adds" }

// maxAdds bounds the notes a reader follows: past it, it lists the
// folder, which rebuilds the index and starts the log again.
const maxAdds = 512

// An Add is a sender's note: the folder went from stamp Before to stamp
// After by the one file Name moved in, and nothing else.
type Add struct {
	Before, After Stamp
	Name          string
}

// NoteAdd appends a to folder rel's adds log. The log is a cache: a
// failure is not reported (the next reader lists the folder).
func NoteAdd(r *Rules, rel string, a Add) {
	d, err := r.Open(true)
	if err != nil || d == nil {
		return
	}
	defer d.Close()
	_ = d.AppendEphemeral(AddsName(rel), encodeAdd(a))
}

const addMagic = "mailfs-add/2"

// encodeAdd is one line: the magic, the two stamps, the name, and an
// Adler-32 of what precedes it.
func encodeAdd(a Add) []byte {
	body := fmt.Sprintf("%s %x %x %x %x %x %x %x %x %s", addMagic,
		a.Before.Dev, a.Before.Ino, uint64(a.Before.Mtime), uint64(a.Before.Ctime),
		a.After.Dev, a.After.Ino, uint64(a.After.Mtime), uint64(a.After.Ctime), a.Name)
	return fmt.Appendf(nil, "%s %08x\n", body, adler32.Checksum([]byte(body)))
}

// decodeAdds reads the notes of a log, stopping at the first line that
// does not check out (a torn append, damage).
func decodeAdds(data []byte) []Add {
	var out []Add
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte{'\n'})
		i := bytes.LastIndexByte(line, ' ')
		if i < 0 {
			break
		}
		sum, err := strconv.ParseUint(string(line[i+1:]), 16, 32)
		if err != nil || adler32.Checksum(line[:i]) != uint32(sum) {
			break
		}
		f := strings.SplitN(string(line[:i]), " ", 10)
		if len(f) != 10 || f[0] != addMagic || f[9] == "" || strings.ContainsAny(f[9], "/\x00") {
			break
		}
		var n [8]uint64
		for j := range n {
			if n[j], err = strconv.ParseUint(f[j+1], 16, 64); err != nil {
				return out
			}
		}
		out = append(out, Add{
			Before: Stamp{Dev: n[0], Ino: n[1], Mtime: int64(n[2]), Ctime: int64(n[3])},
			After:  Stamp{Dev: n[4], Ino: n[5], Mtime: int64(n[6]), Ctime: int64(n[7])},
			Name:   f[9],
		})
	}
	return out
}

// chain returns the names the notes add on the way from stamp from to
// stamp to, and whether an unbroken chain of them leads there: each
// note's Before is the last one's After. It looks at nothing but what it
// is given (TestChain).
func chain(from, to Stamp, adds []Add) ([]string, bool) {
	var names []string
	at := from
	for _, a := range adds {
		if at == to {
			break
		}
		if a.Before != at {
			continue // a note of an older state of the folder, or of another chain
		}
		names = append(names, a.Name)
		at = a.After
	}
	return names, at == to && len(names) > 0
}

// followAdds returns folder rel's index old as it stands at stamp st (the
// folder's stamp, read at now), by the notes of its adds log: the names
// they add joined to Load and Count. It reports false, and the caller
// lists the folder, unless r follows notes, the index was not racy, st is
// settled, and the notes lead from old's stamp to st. How long ago the
// index was written does not matter (see the adds log).
func followAdds(idx *durable.Dir, r *Rules, rel string, old *Folder, st durable.Stat, now time.Time) (*Folder, bool) {
	// A racy index was listed at a stamp too fresh to trust, or holds files
	// too fresh to vouch for (read again anyway: they are in Load). On a
	// fine clock only the latter can be, and its listing stands.
	if old == nil || old.Racy && !r.Fine(st.Dev) || !r.Notes || r.DirRacy(st, now) {
		return nil, false
	}
	data, err := idx.Head(AddsName(rel), maxAdds*200)
	if err != nil {
		return nil, false
	}
	names, ok := chain(old.Stamp, StampOf(st), decodeAdds(data))
	if !ok {
		return nil, false
	}
	f := *old
	f.Load = slices.Clone(old.Load)
	for _, n := range names {
		i, found := slices.BinarySearch(f.Load, n)
		if found {
			return nil, false // a name the index had: not an add to take on trust
		}
		f.Load = slices.Insert(f.Load, i, n)
	}
	f.Count += len(names)
	f.Stamp, f.Racy = StampOf(st), false // usable at st: its fresh files are in Load
	return &f, true
}
