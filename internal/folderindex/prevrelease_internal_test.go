package folderindex

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestIndexFilesOfThePreviousReleaseRead: index files written by the
// release that computed its CRC-32 by hand (testdata/prevrelease) pass
// their checksums and decode to what was written, and the same contents
// encode to the same bytes: no index is rebuilt for the change.
func TestIndexFilesOfThePreviousReleaseRead(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "prevrelease", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	stamp := Stamp{Dev: 2049, Ino: 1234567, Mtime: 1763632800123456789, Ctime: 1763632800223456789}
	want := &Folder{Stamp: stamp, Count: 4,
		Load:  []string{"2026-11-20T10-00-00.000000001Z-mayor.json", "bad.json"},
		Odd:   []Odd{{Name: "notes.txt"}, {Name: "sub", Typ: os.ModeDir}},
		Known: []Entry{{Name: "2026-11-19T10-00-00Z-bob.json", Ino: 99, Ctime: 1763546400000000000}, {Name: "fresh.json", Ino: 100, Ctime: -1}},
	}
	data := read("index-folder")
	h, ok := parseFolderHeader(data)
	if !ok {
		t.Fatal("the folder index's header does not read")
	}
	if got := h.decode(data, true); !reflect.DeepEqual(got, want) {
		t.Errorf("the folder index reads as %+v, want %+v", got, want)
	}
	if again := want.Encode(); !bytes.Equal(again, data) {
		t.Errorf("the folder index encodes as\n%q\nthe previous release wrote\n%q", again, data)
	}
	threads := []ThreadEntry{{Entry: Entry{Name: "x.json", Ino: 1, Ctime: 2}, Hash: ThreadHash("thr-1")}, {Entry: Entry{Name: "y.json", Ino: 3, Ctime: 4}, Hash: ThreadHash("thr-2")}}
	if again := EncodeThreads(stamp, false, threads); !bytes.Equal(again, read("index-threads")) {
		t.Errorf("the thread index encodes as\n%q\nthe previous release wrote\n%q", again, read("index-threads"))
	}
	tt, ok := parseThreadHeader(read("index-threads"))
	if !ok || tt.n != len(threads) {
		t.Errorf("the thread index's header reads as %+v, %v", tt, ok)
	}
	adds := []Add{{Before: stamp, After: Stamp{Dev: 2049, Ino: 1234567, Mtime: 1763632801, Ctime: 1763632802}, Name: "2026-11-20T10-00-01Z-mayor.json"}, {Name: "z.json"}}
	if got := decodeAdds(read("index-adds")); !reflect.DeepEqual(got, adds) {
		t.Errorf("the adds log reads as %+v, want %+v", got, adds)
	}
}
