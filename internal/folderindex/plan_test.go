package folderindex_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// A stand-in reader over files that say "R" (read) or "U" (unread): what
// a plan lets it skip must never change its answer. For random sequences
// of writes — a new file renamed in or written in place, a file replaced
// by a rename (git), removed, rewritten in place then its folder changed
// (the documented limit), and, with every file fresh, rewritten in place
// alone — the planned answer (the unread names and the read count) equals
// a full scan's after every step, with the racy rules on: a short window
// (both the trusted and the listing paths taken) and one longer than the
// run (every file fresh). The thread index is checked the same way, with a
// file's content as its thread; and every entry that is no message file
// is reported at every read, from a listing or from the index.
func TestPlanEqualsAFullScan(t *testing.T) {
	// A fine clock is claimed only where this file system has one.
	probe, err := durable.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := probe.Open(".")
	clocks := []bool{false}
	if d.ProbeClock() {
		clocks = append(clocks, true)
	}
	d.Close()
	probe.Close()
	for seed := range uint64(4) {
		for _, window := range []time.Duration{2 * time.Millisecond, time.Hour} {
			for _, fine := range clocks {
				t.Run(fmt.Sprintf("seed %d, window %v, fine clock %v", seed, window, fine), func(t *testing.T) {
					planProperty(t, seed, window, fine)
				})
			}
		}
	}
}

func planProperty(t *testing.T, seed uint64, window time.Duration, fine bool) {
	rng := rand.New(rand.NewPCG(seed, 42))
	base := t.TempDir()
	folder, index := filepath.Join(base, "box"), filepath.Join(base, "index")
	os.MkdirAll(folder, 0o700)
	os.MkdirAll(index, 0o700)
	root, err := durable.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rules := &folderindex.Rules{
		Open: func(create bool) (*durable.Dir, error) {
			if create {
				return root.MkdirAll("index")
			}
			return root.Open("index")
		},
		Window: window,
		Fine:   func(uint64) bool { return fine },
		Classify: func(name string, typ fs.FileMode) (bool, error) {
			switch {
			case strings.HasPrefix(name, "."):
				return false, nil
			case !strings.HasSuffix(name, ".json") || !typ.IsRegular():
				return false, errors.New("not a message")
			}
			return true, nil
		},
	}
	n := 0
	names := func() []string {
		ents, _ := os.ReadDir(folder)
		var out []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	state := func() string { return []string{"R", "U"}[rng.IntN(2)] }
	flip := func(p string) {
		b, _ := os.ReadFile(p)
		os.WriteFile(p, []byte(map[string]string{"R": "U", "U": "R"}[string(b)]), 0o600)
	}
	ops := []func(){
		func() { // renamed in
			n++
			tmp := filepath.Join(base, "tmp")
			os.WriteFile(tmp, []byte(state()), 0o600)
			os.Rename(tmp, filepath.Join(folder, fmt.Sprintf("m%03d.json", n)))
		},
		func() { // written in place
			n++
			os.WriteFile(filepath.Join(folder, fmt.Sprintf("m%03d.json", n)), []byte(state()), 0o600)
		},
		func() { // replaced by a rename, as git does
			if ns := names(); len(ns) > 0 {
				tmp := filepath.Join(folder, ".tmp")
				os.WriteFile(tmp, []byte(state()), 0o600)
				os.Rename(tmp, filepath.Join(folder, ns[rng.IntN(len(ns))]))
			}
		},
		func() { // removed
			if ns := names(); len(ns) > 0 {
				os.Remove(filepath.Join(folder, ns[rng.IntN(len(ns))]))
			}
		},
		func() { // rewritten in place, then the folder changes
			if ns := names(); len(ns) > 0 {
				flip(filepath.Join(folder, ns[rng.IntN(len(ns))]))
				n++
				os.WriteFile(filepath.Join(folder, fmt.Sprintf("m%03d.json", n)), []byte(state()), 0o600)
			}
		},
		func() { // rewritten in place alone: seen only while every file is fresh
			if ns := names(); window > time.Minute && len(ns) > 0 {
				flip(filepath.Join(folder, ns[rng.IntN(len(ns))]))
			}
		},
		func() { // a stray entry
			os.WriteFile(filepath.Join(folder, fmt.Sprintf("notes%d.txt", rng.IntN(3))), nil, 0o600)
		},
	}
	for step := range 150 {
		ops[rng.IntN(len(ops))]()
		d, err := root.Open("box")
		if err != nil {
			t.Fatal(err)
		}
		st, _ := d.Stat()
		var odd []string
		plan, err := folderindex.PlanUnread(d, st, rules, rng.IntN(2) == 0, func(name string, _ fs.FileMode, why error) {
			odd = append(odd, name)
		})
		if err != nil {
			t.Fatal(err)
		}
		var unread []string
		read := plan.Count - len(plan.Read)
		for _, name := range plan.Read {
			data, fst, err := d.ReadFile(name, 16)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			isRead := err == nil && string(data) == "R"
			if isRead {
				read++
			} else if err == nil {
				unread = append(unread, name)
			}
			plan.Record(name, fst, isRead)
		}
		plan.Save()
		d.Close()
		// The truth: every file read.
		var wantUnread []string
		wantRead := 0
		for _, name := range names() {
			b, _ := os.ReadFile(filepath.Join(folder, name))
			if string(b) == "R" {
				wantRead++
			} else {
				wantUnread = append(wantUnread, name)
			}
		}
		slices.Sort(unread)
		if !slices.Equal(unread, wantUnread) || read != wantRead {
			t.Fatalf("step %d: the plan says unread %v and %d read; the files say %v and %d", step, unread, read, wantUnread, wantRead)
		}
		// Every stray entry is reported, whether listed or from the index.
		var strays []string
		ents, _ := os.ReadDir(folder)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "notes") {
				strays = append(strays, e.Name())
			}
		}
		slices.Sort(odd)
		if !slices.Equal(odd, strays) {
			t.Fatalf("step %d: the plan reported %v as not messages; the folder holds %v", step, odd, strays)
		}
		// The thread index, with a file's content as its thread: the
		// lookup's names equal the files that hold the key.
		key := state()
		if d, err = root.Open("box"); err != nil {
			t.Fatal(err)
		}
		st, _ = d.Stat()
		tp, err := folderindex.PlanThread(d, st, rules, folderindex.ThreadHash(key), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range tp.Read {
			if data, fst, err := d.ReadFile(name, 16); err == nil {
				tp.Record(name, fst, string(data))
			}
		}
		tp.Save()
		d.Close()
		var inThread []string
		for _, name := range names() {
			if b, _ := os.ReadFile(filepath.Join(folder, name)); string(b) == key {
				inThread = append(inThread, name)
			}
		}
		got := slices.Sorted(slices.Values(tp.Names))
		if !slices.Equal(got, inThread) {
			t.Fatalf("step %d: the thread plan says %q holds %v; the files say %v", step, key, got, inThread)
		}
	}
}
