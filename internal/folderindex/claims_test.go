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

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// Claims must hand a claim the oldest item of its queue whatever happened
// to the queue since the last claim: for random sequences of items added
// (out of order, by rename or written in place), removed, put back under
// an old name (a release), and claims — some of which find their first
// candidate removed under them (a script's rm) — each claim takes the
// smallest name the queue holds, with the cursor (where this file system's
// clock allows one) and without it (the indexes off).
func TestClaimsTakeTheOldest(t *testing.T) {
	for seed := range uint64(6) {
		for _, cursor := range []bool{true, false} {
			t.Run(fmt.Sprintf("seed %d, cursor %v", seed, cursor), func(t *testing.T) {
				claimsProperty(t, seed, cursor)
			})
		}
	}
}

func claimsProperty(t *testing.T, seed uint64, cursor bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	base := t.TempDir()
	queue, mine := filepath.Join(base, "q"), filepath.Join(base, "mine")
	for _, d := range []string{queue, mine, filepath.Join(base, "index")} {
		os.MkdirAll(d, 0o700)
	}
	root, err := durable.OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var rules *folderindex.Rules
	if cursor {
		var clock folderindex.Clock
		open := func(create bool) (*durable.Dir, error) {
			if create {
				return root.MkdirAll("index")
			}
			return root.Open("index")
		}
		rules = &folderindex.Rules{Open: open, Fine: func(dev uint64) bool { return clock.Fine(open, dev) }}
	}
	names := func() []string {
		ents, _ := os.ReadDir(queue)
		var out []string
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	item := func() string { return fmt.Sprintf("%06d.json", rng.IntN(1_000_000)) }
	var claimed []string
	used := 0
	ops := []func(){
		func() { // a batch renamed in
			for range 1 + rng.IntN(20) {
				tmp := filepath.Join(base, "tmp")
				os.WriteFile(tmp, nil, 0o600)
				os.Rename(tmp, filepath.Join(queue, item()))
			}
		},
		func() { os.WriteFile(filepath.Join(queue, item()), nil, 0o600) }, // written in place
		func() { // removed
			if ns := names(); len(ns) > 0 {
				os.Remove(filepath.Join(queue, ns[rng.IntN(len(ns))]))
			}
		},
		func() { // a claimed item released: back under its old name
			if len(claimed) > 0 {
				i := rng.IntN(len(claimed))
				os.Rename(filepath.Join(mine, claimed[i]), filepath.Join(queue, claimed[i]))
				claimed = slices.Delete(claimed, i, i+1)
			}
		},
		func() { // a stray entry
			os.WriteFile(filepath.Join(queue, ".tmp-"+item()), nil, 0o600)
		},
	}
	for step := range 300 {
		if rng.IntN(3) > 0 {
			ops[rng.IntN(len(ops))]()
			continue
		}
		rm := rng.IntN(4) == 0 // a script removes the first candidate under the claim
		want := names()
		if rm && len(want) > 0 {
			want = want[1:]
		}
		q, err := root.Open("q")
		if err != nil {
			t.Fatal(err)
		}
		got := claimOne(t, q, rules, rm, root)
		q.Close()
		if got != "" {
			claimed = append(claimed, got)
			used++
		}
		switch {
		case len(want) == 0 && got != "":
			t.Fatalf("step %d: claimed %s from a queue that held nothing", step, got)
		case len(want) > 0 && got != want[0]:
			t.Fatalf("step %d: claimed %q; the oldest item was %q", step, got, want[0])
		}
	}
	if used < 20 {
		t.Fatalf("only %d claims took an item: the sequence tests too little", used)
	}
}

// claimOne claims as maildir's Claim does, with the claims' lock its
// caller would hold implied (one claimant): the first name offered that
// is still there is moved to mine. With rm, the first name offered is
// removed before it is tried.
func claimOne(t *testing.T, q *durable.Dir, rules *folderindex.Rules, rm bool, root *durable.Root) string {
	tried := map[string]bool{}
	from, err := folderindex.NewClaims(q, rules, 4, tried)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := root.Open("mine")
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	for {
		names, last, err := from.Batch()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			from.Consume(name)
			tried[name] = true
			if rm {
				q.Remove(name)
				rm = false
			}
			switch err := q.Move(name, dst, name); {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case err != nil:
				t.Fatal(err)
			}
			from.Done()
			return name
		}
		if last || len(names) == 0 {
			return ""
		}
	}
}
