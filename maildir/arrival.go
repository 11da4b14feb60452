package maildir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// Claim order and clocks. A queue item's name starts with the stamp its
// sender's clock gave it, and names sort oldest first: on one machine that
// is the order of arrival. An item sent from another host reaches the
// queue's home only with a sync, and its name carries that host's clock,
// which may be ahead or behind. So the home's sync notes, for each item
// that arrives from another host, when it arrived by the home's clock
// ([Store.NoteArrivals]), in ArrivalDir/<queue>; a claim then orders the
// queue by arrival at the home: an item noted there by its arrival stamp,
// any other (sent on the home, released back into the queue, or noted by
// no sync: a record lost, a home moved) by its name's stamp, as before.
// Each key is a stamp followed by the item's name, so ties and script
// names without a stamp sort as names do.
//
// The record is this host's, never committed: only a queue's home claims
// from it. It holds one line per item, "<stamp> <name>", and a sync that
// notes arrivals drops the lines of items no longer in the queue, so it is
// bounded by the queue's length.
const ArrivalDir = "runtime/arrivals"

// arrivalLimit bounds the record a claim reads: a record larger than this
// (a queue of more than about 100,000 arrived items) is ignored, and the
// queue goes by its names.
const arrivalLimit = 8 << 20

// NoteArrivals records that the items named names (file names, with
// ".json") reached queue q at time at, by this host's clock: what a sync
// of q's home does for the items it takes from other hosts, before it
// writes them into the tree. An item noted before keeps its first
// arrival. Lines of items no longer in the queue are dropped. Only q's
// home notes arrivals ([NotHomeError] elsewhere).
func (s *Store) NoteArrivals(q Address, names []string, at time.Time) error {
	if q.Kind != KindQueue {
		return fmt.Errorf("%w: %s is %s, not a queue", ErrWrongKind, q, article(q.Kind))
	}
	if !ValidAgent(q.Name) {
		return &NameError{Kind: q.Kind, Name: q.Name, Why: "not a canonical name"}
	}
	if err := s.MayChange(q); err != nil {
		return err
	}
	old, err := s.arrivals(q)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	if len(old) > 0 {
		qd, err := s.root.Dir(q.Dir(false))
		if err != nil {
			return err
		}
		if qd != nil {
			err = qd.EachName(func(name []byte, regular bool) {
				if _, ok := old[string(name)]; ok && regular {
					present[string(name)] = true
				}
			})
			qd.Close()
			if err != nil {
				return err
			}
		}
	}
	stamp := at.UTC().Format(StampLayout)
	keep := map[string]string{}
	for name, st := range old {
		if present[name] {
			keep[name] = st
		}
	}
	for _, name := range names {
		if _, ok := keep[name]; !ok && validItemName(name) {
			keep[name] = stamp
		}
	}
	if len(keep) == len(old) && len(names) == 0 {
		return nil // nothing dropped, nothing new
	}
	d, err := s.mkdir(ArrivalDir)
	if err != nil {
		return err
	}
	defer d.Close()
	if len(keep) == 0 {
		if err := d.Remove(q.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	var buf bytes.Buffer
	for _, name := range slices.SortedFunc(func(yield func(string) bool) {
		for n := range keep {
			if !yield(n) {
				return
			}
		}
	}, func(a, b string) int { return strings.Compare(keep[a]+"-"+a, keep[b]+"-"+b) }) {
		buf.WriteString(keep[name] + " " + name + "\n")
	}
	return d.Replace(q.Name, buf.Bytes())
}

// validItemName reports whether name can be a queue item's file name.
func validItemName(name string) bool {
	return durable.ValidName(name) && !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json") && !strings.ContainsAny(name, " \n")
}

// Arrivals returns what this host noted of queue q's items' arrival (see
// [ArrivalDir]): the arrival stamp of each noted item, by file name.
func (s *Store) Arrivals(q Address) (map[string]time.Time, error) {
	raw, err := s.arrivals(q)
	out := map[string]time.Time{}
	for name, st := range raw {
		if t, ok := ParseStamp(st); ok {
			out[name] = t
		}
	}
	return out, err
}

// arrivals reads the arrival record of queue q: stamp by file name. A
// missing record is empty; a line that does not parse is skipped.
func (s *Store) arrivals(q Address) (map[string]string, error) {
	d, err := s.root.Dir(ArrivalDir)
	if d == nil || err != nil {
		return nil, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(q.Name, arrivalLimit)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, durable.ErrTooLarge) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.Lines(string(data)) {
		st, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if _, good := ParseStamp(st); ok && good && validItemName(name) {
			out[name] = st
		}
	}
	return out, nil
}

// arrivalOrder returns the items of queue folder src in claim order (see
// [ArrivalDir]), given the arrival stamps noted by name, leaving out the
// names in tried. It lists the whole folder.
func arrivalOrder(src *durable.Dir, noted map[string]string, tried map[string]bool) ([]string, error) {
	type item struct{ key, name string }
	var items []item
	err := src.EachName(func(name []byte, regular bool) {
		if !regular || len(name) == 0 || name[0] == '.' || !bytes.HasSuffix(name, []byte(".json")) || tried[string(name)] {
			return
		}
		n := string(name)
		key := n
		if st, ok := noted[n]; ok {
			key = st + "-" + n
		}
		items = append(items, item{key, n})
	})
	slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.key, b.key) })
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.name
	}
	return names, err
}
