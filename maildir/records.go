package maildir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// Records: the small JSON files mailfs keeps beside the mail, one per
// thing (claim requests, audit entries), each named by a stamp and never
// rewritten. These are the one way they are written and read.

// createRecord writes v as a new record in folder (made if missing),
// named base.json — base-2.json and so on if that name is taken — and
// returns its id (the name without .json). Durable, never replacing a file.
func (s *Store) createRecord(folder, base string, v any) (string, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	d, err := s.mkdir(folder)
	if err != nil {
		return "", err
	}
	defer d.Close()
	for n := 1; ; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		err := d.Create(id+".json", data)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return id, err
	}
}

// recordNames returns the names of folder's record files (regular
// *.json files, not dot-files), sorted; none when it does not exist.
func (s *Store) recordNames(folder string) ([]string, error) {
	return s.listNames(folder, func(e fs.DirEntry) (string, bool) {
		return e.Name(), strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") && e.Type().IsRegular()
	})
}

// readRecords reads the records named names of folder, in that order, each
// into a value new makes, until each wants no more: ok says whether a
// value is one (else the file is skipped and reported to Warn as not a
// what), and more whether to read on. A record gone meanwhile is skipped.
func readRecords[T any](s *Store, folder string, names []string, what string, ok func(id string, v *T) (valid, more bool)) error {
	d, err := s.root.Dir(folder)
	if d == nil {
		return err
	}
	defer d.Close()
	for _, name := range names {
		more, err := readRecord(s, d, folder, name, what, ok)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func readRecord[T any](s *Store, d *durable.Dir, folder, name, what string, ok func(id string, v *T) (valid, more bool)) (bool, error) {
	data, _, err := d.ReadFile(name, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	v := new(T)
	if json.Unmarshal(data, v) != nil {
		s.warn(folder+"/"+name, fmt.Errorf("%w: not %s", ErrInvalidMessage, what))
		return true, nil
	}
	valid, more := ok(strings.TrimSuffix(name, ".json"), v)
	if !valid {
		s.warn(folder+"/"+name, fmt.Errorf("%w: not %s", ErrInvalidMessage, what))
	}
	return more, nil
}
