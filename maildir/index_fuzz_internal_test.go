package maildir

import (
	"reflect"
	"testing"
)

// FuzzIndexFiles feeds arbitrary bytes to every decoder of the files under
// IndexDir — the folder index, the thread index's header and records, the
// claim cursor — which must refuse what they cannot read, never panic; and
// a folder index that decodes must encode back to one that decodes the
// same (what a reader trusts is what a writer meant).
func FuzzIndexFiles(f *testing.F) {
	good := (&folderIndex{
		stamp: dirStamp{dev: 1, ino: 2, mtime: 3, ctime: 4}, count: 3,
		load:  []string{"2026-01-01T00-00-00Z-a.json"},
		odd:   []oddEntry{{name: "notes.txt"}},
		known: []knownEntry{{name: "b c.json", ino: 9, ctime: -1}, {name: "d.json", ino: 10, ctime: 11}},
	}).encode()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("mailfs-index/1 1 1 1 1 0 ffffffffffff ffffffffff 0 0 0\n"))
	f.Add(encodeThreads(dirStamp{dev: 1}, false, []threadEntry{{knownEntry: knownEntry{name: "x.json", ino: 1, ctime: 2}, hash: 7}}))
	f.Add((&claimCursor{order: "state~queue~w.order-1", pos: 3, off: 40}).encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, ok := parseIndexHeader(data); ok {
			for _, full := range []bool{false, true} {
				if len(data) < h.end(full) {
					continue
				}
				ix := h.decode(data, full)
				if ix == nil || !full {
					continue
				}
				again := ix.encode()
				h2, ok := parseIndexHeader(again)
				if !ok || len(again) != h2.end(true) {
					t.Fatalf("%q decodes, but its encoding %q does not", data, again)
				}
				if ix2 := h2.decode(again, true); ix2 == nil || !reflect.DeepEqual(ix, ix2) {
					t.Fatalf("round trip of %q: %+v became %+v", data, ix, ix2)
				}
			}
		}
		if tt, ok := parseThreadHeader(data); ok && tt.n < 0 {
			t.Fatalf("a negative table in %q", data)
		}
		parseThreadRecord(data)
		if c := decodeCursor(data); c != nil && (c.pos < 0 || c.off < 0) {
			t.Fatalf("a cursor before its file's start in %q", data)
		}
	})
}
