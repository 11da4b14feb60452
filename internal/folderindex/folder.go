// Package folderindex is mailfs's cache of what its folders of messages
// held: the files under runtime/index/ that let a reader skip the files it
// knows, and the rules that decide when they can be trusted. It knows
// folders, names, inode numbers and ctimes, never messages: the caller
// says what a file it read is (read or not; which thread), and the index
// answers which names must be read. Its failure mode is hiding mail, so
// every file is checked (magic, lengths, checksums) and anything that does
// not decode is nothing, and the folder is listed again.
//
// The rule that keeps an index from ever showing a stale folder: it is
// used as it stands only while the folder's own stat — device, inode,
// mtime and ctime — is the one recorded, and that stat was not racy (see
// [Racy]). When the stamp differs the folder is listed again ([Relist]):
// a file is taken as known only if its name, inode and ctime are those
// recorded, since an inode number alone is reused.
package folderindex

import (
	"bytes"
	"fmt"
	"hash/adler32"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/par"
)

// A Stamp is what identifies one state of a directory.
type Stamp struct {
	Dev, Ino     uint64
	Mtime, Ctime int64
}

// StampOf is the stamp of a directory whose stat is st.
func StampOf(st durable.Stat) Stamp {
	return Stamp{Dev: st.Dev, Ino: st.Ino, Mtime: st.ModTime.UnixNano(), Ctime: st.Ctime.UnixNano()}
}

// Racy reports whether a stat taken at now is too recent to be trusted on
// its own at the next call: its ctime is less than window old. A file
// system's clock moves in ticks, so a change made in the same tick as a
// listing could leave the stamp as it was.
func Racy(st durable.Stat, now time.Time, window time.Duration) bool {
	return now.Sub(st.Ctime) < window
}

// An Entry is a file the index vouches for: its name, inode number and
// ctime when it was read. A ctime of -1 vouches for nothing: the file
// was too fresh, and is read again at the next listing.
type Entry struct {
	Name  string
	Ino   uint64
	Ctime int64
}

// An Odd is a folder entry that is not a message file, reported at each
// call as a listing would.
type Odd struct {
	Name string
	Typ  fs.FileMode
}

// A Folder is what a folder of messages held when it was listed: for the
// readers of unread mail, the files that said they were read (Known) and
// the rest (Load).
type Folder struct {
	Stamp Stamp
	Racy  bool // look again at the next call: the stamp, or a file, was too fresh to vouch for

	Count int      // message-file names (every candidate, read or not)
	Load  []string // candidates a reader must read: unread, or not parsed as a message
	Odd   []Odd    // entries that are not message files
	Known []Entry  // messages parsed as read, with the inode and ctime of the file that said so
}

// FileName is the index file of folder rel: the path with its slashes as
// "~", which no folder name may hold.
func FileName(rel string) string { return strings.ReplaceAll(rel, "/", "~") }

// Usable reports whether f describes the folder whose stat is st as it
// stands, without listing it. A nil f is never usable.
func (f *Folder) Usable(st durable.Stat) bool {
	return f != nil && !f.Racy && f.Stamp == StampOf(st)
}

// Version 2 of the index files (folder, thread, adds) checksums with
// Adler-32, which needs no table, where version 1's CRC-32 built tables
// in every process; a version-1 file is rebuilt as a damaged one is.
const folderMagic = "mailfs-index/2"

// ReadFolder reads the index of folder rel from the index folder d, or nil
// if there is none or it does not decode. With full false, the known
// section is not decoded (nor read, if the file is large): its names are
// needed only when the folder changed.
func ReadFolder(d *durable.Dir, rel string, full bool) *Folder {
	name := FileName(rel)
	data, err := d.Head(name, 16<<10)
	if err != nil {
		return nil
	}
	h, ok := parseFolderHeader(data)
	if !ok {
		return nil
	}
	if len(data) < h.end(full) {
		// Read it whole; it may have been replaced since, so its header
		// is read again.
		if data, _, err = d.ReadFile(name, 1<<30); err != nil {
			return nil
		}
		if h, ok = parseFolderHeader(data); !ok || len(data) < h.end(full) {
			return nil
		}
	}
	return h.decode(data, full)
}

// A folderHeader is the first line of an index file: the folder's stamp,
// the counts, and the length and checksum of the two sections that follow
// it, the head (what a reader needs at every call: the names to read and
// the entries to report) and the tail (the names known to be read).
type folderHeader struct {
	f                Folder
	start            int // where the head section begins
	headLen, tailLen int
	headSum, tailSum uint32
}

func (h *folderHeader) end(full bool) int {
	if full {
		return h.start + h.headLen + h.tailLen
	}
	return h.start + h.headLen
}

// parseHeaderLine parses the first line of an index file: its magic, then
// count hexadecimal numbers. It returns the numbers and where the line
// ends.
func parseHeaderLine(data []byte, magic string, count int) (n []uint64, end int, ok bool) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 {
		return nil, 0, false
	}
	f := strings.Fields(string(data[:nl]))
	if len(f) != count+1 || f[0] != magic {
		return nil, 0, false
	}
	n = make([]uint64, count)
	for i := range n {
		v, err := strconv.ParseUint(f[i+1], 16, 64)
		if err != nil {
			return nil, 0, false
		}
		n[i] = v
	}
	return n, nl + 1, true
}

func parseFolderHeader(data []byte) (*folderHeader, bool) {
	n, start, ok := parseHeaderLine(data, folderMagic, 10)
	if !ok {
		return nil, false
	}
	h := &folderHeader{
		f: Folder{
			Stamp: Stamp{Dev: n[0], Ino: n[1], Mtime: int64(n[2]), Ctime: int64(n[3])},
			Racy:  n[4] != 0,
			Count: int(n[5]),
		},
		start:   start,
		headLen: int(n[6]),
		tailLen: int(n[7]),
		headSum: uint32(n[8]),
		tailSum: uint32(n[9]),
	}
	const most = 1 << 30
	if n[5] > most || n[6] > most || n[7] > most || n[8] > 1<<32-1 || n[9] > 1<<32-1 {
		return nil, false
	}
	return h, true
}

// decode decodes the sections of data that h describes: the head, and the
// tail too when full.
func (h *folderHeader) decode(data []byte, full bool) *Folder {
	f := h.f
	head := data[h.start : h.start+h.headLen]
	if adler32.Checksum(head) != h.headSum {
		return nil
	}
	for rec := range bytes.SplitSeq(head, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		kind, rest, ok := bytes.Cut(rec, []byte{' '})
		if !ok {
			return nil
		}
		switch string(kind) {
		case "c":
			f.Load = append(f.Load, string(rest))
		case "x":
			t, name, ok := bytes.Cut(rest, []byte{' '})
			typ, err := strconv.ParseUint(string(t), 16, 32)
			if !ok || err != nil {
				return nil
			}
			f.Odd = append(f.Odd, Odd{Name: string(name), Typ: fs.FileMode(typ)})
		default:
			return nil
		}
	}
	if !full {
		return &f
	}
	tail := data[h.start+h.headLen : h.end(true)]
	if adler32.Checksum(tail) != h.tailSum {
		return nil
	}
	for rec := range bytes.SplitSeq(tail, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		e, ok := parseEntry(rec, false)
		if !ok {
			return nil
		}
		f.Known = append(f.Known, e)
	}
	return &f
}

// parseEntry decodes one "ino ctime name" record; the name may be empty
// only when emptyOK.
func parseEntry(rec []byte, emptyOK bool) (Entry, bool) {
	i, rest, ok1 := bytes.Cut(rec, []byte{' '})
	c, name, ok2 := bytes.Cut(rest, []byte{' '})
	ino, err1 := strconv.ParseUint(string(i), 16, 64)
	ctime, err2 := strconv.ParseUint(string(c), 16, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(name) == 0 && !emptyOK {
		return Entry{}, false
	}
	return Entry{Name: string(name), Ino: ino, Ctime: int64(ctime)}, true
}

// Encode is the index file of f.
func (f *Folder) Encode() []byte {
	var head, tail bytes.Buffer
	for _, n := range f.Load {
		head.WriteString("c ")
		head.WriteString(n)
		head.WriteByte(0)
	}
	for _, o := range f.Odd {
		fmt.Fprintf(&head, "x %x %s\x00", uint32(o.Typ), o.Name)
	}
	for _, k := range f.Known {
		tail.WriteString(strconv.FormatUint(k.Ino, 16))
		tail.WriteByte(' ')
		tail.WriteString(strconv.FormatUint(uint64(k.Ctime), 16))
		tail.WriteByte(' ')
		tail.WriteString(k.Name)
		tail.WriteByte(0)
	}
	racy := 0
	if f.Racy {
		racy = 1
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %x %x %x %x %x %x %x %x %x %x\n", folderMagic,
		f.Stamp.Dev, f.Stamp.Ino, uint64(f.Stamp.Mtime), uint64(f.Stamp.Ctime), racy, f.Count,
		head.Len(), tail.Len(), adler32.Checksum(head.Bytes()), adler32.Checksum(tail.Bytes()))
	out.Write(head.Bytes())
	out.Write(tail.Bytes())
	return out.Bytes()
}

// Relist lists folder d for an index being rebuilt: the entries the old
// index vouched for (was, by name) whose file is still the one it
// recorded — the same inode and the same ctime, since an inode number
// alone can be reused by a file removed and created again under the same
// name, as git checkout does — and the names of the other message files,
// sorted, to be read. classify says whether an entry is a candidate
// message file, and if it is not, why (nil for an entry passed over in
// silence); odd, if not nil, is called with each entry that is not a
// candidate and has a why.
func Relist(d *durable.Dir, was map[string]Entry, classify func(name string, typ fs.FileMode) (candidate bool, why error),
	odd func(name string, typ fs.FileMode, why error)) (same []Entry, load []string, err error) {
	var check []Entry
	err = d.Scan(func(raw []byte, ino uint64, typ fs.FileMode) {
		candidate, why := classify(string(raw), typ)
		switch {
		case candidate:
			if k, ok := was[string(raw)]; ok && k.Ino == ino {
				check = append(check, k)
			} else {
				load = append(load, string(raw))
			}
		case why != nil && odd != nil:
			odd(string(raw), typ, why)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	ok := make([]bool, len(check))
	par.Do(len(check), func(i int) {
		fst, err := d.Lstat(check[i].Name)
		ok[i] = err == nil && fst.Ino == check[i].Ino && fst.Ctime.UnixNano() == check[i].Ctime
	})
	for i, k := range check {
		if ok[i] {
			same = append(same, k)
		} else {
			load = append(load, k.Name)
		}
	}
	slices.Sort(load)
	return same, load, nil
}
