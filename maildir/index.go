package maildir

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// IndexDir holds the folder index: one file per folder of messages
// recording what the folder held when it was last listed, so that a reader
// of unread mail reads only the files it must. (The thread index and the
// claim cursor live beside it: see threadNames and claimWindow.) It is a
// cache: per host (under runtime/, never committed), rebuilt from the
// folder whenever it cannot be trusted, and safe to delete at any time.
//
// The rule that keeps it from ever showing a stale folder: an index is
// used as it stands only while the folder's own stat — device, inode,
// mtime and ctime — is the one read before the listing it was built from,
// and that stat was not racy (see [RacyWindow] and fineClock). Every change
// made through the directory moves its ctime, and the kernel sets ctime
// (no caller can put it back): a message sent, marked read or unread (a
// rewrite is a new file renamed over the old), a script's mv, cp to a new
// name or rename-over, rm, git checkout, reset or pull (git unlinks and
// recreates what it writes), a restore from the archive, a whole folder
// replaced. When the stamp differs the folder is listed again — names and
// inode numbers, one getdents pass, no file opened — and a file is taken as
// still read only if its name, inode and ctime are those the index
// recorded (see relist: an inode number alone is reused); everything else
// is read.
//
// What the folder's stamp does not show is a file truncated and rewritten
// in place under its own name (a shell's "> file" onto an existing
// message, an editor that saves in place): it is seen when the folder next
// changes, when the listing checks each file's ctime. SPEC §4 has writers
// write a new file and rename it, and a reader can see such a write half
// done anyway; to make mailfs look at once, delete runtime/index or run
// with $MAILFS_INDEX=off.
const IndexDir = "runtime/index"

// IndexEnv is the environment variable with which a user turns the
// indexes off in mailfs's programs (the command, the Gas City provider, the
// MCP server, the web view): see [IndexOff].
const IndexEnv = "MAILFS_INDEX"

// IndexOff reports whether v, a value of [IndexEnv], turns the indexes
// off: "off", "0", "false" or "no", in any case. A program sets
// [Store.NoIndex] from it.
func IndexOff(v string) bool {
	off, _ := IndexSetting(v)
	return off
}

// IndexSetting reads v, a value of [IndexEnv]: off as [IndexOff] says, and
// whether v was a value it knows ("", "on", "1", "true", "yes" keep the
// indexes on), so that a program can warn about a mistyped one.
func IndexSetting(v string) (off, known bool) {
	switch strings.ToLower(v) {
	case "off", "0", "false", "no":
		return true, true
	case "", "on", "1", "true", "yes":
		return false, true
	}
	return false, false
}

// RacyWindow is how old a folder's ctime must be for its index to be
// trusted on the stamp alone. A file system's clock moves in ticks (a few
// milliseconds on Linux before 6.13's fine-grained timestamps), so a change
// made in the same tick as the listing could leave the stamp as it was;
// a folder changed less than RacyWindow before it was listed is listed
// again at the next call, as git treats a "racily clean" index entry.
const RacyWindow = time.Second

const indexMagic = "mailfs-index/1"

// A dirStamp is what identifies one state of a directory.
type dirStamp struct {
	dev, ino     uint64
	mtime, ctime int64
}

func stampOf(st durable.Stat) dirStamp {
	return dirStamp{dev: st.Dev, ino: st.Ino, mtime: st.ModTime.UnixNano(), ctime: st.Ctime.UnixNano()}
}

// A folderIndex is what a folder of messages held when it was listed.
type folderIndex struct {
	stamp dirStamp
	racy  bool // look again at the next call: the stamp, or a file, was too fresh to vouch for

	count int          // message-file names (every candidate, read or not)
	load  []string     // candidates a reader must read: unread, or not parsed as a message
	odd   []oddEntry   // entries that are not message files, reported at each call
	known []knownEntry // messages parsed as read, with the inode and ctime of the file that said so
}

type oddEntry struct {
	name string
	typ  fs.FileMode
}

type knownEntry struct {
	name  string
	ino   uint64
	ctime int64
}

// indexName is the file of folder rel in IndexDir: the path with its
// slashes as "~", which no folder name may hold.
func indexName(rel string) string { return strings.ReplaceAll(rel, "/", "~") }

// indexOn reports whether s keeps folder indexes.
func (s *Store) indexOn() bool { return !s.NoIndex }

// usable reports whether ix describes the folder whose stat is st as it
// stands, without listing it.
func (ix *folderIndex) usable(st durable.Stat) bool {
	return ix != nil && !ix.racy && ix.stamp == stampOf(st)
}

// readIndex returns the index of folder rel, or nil if there is none or
// it does not decode. With full false, the known section is not decoded
// (nor read, if the file is large): its names are needed only when the
// folder changed.
func (s *Store) readIndex(rel string, full bool) *folderIndex {
	d, err := s.root.Dir(IndexDir)
	if d == nil || err != nil {
		return nil
	}
	defer d.Close()
	name := indexName(rel)
	data, err := d.Head(name, 16<<10)
	if err != nil {
		return nil
	}
	h, ok := parseIndexHeader(data)
	if !ok {
		return nil
	}
	if len(data) < h.end(full) {
		// Read it whole; it may have been replaced since, so its header
		// is read again.
		if data, _, err = d.ReadFile(name, 1<<30); err != nil {
			return nil
		}
		if h, ok = parseIndexHeader(data); !ok || len(data) < h.end(full) {
			return nil
		}
	}
	return h.decode(data, full)
}

// An indexHeader is the first line of an index file: the folder's stamp,
// the counts, and the length and checksum of the two sections that follow
// it, the head (what a reader needs at every call: the names to read and
// the entries to report) and the tail (the names known to be read).
type indexHeader struct {
	ix               folderIndex
	start            int // where the head section begins
	headLen, tailLen int
	headCRC, tailCRC uint32
}

func (h *indexHeader) end(full bool) int {
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

func parseIndexHeader(data []byte) (*indexHeader, bool) {
	n, start, ok := parseHeaderLine(data, indexMagic, 10)
	if !ok {
		return nil, false
	}
	h := &indexHeader{
		ix: folderIndex{
			stamp: dirStamp{dev: n[0], ino: n[1], mtime: int64(n[2]), ctime: int64(n[3])},
			racy:  n[4] != 0,
			count: int(n[5]),
		},
		start:   start,
		headLen: int(n[6]),
		tailLen: int(n[7]),
		headCRC: uint32(n[8]),
		tailCRC: uint32(n[9]),
	}
	const most = 1 << 30
	if n[5] > most || n[6] > most || n[7] > most || n[8] > 1<<32-1 || n[9] > 1<<32-1 {
		return nil, false
	}
	return h, true
}

// decode decodes the sections of data that h describes: the head, and the
// tail too when full.
func (h *indexHeader) decode(data []byte, full bool) *folderIndex {
	ix := h.ix
	head := data[h.start : h.start+h.headLen]
	if crc32.ChecksumIEEE(head) != h.headCRC {
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
			ix.load = append(ix.load, string(rest))
		case "x":
			t, name, ok := bytes.Cut(rest, []byte{' '})
			typ, err := strconv.ParseUint(string(t), 16, 32)
			if !ok || err != nil {
				return nil
			}
			ix.odd = append(ix.odd, oddEntry{name: string(name), typ: fs.FileMode(typ)})
		default:
			return nil
		}
	}
	if !full {
		return &ix
	}
	tail := data[h.start+h.headLen : h.end(true)]
	if crc32.ChecksumIEEE(tail) != h.tailCRC {
		return nil
	}
	for rec := range bytes.SplitSeq(tail, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		i, rest, ok1 := bytes.Cut(rec, []byte{' '})
		c, name, ok2 := bytes.Cut(rest, []byte{' '})
		ino, err1 := strconv.ParseUint(string(i), 16, 64)
		ctime, err2 := strconv.ParseUint(string(c), 16, 64)
		if !ok1 || !ok2 || err1 != nil || err2 != nil {
			return nil
		}
		ix.known = append(ix.known, knownEntry{name: string(name), ino: ino, ctime: int64(ctime)})
	}
	return &ix
}

func (ix *folderIndex) encode() []byte {
	var head, tail bytes.Buffer
	for _, n := range ix.load {
		head.WriteString("c ")
		head.WriteString(n)
		head.WriteByte(0)
	}
	for _, o := range ix.odd {
		fmt.Fprintf(&head, "x %x %s\x00", uint32(o.typ), o.name)
	}
	for _, k := range ix.known {
		tail.WriteString(strconv.FormatUint(k.ino, 16))
		tail.WriteByte(' ')
		tail.WriteString(strconv.FormatUint(uint64(k.ctime), 16))
		tail.WriteByte(' ')
		tail.WriteString(k.name)
		tail.WriteByte(0)
	}
	racy := 0
	if ix.racy {
		racy = 1
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %x %x %x %x %x %x %x %x %x %x\n", indexMagic,
		ix.stamp.dev, ix.stamp.ino, uint64(ix.stamp.mtime), uint64(ix.stamp.ctime), racy, ix.count,
		head.Len(), tail.Len(), crc32.ChecksumIEEE(head.Bytes()), crc32.ChecksumIEEE(tail.Bytes()))
	out.Write(head.Bytes())
	out.Write(tail.Bytes())
	return out.Bytes()
}

// writeIndex replaces the index of folder rel, atomically and without
// fsync: a cache, checked on every read, that a crash may only lose. A
// failure is not reported; the next reader lists the folder.
func (s *Store) writeIndex(rel string, ix *folderIndex) {
	d, err := s.mkdir(IndexDir)
	if err != nil {
		return
	}
	defer d.Close()
	_ = d.ReplaceEphemeral(indexName(rel), ix.encode())
}

// dirRacy reports whether a folder's stat taken at now could fail to show
// a change made after it: never on a file system with a fine clock (see
// fineClock), else when the folder changed less than the racy window
// before.
func (s *Store) dirRacy(st durable.Stat, now time.Time) bool {
	return s.racyAt(st, now) && !s.fineClock(st.Dev)
}

// racyAt reports whether a stat taken at now is too recent to be trusted
// on its own at the next call.
func (s *Store) racyAt(st durable.Stat, now time.Time) bool {
	w := s.racy
	if w == 0 {
		w = RacyWindow
	}
	return now.Sub(st.Ctime) < w
}

// An unreadScan says what [Store.readUnread] does with what it finds.
type unreadScan struct {
	keep  func(*Message) bool // called with each unread message; nil keeps them all
	read  func(name string)   // if not nil, called with each read message's file name
	quiet bool                // report nothing to Warn
}

func (u *unreadScan) kept(m *Message) bool { return u.keep == nil || u.keep(m) }

// readUnread parses every message file of b's folder (not its archive)
// except those the folder's index knows to be read, and returns the unread
// messages u keeps (in file-name order, called from the calling goroutine)
// and the number of read messages, most of them known from the index
// without being read. Files that vanish meanwhile are skipped silently;
// files that are not messages are reported to Warn, at every call, as a
// full read would, unless u.quiet.
func (s *Store) readUnread(b Address, u unreadScan) ([]*Message, int, error) {
	warn := s.warn
	if u.quiet {
		warn = func(string, error) {}
	}
	d, err := s.openFolder(b, false)
	if d == nil {
		return nil, 0, err
	}
	defer d.Close()
	var names []string
	known := 0
	if !s.indexOn() {
		if err := s.eachName(d, !u.quiet, func(name string) { names = append(names, name) }); err != nil {
			return nil, 0, err
		}
		slices.Sort(names)
	} else {
		st, err := d.Stat()
		if err != nil {
			return nil, 0, err
		}
		full := u.read != nil
		ix := s.readIndex(d.Path(), full)
		if !ix.usable(st) {
			if !full {
				ix = nil // only its head was read: reindex reads it whole
			}
			return s.reindex(d, b, st, ix, u, warn)
		}
		for _, o := range ix.odd {
			if _, why := Classify(o.name, o.typ, false); why != nil {
				warn(d.Join(o.name), why)
			}
		}
		if u.read != nil {
			for _, k := range ix.known {
				u.read(k.name)
			}
		}
		names, known = ix.load, ix.count-len(ix.load)
	}
	var kept []*Message
	s.loadNames(d, b, false, names, nil, func(name string, m *Message, _ durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			warn(d.Join(name), Reason(err))
		case m.Read:
			known++
			if u.read != nil {
				u.read(name)
			}
		case u.kept(m):
			kept = append(kept, m)
		}
	})
	return kept, known, nil
}

// reindex is readUnread for a folder whose index is missing or cannot be
// trusted as it stands: it lists the folder, checks each file the old
// index knew to be read (see relist), reads the rest, and writes the new
// index. old is the old index read whole, or nil to read it here.
func (s *Store) reindex(d *durable.Dir, b Address, st durable.Stat, old *folderIndex, u unreadScan, warn func(string, error)) ([]*Message, int, error) {
	rel := d.Path()
	if old == nil {
		old = s.readIndex(rel, true)
	}
	was := map[string]knownEntry{}
	if old != nil {
		for _, k := range old.known {
			was[k.name] = k
		}
	}
	now := time.Now()
	next := &folderIndex{stamp: stampOf(st), racy: s.dirRacy(st, now)}
	same, load, err := s.relist(d, false, was, func(name string, typ fs.FileMode, why error) {
		warn(d.Join(name), why)
		next.odd = append(next.odd, oddEntry{name: name, typ: typ})
	})
	if err != nil {
		return nil, 0, err
	}
	for _, k := range same {
		next.known = append(next.known, k)
		if u.read != nil {
			u.read(k.name)
		}
	}
	known := len(next.known)
	var kept []*Message
	s.loadNames(d, b, false, load, nil, func(name string, m *Message, fst durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return // gone since the listing: the folder's stamp moved too
		case err != nil:
			warn(d.Join(name), Reason(err))
			next.load = append(next.load, name)
		case m.Read:
			known++
			if u.read != nil {
				u.read(name)
			}
			if s.racyAt(fst, now) {
				// Changed too recently to vouch for: a file removed and
				// made again within the clock's tick could have the same
				// inode and ctime. Read again at the next call, which
				// lists the folder again to vouch for it then.
				next.load = append(next.load, name)
				next.racy = true
			} else {
				next.known = append(next.known, knownEntry{name: name, ino: fst.Ino, ctime: fst.Ctime.UnixNano()})
			}
		default:
			next.load = append(next.load, name)
			if u.kept(m) {
				kept = append(kept, m)
			}
		}
	})
	next.count = len(next.known) + len(next.load)
	s.writeIndex(rel, next)
	return kept, known, nil
}

// relist lists folder d (an archive when archived) for an index being
// rebuilt: the entries the old index vouched for (was, by name) whose file
// is still the one it recorded — the same inode and the same ctime, since
// an inode number alone can be reused by a file removed and created again
// under the same name, as git checkout does — and the names of the other
// message files, sorted, to be read. odd, if not nil, is called with each
// entry that is not a message file.
func (s *Store) relist(d *durable.Dir, archived bool, was map[string]knownEntry, odd func(name string, typ fs.FileMode, why error)) (same []knownEntry, load []string, err error) {
	var check []knownEntry
	err = d.Scan(func(raw []byte, ino uint64, typ fs.FileMode) {
		class, why := Classify(string(raw), typ, archived)
		switch class {
		case Candidate:
			if k, ok := was[string(raw)]; ok && k.ino == ino {
				check = append(check, k)
			} else {
				load = append(load, string(raw))
			}
		case NotMessage:
			if odd != nil {
				odd(string(raw), typ, why)
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	ok := make([]bool, len(check))
	parallel(len(check), func(i int) {
		fst, err := d.Lstat(check[i].name)
		ok[i] = err == nil && fst.Ino == check[i].ino && fst.Ctime.UnixNano() == check[i].ctime
	})
	for i, k := range check {
		if ok[i] {
			same = append(same, k)
		} else {
			load = append(load, k.name)
		}
	}
	slices.Sort(load)
	return same, load, nil
}

// countNames counts the message-file names in d (an archive folder), from
// its index when the folder has not changed since, and keeps the count in
// the index for the next call.
func (s *Store) countNames(d *durable.Dir) (int, error) {
	st, err := d.Stat()
	if err != nil {
		return 0, err
	}
	rel := d.Path()
	if s.indexOn() {
		if ix := s.readIndex(rel, false); ix.usable(st) {
			return ix.count, nil
		}
	}
	n := 0
	if err := s.eachName(d, false, func(string) { n++ }); err != nil {
		return 0, err
	}
	if s.indexOn() {
		s.writeIndex(rel, &folderIndex{stamp: stampOf(st), racy: s.dirRacy(st, time.Now()), count: n})
	}
	return n, nil
}
