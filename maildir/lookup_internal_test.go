package maildir

import (
	"os"
	"path/filepath"
	"testing"
)

// oneMessage returns a store under dir whose box a holds one message, id.
func oneMessage(t *testing.T) (s *Store, dir string, box Address, id string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), ".chipset")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sent, err := s.Send(&Message{From: "m", To: "a", Subject: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir, Address{Kind: KindAgent, Name: "a"}, sent[0].ID
}

// A box's first archiving makes its archive folder and moves the message
// into it. A lookup that opened the box's folders just before (no archive
// yet) and looks for the message just after finds it in the new archive,
// not nowhere: a mark racing the first archive of a mailbox once failed
// with "message not found".
func TestLookupSeesAnArchiveMadeMeanwhile(t *testing.T) {
	s, dir, box, id := oneMessage(t)
	for _, exact := range []bool{true, false} {
		f, err := s.openFolders(box, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f.dirs[1] != nil {
			t.Fatal("the archive exists before the test archives")
		}
		// What Archive does meanwhile: make the archive, move the message.
		active := filepath.Join(dir, "state", "mail", "a")
		if err := os.Mkdir(filepath.Join(active, ArchiveDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(active, id+".json"), filepath.Join(active, ArchiveDir, id+".json")); err != nil {
			t.Fatal(err)
		}
		i, name, err := f.find(id, exact)
		f.Close()
		if err != nil || i != 1 || name != id+".json" {
			t.Fatalf("exact %v: folder %d, %q, %v; want the archive", exact, i, name, err)
		}
		// Back as it was, for the next round.
		if err := os.Rename(filepath.Join(active, ArchiveDir, id+".json"), filepath.Join(active, id+".json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(active, ArchiveDir)); err != nil {
			t.Fatal(err)
		}
	}
	// A lookup that did not ask for the archive does not look in it.
	f, err := s.openFolders(box, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.openArchiveSince() {
		t.Fatal("opened an archive nobody asked for")
	}
}

// A message restored (moved from the archive into the box) after find
// looked in the box, and before it looked in the archive, is found on the
// second look, in the box.
func TestLookupSeesARestoreMeanwhile(t *testing.T) {
	s, dir, box, id := oneMessage(t)
	active := filepath.Join(dir, "state", "mail", "a")
	archived := filepath.Join(active, ArchiveDir)
	if err := os.Mkdir(archived, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(active, id+".json"), filepath.Join(archived, id+".json")); err != nil {
		t.Fatal(err)
	}
	f, err := s.openFolders(box, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	restored := false
	f.looked = func(i int) {
		if i == 0 && !restored {
			restored = true // what Restore does meanwhile
			if err := os.Rename(filepath.Join(archived, id+".json"), filepath.Join(active, id+".json")); err != nil {
				t.Error(err)
			}
		}
	}
	if i, name, err := f.find(id, true); err != nil || i != 0 || name != id+".json" || !restored {
		t.Fatalf("folder %d, %q, %v (restored %v); want the box", i, name, err, restored)
	}
}
