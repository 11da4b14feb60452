package folderindex

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestIndexFilesOfThePreviousReleaseAreRebuilt: index files written by
// the releases whose checksums were CRC-32 (testdata/prevrelease, version
// 1 of each magic) are not taken as indexes — none decodes, and the adds
// log gives no notes — so the folder is listed and its index written
// again, as for a damaged one (maildir's TestIndexDamagedIsRebuilt runs
// it); and the same contents, encoded now, read back as written.
func TestIndexFilesOfThePreviousReleaseAreRebuilt(t *testing.T) {
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join("testdata", "prevrelease", name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	stamp := Stamp{Dev: 2049, Ino: 1234567, Mtime: 1763632800123456789, Ctime: 1763632800223456789}
	was := &Folder{Stamp: stamp, Count: 4,
		Load:  []string{"2026-11-20T10-00-00.000000001Z-mayor.json", "bad.json"},
		Odd:   []Odd{{Name: "notes.txt"}, {Name: "sub", Typ: os.ModeDir}},
		Known: []Entry{{Name: "2026-11-19T10-00-00Z-bob.json", Ino: 99, Ctime: 1763546400000000000}, {Name: "fresh.json", Ino: 100, Ctime: -1}},
	}
	if h, ok := parseFolderHeader(read("index-folder")); ok {
		t.Errorf("the previous release's folder index reads, as %+v", h)
	}
	if tt, ok := parseThreadHeader(read("index-threads")); ok {
		t.Errorf("the previous release's thread index reads, as %+v", tt)
	}
	if got := decodeAdds(read("index-adds")); len(got) != 0 {
		t.Errorf("the previous release's adds log gives notes: %+v", got)
	}

	data := was.Encode()
	h, ok := parseFolderHeader(data)
	if !ok {
		t.Fatal("the folder index's header does not read")
	}
	if got := h.decode(data, true); !reflect.DeepEqual(got, was) {
		t.Errorf("the folder index reads as %+v, want %+v", got, was)
	}
	threads := []ThreadEntry{{Entry: Entry{Name: "x.json", Ino: 1, Ctime: 2}, Hash: ThreadHash("thr-1")}, {Entry: Entry{Name: "y.json", Ino: 3, Ctime: 4}, Hash: ThreadHash("thr-2")}}
	tt, ok := parseThreadHeader(EncodeThreads(stamp, false, threads))
	if !ok || tt.n != len(threads) {
		t.Errorf("the thread index's header reads as %+v, %v", tt, ok)
	}
	adds := []Add{{Before: stamp, After: Stamp{Dev: 2049, Ino: 1234567, Mtime: 1763632801, Ctime: 1763632802}, Name: "2026-11-20T10-00-01Z-mayor.json"}, {Name: "z.json"}}
	if got := decodeAdds(bytes.Join([][]byte{encodeAdd(adds[0]), encodeAdd(adds[1])}, nil)); !reflect.DeepEqual(got, adds) {
		t.Errorf("the adds log reads as %+v, want %+v", got, adds)
	}
}
