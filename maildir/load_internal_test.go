package maildir

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

// loadNames checks its context before each file it reads, not only
// between batches: a reader with a deadline (the prompt hook) makes at
// most the one file operation under way after its deadline.
func TestLoadNamesStopsBeforeTheNextFile(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	box := Address{Kind: KindAgent, Name: "toast"}
	var names []string
	for i := range 5 {
		sent, err := s.Send(&Message{From: "mayor", To: "toast", Subject: fmt.Sprint("job ", i)})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sent[0].ID+".json")
	}
	d, err := s.openFolder(box, false)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := 0
	pre := func([]byte) bool {
		if read++; read == 2 {
			cancel() // the deadline passes while the second file is read
		}
		return true
	}
	var got []string
	s.loadNames(ctx, d, box, false, names, pre, func(name string, m *Message, _ durable.Stat, err error) {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		got = append(got, name)
	})
	if read != 2 || len(got) != 2 || got[0] != names[0] || got[1] != names[1] {
		t.Fatalf("read %d files, answered %v; want the first two of %v", read, got, names)
	}
}
