package folderindex

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/mailfs/mailfs/internal/durable"
)

// The claim cursor lets a claim skip listing its queue. A claim needs the
// oldest item, and finding the oldest of 10,000 names means reading 10,000
// names; so the claim that lists a large queue keeps the ClaimWindow
// oldest names, in claim order, in an order file in the index folder, and a
// cursor saying how far claims have got in it and the queue folder's
// stamp as the last claimant left it (after its own move). The next
// claimant, under the same lock, takes the names after the cursor instead
// of listing — if the folder's stamp is still that one, which proves that
// nothing was added since, on a file system whose clock gives every change
// a new ctime (see [Rules] Fine; elsewhere every claim lists).
// Whatever else happens — an item added, released, removed, a claimant
// killed before it moved the cursor — moves the stamp, and the next claim
// lists the queue again. Names the cursor offers are tried exactly as a
// listing's are: one already gone is passed over, and exactly once stays
// the rename's guarantee, not the cursor's.
//
// What the stamp cannot show is an item added in the instant between a
// claimant's last change to the folder and its reading of the stamp. Sends
// through mailfs, releases and restores into a queue hold the claim lock
// (shared among senders), and so does mailfs sync while git writes the
// tree, so none of them can land there; a file a script drops into a queue
// at that instant waits until the window is used up or the folder next
// changes, and is then taken in its order.
const ClaimWindow = 256

// Claims gives one claim its candidate names, oldest first, in batches:
// from the cursor when it can be trusted, else from a listing.
type Claims struct {
	r     *Rules // nil: no cursor
	pick  int
	q     *durable.Dir // the queue folder, locked by the caller
	rel   string
	start durable.Stat // the folder as the claim found it
	tried map[string]bool

	cur    *Cursor // the cursor in use, if any
	keep   bool    // the cursor may be saved after a claim
	listed bool    // this claim has listed the folder

	// churn is set when the queue changed since the last claim and that
	// claim's order file served no other: items arrive between claims, so
	// a window would be listed again at the next claim anyway. The claim
	// takes the cheap pass instead, and leaves a marker cursor: if nothing
	// changes before the next claim, that one lists a window again.
	churn bool
}

// NewClaims starts one claim from queue folder q, which the caller holds
// the claims' lock on. Each batch is of up to pick names; tried holds the
// names the claim has tried, which the caller fills. With r nil (the
// indexes off) every batch comes from a listing.
func NewClaims(q *durable.Dir, r *Rules, pick int, tried map[string]bool) (*Claims, error) {
	st, err := q.Stat()
	if err != nil {
		return nil, err
	}
	c := &Claims{r: r, pick: pick, q: q, rel: q.Path(), start: st, tried: tried}
	if !c.cursorOn() {
		return c, nil
	}
	d, err := r.Open(false)
	if d == nil || err != nil {
		return c, nil
	}
	defer d.Close()
	data, err := d.Head(CursorName(c.rel), 512)
	if err != nil {
		return c, nil
	}
	switch cur := DecodeCursor(data); {
	case cur == nil:
	case cur.Stamp == StampOf(st) && cur.Order != NoOrder:
		c.cur, c.keep = cur, true
	case cur.Stamp != StampOf(st) && (cur.Order == NoOrder || cur.Uses <= 1):
		c.churn = true
	}
	return c, nil
}

// cursorOn reports whether this claim may use a cursor: the indexes are
// on and the queue's file system has a fine clock.
func (c *Claims) cursorOn() bool { return c.r != nil && c.r.Fine(c.start.Dev) }

// Batch returns the next names to try, oldest first, and whether they are
// the last ones the queue has.
func (c *Claims) Batch() (names []string, last bool, err error) {
	if c.cur != nil {
		if names = c.fromCursor(c.pick); len(names) > 0 {
			return names, false, nil
		}
		c.cur = nil // the window is used up, or its file is gone
	}
	if !c.listed && !c.churn && c.cursorOn() {
		c.listed, c.keep = true, false
		return c.list()
	}
	return c.oldest()
}

// fromCursor reads up to n names after the cursor.
func (c *Claims) fromCursor(n int) []string {
	d, err := c.r.Open(false)
	if d == nil || err != nil {
		return nil
	}
	defer d.Close()
	data, err := d.ReadAt(c.cur.Order, c.cur.Off, n*256)
	if err != nil {
		return nil
	}
	var names []string
	for len(names) < n {
		i := bytes.IndexByte(data, 0)
		if i < 0 {
			break
		}
		if name := string(data[:i]); !c.tried[name] {
			names = append(names, name)
		}
		data = data[i+1:]
	}
	return names
}

// Consume moves the cursor past name, which the claim is about to try.
func (c *Claims) Consume(name string) {
	if c.cur != nil {
		c.cur.Pos++
		c.cur.Off += int64(len(name)) + 1
	}
}

// list lists the whole queue, keeps its oldest ClaimWindow names as a new
// order file with the cursor at its start, and returns the first batch.
// A queue of no more than one batch needs no cursor. The listing keeps
// only the ClaimWindow smallest names seen so far (a max-heap), so a
// name that cannot be among them costs a comparison and no allocation.
func (c *Claims) list() ([]string, bool, error) {
	var h maxHeap
	err := c.q.EachName(func(name []byte, regular bool) {
		if !regular || len(name) == 0 || name[0] == '.' || !bytes.HasSuffix(name, []byte(".json")) {
			return
		}
		if len(h) == ClaimWindow && string(name) >= h[0] || c.tried[string(name)] {
			return
		}
		if len(h) == ClaimWindow {
			h.replaceTop(string(name))
		} else {
			h.push(string(name))
		}
	})
	if err != nil {
		return nil, false, err
	}
	window := []string(h)
	slices.Sort(window)
	if len(window) <= c.pick {
		return window, true, nil
	}
	var buf bytes.Buffer
	for _, n := range window {
		buf.WriteString(n)
		buf.WriteByte(0)
	}
	d, err := c.r.Open(true)
	if err != nil {
		return window[:c.pick], false, nil // no cursor: the claim goes on without one
	}
	defer d.Close()
	order := FileName(c.rel) + ".order-" + strconv.FormatUint(rand.Uint64(), 36)
	if d.CreateEphemeral(order, buf.Bytes()) != nil {
		return window[:c.pick], false, nil
	}
	// Trusted only if nothing changed while the folder was listed.
	if st, err := c.q.Stat(); err == nil && StampOf(st) == StampOf(c.start) {
		c.keep = true
	}
	c.cur = &Cursor{Order: order}
	if names := c.fromCursor(c.pick); len(names) > 0 {
		return names, false, nil
	}
	c.cur, c.keep = nil, false
	return window[:c.pick], false, nil
}

// A maxHeap holds strings with the greatest at [0].
type maxHeap []string

func (h *maxHeap) push(s string) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] >= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

// replaceTop replaces the greatest with s, which is smaller.
func (h maxHeap) replaceTop(s string) {
	h[0] = s
	for i := 0; ; {
		l, big := 2*i+1, i
		if l < len(h) && h[l] > h[big] {
			big = l
		}
		if r := l + 1; r < len(h) && h[r] > h[big] {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// oldest is a listing pass without a cursor: one getdents pass keeping the
// pick oldest names not yet tried, allocating nothing for the rest.
func (c *Claims) oldest() ([]string, bool, error) {
	var names []string
	err := c.q.EachName(func(name []byte, regular bool) {
		if !regular || len(name) == 0 || name[0] == '.' || !bytes.HasSuffix(name, []byte(".json")) {
			return
		}
		if len(names) == c.pick && string(name) >= names[c.pick-1] || c.tried[string(name)] {
			return
		}
		n := string(name)
		i, _ := slices.BinarySearch(names, n)
		names = slices.Insert(names, i, n)
		if len(names) > c.pick {
			names = names[:c.pick]
		}
	})
	return names, len(names) < c.pick, err
}

// Done records where a successful claim left the queue: the cursor (or
// the churn marker), with the folder's stamp after the claim's own move,
// and an order file no longer named by the cursor removed. Failures only
// cost the next claim a listing. With the indexes off it does nothing.
func (c *Claims) Done() {
	if c.r == nil {
		return
	}
	d, err := c.r.Open(false)
	if d == nil || err != nil {
		return
	}
	defer d.Close()
	name := CursorName(c.rel)
	var old *Cursor
	if data, err := d.Head(name, 512); err == nil {
		old = DecodeCursor(data)
	}
	var next *Cursor
	switch {
	case c.cur != nil && c.keep:
		next = c.cur
		next.Uses++
	case c.churn:
		next = &Cursor{Order: NoOrder}
	}
	var err2 error
	if next != nil {
		st, err := c.q.Stat()
		if err != nil {
			return
		}
		next.Stamp = StampOf(st)
		err2 = d.ReplaceEphemeral(name, next.Encode())
	} else if old != nil {
		err2 = d.Remove(name)
	}
	if err2 == nil && old != nil && old.Order != NoOrder && (next == nil || old.Order != next.Order) {
		_ = d.Remove(old.Order)
	}
}
