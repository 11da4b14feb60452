package folderindex

import (
	"slices"
	"testing"
)

func TestChain(t *testing.T) {
	s := func(n int64) Stamp { return Stamp{Dev: 1, Ino: 2, Mtime: n, Ctime: n} }
	notes := []Add{{s(1), s(2), "a"}, {s(2), s(3), "b"}, {s(7), s(8), "x"}, {s(3), s(4), "c"}}
	for _, c := range []struct {
		what     string
		from, to Stamp
		adds     []Add
		want     []string
		ok       bool
	}{
		{"one note", s(1), s(2), notes, []string{"a"}, true},
		{"a chain, another's note between", s(1), s(4), notes, []string{"a", "b", "c"}, true},
		{"from the middle", s(2), s(3), notes, []string{"b"}, true},
		{"a gap: a change no note covers", s(1), s(5), notes, nil, false},
		{"the index is past the notes", s(4), s(4), notes, nil, false},
		{"no note from the index's stamp", s(5), s(6), notes, nil, false},
		{"no notes", s(1), s(2), nil, nil, false},
	} {
		got, ok := chain(c.from, c.to, c.adds)
		if ok != c.ok || ok && !slices.Equal(got, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.what, got, ok, c.want, c.ok)
		}
	}
}

// A note decodes as it was written; a torn or damaged line ends the log
// there.
func TestAddsLog(t *testing.T) {
	a := Add{Before: Stamp{1, 2, 3, 4}, After: Stamp{1, 2, 5, 6}, Name: "2026-01-01T00-00-00Z-mayor.json"}
	b := Add{Before: a.After, After: Stamp{1, 2, 7, 8}, Name: "b.json"}
	log := append(encodeAdd(a), encodeAdd(b)...)
	if got := decodeAdds(log); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("decoded %+v", got)
	}
	if got := decodeAdds(log[:len(log)-5]); len(got) != 1 {
		t.Errorf("a torn last line: %+v", got)
	}
	bad := append([]byte{}, log...)
	bad[20] ^= 1
	if got := decodeAdds(bad); len(got) != 0 {
		t.Errorf("a damaged first line: %+v", got)
	}
}
