package folderindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// The thread index: for each folder of messages, the thread each message
// file belongs to, so that a thread's own files are read and not the
// whole tree. It lives beside the folder index (<folder>.threads) and is
// kept by the same rules. A lookup reads the header and the sorted table
// of thread hashes (12 bytes a message), and the records of the matches;
// a hash that collides costs one file read, since the caller checks every
// message found against the thread it asked for.
const threadMagic = "mailfs-threads/2"

// ThreadsName is the thread index file of folder rel.
func ThreadsName(rel string) string { return FileName(rel) + ".threads" }

// ThreadHash is the hash a thread key is filed under.
func ThreadHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// A ThreadEntry is one message file of a thread index.
type ThreadEntry struct {
	Entry        // Ctime -1: changed too recently to vouch for
	Hash  uint64 // ThreadHash of its thread
}

// A threadTable is a decoded thread index header.
type threadTable struct {
	stamp   Stamp
	racy    bool
	n       int
	start   int // where the hash table begins
	blobLen int
	sum     uint32 // Adler-32 of the hash and offset tables
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
		stamp: Stamp{Dev: n[0], Ino: n[1], Mtime: int64(n[2]), Ctime: int64(n[3])},
		racy:  n[4] != 0, n: int(n[5]), start: start, blobLen: int(n[6]), sum: uint32(n[7]),
	}, true
}

// EncodeThreads is the thread index file of a folder whose stamp is stamp
// (racy: to be rebuilt at the next lookup), holding entries.
func EncodeThreads(stamp Stamp, racy bool, entries []ThreadEntry) []byte {
	slices.SortFunc(entries, func(a, b ThreadEntry) int {
		if a.Hash != b.Hash {
			if a.Hash < b.Hash {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	tables := make([]byte, 12*len(entries))
	var blob bytes.Buffer
	for i, e := range entries {
		binary.LittleEndian.PutUint64(tables[8*i:], e.Hash)
		binary.LittleEndian.PutUint32(tables[8*len(entries)+4*i:], uint32(blob.Len()))
		fmt.Fprintf(&blob, "%x %x %s\x00", e.Ino, uint64(e.Ctime), e.Name)
	}
	r := 0
	if racy {
		r = 1
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%s %x %x %x %x %x %x %x %x\n", threadMagic, stamp.Dev, stamp.Ino, uint64(stamp.Mtime), uint64(stamp.Ctime),
		r, len(entries), blob.Len(), adler32.Checksum(tables))
	out.Write(tables)
	out.Write(blob.Bytes())
	return out.Bytes()
}

// LookupThread answers from the thread index of folder rel in the index
// folder d, if it is there, is not racy and describes the folder whose
// stat is st: the names of the files filed under hash.
func LookupThread(d *durable.Dir, rel string, st durable.Stat, hash uint64) ([]string, bool) {
	name := ThreadsName(rel)
	head, err := d.Head(name, 512)
	if err != nil {
		return nil, false
	}
	t, ok := parseThreadHeader(head)
	if !ok || t.racy || t.stamp != StampOf(st) {
		return nil, false
	}
	tables, err := d.ReadAt(name, int64(t.start), 12*t.n)
	if err != nil || len(tables) != 12*t.n || adler32.Checksum(tables) != t.sum {
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
		k, ok := parseEntry(rec[:end], false)
		if !ok {
			return nil, false
		}
		names = append(names, k.Name)
	}
	return names, true
}

// ReadThreads reads the whole thread index of folder rel from the index
// folder d, for a rebuild: its entries by name, with their hashes. A file
// that is missing or does not decode gives none.
func ReadThreads(d *durable.Dir, rel string) map[string]ThreadEntry {
	out := map[string]ThreadEntry{}
	data, _, err := d.ReadFile(ThreadsName(rel), 1<<34)
	if err != nil {
		return out
	}
	t, ok := parseThreadHeader(data)
	if !ok || len(data) != t.blobStart()+t.blobLen {
		return out
	}
	tables := data[t.start:t.blobStart()]
	blob := data[t.blobStart():]
	if adler32.Checksum(tables) != t.sum {
		return out
	}
	for i := range t.n {
		off := int(binary.LittleEndian.Uint32(tables[8*t.n+4*i:]))
		end := bytes.IndexByte(blob[min(off, len(blob)):], 0)
		if end < 0 {
			break
		}
		if k, ok := parseEntry(blob[off:off+end], false); ok {
			out[k.Name] = ThreadEntry{Entry: k, Hash: binary.LittleEndian.Uint64(tables[8*i:])}
		}
	}
	return out
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
