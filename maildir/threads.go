package maildir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// The thread index: for each folder of messages (a box, or its archive),
// the thread each message file belongs to, so that [Store.Thread] reads a
// thread's own files and not the whole tree. It lives beside the folder
// index (runtime/index/<folder>.threads) and is kept by the same rules
// (see IndexDir): trusted while the folder's stamp is the one recorded,
// else rebuilt from a listing that rereads only the files whose name,
// inode and ctime it cannot vouch for. A lookup reads the header and the
// sorted table of thread hashes (12 bytes a message), and the records of
// the matches; a hash that collides costs one file read, since every
// message found is checked against the thread it is asked for.
const threadMagic = "mailfs-threads/1"

func threadsName(rel string) string { return indexName(rel) + ".threads" }

// threadHash is the hash a thread key is filed under.
func threadHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// threadKey is the thread a message belongs to: its thread, else itself.
func threadKey(m *Message) string {
	if m.Thread != "" {
		return m.Thread
	}
	return m.ID
}

// A threadEntry is one message file of a thread index.
type threadEntry struct {
	knownEntry        // ctime -1: changed too recently to vouch for
	hash       uint64 // threadHash of its thread
}

// A threadTable is a decoded thread index header.
type threadTable struct {
	stamp   dirStamp
	racy    bool
	n       int
	start   int // where the hash table begins
	blobLen int
	crc     uint32 // of the hash and offset tables
}

func (t *threadTable) blobStart() int { return t.start + 12*t.n }

func parseThreadHeader(data []byte) (*threadTable, bool) {
	n, start, ok := parseHeaderLine(data, threadMagic, 8)
	if !ok {
		return nil, false
	}
	if n[5] > 1<<28 || n[6] > 1<<34 || n[7] > 1<<32-1 {
		return nil, false
	}
	return &threadTable{
		stamp: dirStamp{dev: n[0], ino: n[1], mtime: int64(n[2]), ctime: int64(n[3])},
		racy:  n[4] != 0, n: int(n[5]), start: start, blobLen: int(n[6]), crc: uint32(n[7]),
	}, true
}

func encodeThreads(stamp dirStamp, racy bool, entries []threadEntry) []byte {
	slices.SortFunc(entries, func(a, b threadEntry) int {
		if a.hash != b.hash {
			if a.hash < b.hash {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	tables := make([]byte, 12*len(entries))
	var blob bytes.Buffer
	for i, e := range entries {
		binary.LittleEndian.PutUint64(tables[8*i:], e.hash)
		binary.LittleEndian.PutUint32(tables[8*len(entries)+4*i:], uint32(blob.Len()))
		fmt.Fprintf(&blob, "%x %x %s\x00", e.ino, uint64(e.ctime), e.name)
	}
	r := 0
	if racy {
		r = 1
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %x %x %x %x %x %x %x %x\n", threadMagic, stamp.dev, stamp.ino, uint64(stamp.mtime), uint64(stamp.ctime),
		r, len(entries), blob.Len(), crc32.ChecksumIEEE(tables))
	out.Write(tables)
	out.Write(blob.Bytes())
	return out.Bytes()
}

// parseThreadRecord decodes one "ino ctime name" record.
func parseThreadRecord(rec []byte) (knownEntry, bool) {
	i, rest, ok1 := bytes.Cut(rec, []byte{' '})
	c, name, ok2 := bytes.Cut(rest, []byte{' '})
	ino, err1 := strconv.ParseUint(string(i), 16, 64)
	ctime, err2 := strconv.ParseUint(string(c), 16, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(name) == 0 {
		return knownEntry{}, false
	}
	return knownEntry{name: string(name), ino: ino, ctime: int64(ctime)}, true
}

// threadNames returns the names of the files in folder d (of box b; an
// archive when archived) that may belong to the thread key, from the
// folder's thread index, rebuilding it first if it cannot be trusted.
func (s *Store) threadNames(d *durable.Dir, b Address, archived bool, key string) ([]string, error) {
	st, err := d.Stat()
	if err != nil {
		return nil, err
	}
	rel := d.Path()
	hash := threadHash(key)
	if names, ok := s.lookupThread(rel, st, hash); ok {
		return names, nil
	}
	entries, err := s.rebuildThreads(d, b, archived, st)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.hash == hash {
			names = append(names, e.name)
		}
	}
	return names, nil
}

// lookupThread answers from the thread index of folder rel, if it is
// there and describes the folder whose stat is st.
func (s *Store) lookupThread(rel string, st durable.Stat, hash uint64) ([]string, bool) {
	d, err := s.root.Dir(IndexDir)
	if d == nil || err != nil {
		return nil, false
	}
	defer d.Close()
	name := threadsName(rel)
	head, err := d.Head(name, 512)
	if err != nil {
		return nil, false
	}
	t, ok := parseThreadHeader(head)
	if !ok || t.racy || t.stamp != stampOf(st) {
		return nil, false
	}
	tables, err := d.ReadAt(name, int64(t.start), 12*t.n)
	if err != nil || len(tables) != 12*t.n || crc32.ChecksumIEEE(tables) != t.crc {
		return nil, false
	}
	hashAt := func(i int) uint64 { return binary.LittleEndian.Uint64(tables[8*i:]) }
	lo := searchHash(t.n, hashAt, hash)
	var names []string
	for i := lo; i < t.n && hashAt(i) == hash; i++ {
		off := binary.LittleEndian.Uint32(tables[8*t.n+4*i:])
		if int(off) >= t.blobLen {
			return nil, false
		}
		rec, err := d.ReadAt(name, int64(t.blobStart())+int64(off), 300)
		if err != nil {
			return nil, false
		}
		end := bytes.IndexByte(rec, 0)
		if end < 0 {
			return nil, false
		}
		k, ok := parseThreadRecord(rec[:end])
		if !ok {
			return nil, false
		}
		names = append(names, k.name)
	}
	return names, true
}

// searchHash returns the first i in [0, n) with hashAt(i) >= hash.
func searchHash(n int, hashAt func(int) uint64, hash uint64) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if hashAt(mid) < hash {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// rebuildThreads lists folder d, reads what the old thread index cannot
// vouch for, writes the new index, and returns its entries. Files that
// are not messages are reported to Warn, as a reader of the folder does.
func (s *Store) rebuildThreads(d *durable.Dir, b Address, archived bool, st durable.Stat) ([]threadEntry, error) {
	rel := d.Path()
	was := map[string]knownEntry{}
	hashes := map[string]uint64{}
	if idx, err := s.root.Dir(IndexDir); idx != nil && err == nil {
		if data, _, err := idx.ReadFile(threadsName(rel), 1<<34); err == nil {
			if t, ok := parseThreadHeader(data); ok && len(data) == t.blobStart()+t.blobLen {
				tables := data[t.start:t.blobStart()]
				blob := data[t.blobStart():]
				if crc32.ChecksumIEEE(tables) == t.crc {
					for i := range t.n {
						off := int(binary.LittleEndian.Uint32(tables[8*t.n+4*i:]))
						end := bytes.IndexByte(blob[min(off, len(blob)):], 0)
						if end < 0 {
							break
						}
						if k, ok := parseThreadRecord(blob[off : off+end]); ok {
							was[k.name] = k
							hashes[k.name] = binary.LittleEndian.Uint64(tables[8*i:])
						}
					}
				}
			}
		}
		idx.Close()
	}
	now := time.Now()
	racy := s.dirRacy(st, now)
	same, load, err := s.relist(d, archived, was, func(name string, _ fs.FileMode, why error) { s.warn(d.Join(name), why) })
	if err != nil {
		return nil, err
	}
	entries := make([]threadEntry, 0, len(same)+len(load))
	for _, k := range same {
		entries = append(entries, threadEntry{knownEntry: k, hash: hashes[k.name]})
	}
	s.loadNames(d, b, archived, load, nil, func(name string, m *Message, fst durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		default:
			ctime := fst.Ctime.UnixNano()
			if s.racyAt(fst, now) {
				ctime = -1 // read again at the next rebuild, which the next lookup makes
				racy = true
			}
			entries = append(entries, threadEntry{knownEntry: knownEntry{name: name, ino: fst.Ino, ctime: ctime}, hash: threadHash(threadKey(m))})
		}
	})
	if idx, err := s.mkdir(IndexDir); err == nil {
		_ = idx.ReplaceEphemeral(threadsName(rel), encodeThreads(stampOf(st), racy, entries))
		idx.Close()
	}
	return entries, nil
}
