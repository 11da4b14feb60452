package folderindex

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
	good := (&Folder{
		Stamp: Stamp{Dev: 1, Ino: 2, Mtime: 3, Ctime: 4}, Count: 3,
		Load:  []string{"2026-01-01T00-00-00Z-a.json"},
		Odd:   []Odd{{Name: "notes.txt"}},
		Known: []Entry{{Name: "b c.json", Ino: 9, Ctime: -1}, {Name: "d.json", Ino: 10, Ctime: 11}},
	}).Encode()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("mailfs-index/2 1 1 1 1 0 ffffffffffff ffffffffff 0 0 0\n"))
	f.Add(EncodeThreads(Stamp{Dev: 1}, false, []ThreadEntry{{Entry: Entry{Name: "x.json", Ino: 1, Ctime: 2}, Hash: 7}}))
	f.Add((&Cursor{Order: "state~queue~w.order-1", Pos: 3, Off: 40}).Encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, ok := parseFolderHeader(data); ok {
			for _, full := range []bool{false, true} {
				if len(data) < h.end(full) {
					continue
				}
				ix := h.decode(data, full)
				if ix == nil || !full {
					continue
				}
				again := ix.Encode()
				h2, ok := parseFolderHeader(again)
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
		parseEntry(data, false)
		if c := DecodeCursor(data); c != nil && (c.Pos < 0 || c.Off < 0) {
			t.Fatalf("a cursor before its file's start in %q", data)
		}
	})
}
