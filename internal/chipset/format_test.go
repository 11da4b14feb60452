package chipset_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/internal/chipset"
)

// The first write records the format; a root in a newer format is refused
// for writing, naming both formats, and still opens for reading; a record
// that is not one is refused, naming the file.
func TestFormatRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	r, err := chipset.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Open(true); err != nil {
		t.Fatal(err)
	}
	r.Close()
	data, err := os.ReadFile(filepath.Join(dir, chipset.FormatFile))
	if err != nil || string(data) != "mailfs format 1\n" {
		t.Fatalf("the record after the first write: %q %v", data, err)
	}
	if n, err := chipset.ParseFormat(data); err != nil || n != chipset.Format {
		t.Fatalf("ParseFormat(%q) = %d, %v", data, n, err)
	}
	for _, c := range []struct {
		record string
		want   error
		says   string
	}{
		{"mailfs format 1\n", nil, ""},
		{"mailfs format 2\n", chipset.ErrNewerFormat, "is mailfs format 2, and this mailfs writes format 1"},
		{"mailfs format two\n", nil, "not a mailfs format record"},
		{"", nil, "not a mailfs format record"},
	} {
		os.WriteFile(filepath.Join(dir, chipset.FormatFile), []byte(c.record), 0o600)
		r, _ := chipset.New(dir)
		_, err := r.Open(true)
		switch {
		case c.says == "" && err != nil:
			t.Errorf("record %q: a write was refused: %v", c.record, err)
		case c.says != "" && (err == nil || !strings.Contains(err.Error(), c.says)):
			t.Errorf("record %q: %v, want an error saying %q", c.record, err, c.says)
		case c.want != nil && !errors.Is(err, c.want):
			t.Errorf("record %q: %v, want %v", c.record, err, c.want)
		}
		r.Close()
		r, _ = chipset.New(dir)
		if _, err := r.Open(false); err != nil {
			t.Errorf("record %q: reading refused: %v", c.record, err)
		}
		r.Close()
	}
}
