package maildir

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// The claim cursor lets a claim skip listing its queue. A claim needs the
// oldest item, and finding the oldest of 10,000 names means reading 10,000
// names; so the claim that lists a large queue keeps the claimWindow
// oldest names, in claim order, in an order file under IndexDir, and a
// cursor saying how far claims have got in it and the queue folder's
// stamp as the last claimant left it (after its own move). The next
// claimant, under the same lock, takes the names after the cursor instead
// of listing — if the folder's stamp is still that one, which proves that
// nothing was added since, on a file system whose clock gives every change
// a new ctime (see fineClock; elsewhere every claim lists, as before).
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
const claimWindow = 256

// A claimSource gives one claim its candidate names, oldest first, in
// batches: from the cursor when it can be trusted, else from a listing.
type claimSource struct {
	s     *Store
	q     *durable.Dir // the queue folder, locked by the caller
	rel   string
	start durable.Stat // the folder as the claim found it
	tried map[string]bool

	cur    *folderindex.Cursor // the cursor in use, if any
	keep   bool                // the cursor may be saved after a claim
	listed bool                // this claim has listed the folder

	// churn is set when the queue changed since the last claim and that
	// claim's order file served no other: items arrive between claims, so
	// a window would be listed again at the next claim anyway. The claim
	// takes the cheap pass instead, and leaves a marker cursor: if nothing
	// changes before the next claim, that one lists a window again.
	churn bool
}

func (s *Store) claimSource(q *durable.Dir, tried map[string]bool) (*claimSource, error) {
	st, err := q.Stat()
	if err != nil {
		return nil, err
	}
	c := &claimSource{s: s, q: q, rel: q.Path(), start: st, tried: tried}
	if !s.indexOn() || !s.fineClock(st.Dev) {
		return c, nil
	}
	d, err := s.root.Dir(IndexDir)
	if d == nil || err != nil {
		return c, nil
	}
	defer d.Close()
	data, err := d.Head(folderindex.CursorName(c.rel), 512)
	if err != nil {
		return c, nil
	}
	switch cur := folderindex.DecodeCursor(data); {
	case cur == nil:
	case cur.Stamp == folderindex.StampOf(st) && cur.Order != folderindex.NoOrder:
		c.cur, c.keep = cur, true
	case cur.Stamp != folderindex.StampOf(st) && (cur.Order == folderindex.NoOrder || cur.Uses <= 1):
		c.churn = true
	}
	return c, nil
}

// batch returns the next names to try, oldest first, and whether they are
// the last ones the queue has.
func (c *claimSource) batch() (names []string, last bool, err error) {
	if c.cur != nil {
		if names = c.fromCursor(claimPick); len(names) > 0 {
			return names, false, nil
		}
		c.cur = nil // the window is used up, or its file is gone
	}
	if !c.listed && !c.churn && c.s.indexOn() && c.s.fineClock(c.start.Dev) {
		c.listed, c.keep = true, false
		return c.list()
	}
	return c.oldest()
}

// fromCursor reads up to n names after the cursor.
func (c *claimSource) fromCursor(n int) []string {
	d, err := c.s.root.Dir(IndexDir)
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

// consume moves the cursor past name, which the claim is about to try.
func (c *claimSource) consume(name string) {
	if c.cur != nil {
		c.cur.Pos++
		c.cur.Off += int64(len(name)) + 1
	}
}

// list lists the whole queue, keeps its oldest claimWindow names as a new
// order file with the cursor at its start, and returns the first batch.
// A queue of no more than one batch needs no cursor. The listing keeps
// only the claimWindow smallest names seen so far (a max-heap), so a
// name that cannot be among them costs a comparison and no allocation.
func (c *claimSource) list() ([]string, bool, error) {
	var h maxHeap
	err := c.q.EachName(func(name []byte, regular bool) {
		if !regular || len(name) == 0 || name[0] == '.' || !bytes.HasSuffix(name, []byte(".json")) {
			return
		}
		if len(h) == claimWindow && string(name) >= h[0] || c.tried[string(name)] {
			return
		}
		if len(h) == claimWindow {
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
	if len(window) <= claimPick {
		return window, true, nil
	}
	var buf bytes.Buffer
	for _, n := range window {
		buf.WriteString(n)
		buf.WriteByte(0)
	}
	d, err := c.s.mkdir(IndexDir)
	if err != nil {
		return window[:claimPick], false, nil // no cursor: the claim goes on without one
	}
	defer d.Close()
	order := folderindex.FileName(c.rel) + ".order-" + strconv.FormatUint(rand.Uint64(), 36)
	if d.CreateEphemeral(order, buf.Bytes()) != nil {
		return window[:claimPick], false, nil
	}
	// Trusted only if nothing changed while the folder was listed.
	if st, err := c.q.Stat(); err == nil && folderindex.StampOf(st) == folderindex.StampOf(c.start) {
		c.keep = true
	}
	c.cur = &folderindex.Cursor{Order: order}
	if names := c.fromCursor(claimPick); len(names) > 0 {
		return names, false, nil
	}
	c.cur, c.keep = nil, false
	return window[:claimPick], false, nil
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
// claimPick oldest names not yet tried, allocating nothing for the rest.
func (c *claimSource) oldest() ([]string, bool, error) {
	var names []string
	err := c.q.EachName(func(name []byte, regular bool) {
		if !regular || len(name) == 0 || name[0] == '.' || !bytes.HasSuffix(name, []byte(".json")) {
			return
		}
		if len(names) == claimPick && string(name) >= names[claimPick-1] || c.tried[string(name)] {
			return
		}
		n := string(name)
		i, _ := slices.BinarySearch(names, n)
		names = slices.Insert(names, i, n)
		if len(names) > claimPick {
			names = names[:claimPick]
		}
	})
	return names, len(names) < claimPick, err
}

// done records where a successful claim left the queue: the cursor (or
// the churn marker), with the folder's stamp after the claim's own move,
// and an order file no longer named by the cursor removed. Failures only
// cost the next claim a listing.
func (c *claimSource) done() {
	d, err := c.s.root.Dir(IndexDir)
	if d == nil || err != nil {
		return
	}
	defer d.Close()
	name := folderindex.CursorName(c.rel)
	var old *folderindex.Cursor
	if data, err := d.Head(name, 512); err == nil {
		old = folderindex.DecodeCursor(data)
	}
	var next *folderindex.Cursor
	switch {
	case c.cur != nil && c.keep:
		next = c.cur
		next.Uses++
	case c.churn:
		next = &folderindex.Cursor{Order: folderindex.NoOrder}
	}
	var err2 error
	if next != nil {
		st, err := c.q.Stat()
		if err != nil {
			return
		}
		next.Stamp = folderindex.StampOf(st)
		err2 = d.ReplaceEphemeral(name, next.Encode())
	} else if old != nil {
		err2 = d.Remove(name)
	}
	if err2 == nil && old != nil && old.Order != folderindex.NoOrder && (next == nil || old.Order != next.Order) {
		_ = d.Remove(old.Order)
	}
}

// LockQueues takes the lock that claims take, for a writer outside the
// store that adds items to queues behind its back — mailfs sync while git
// writes the tree — so that no add slips between a claim's move and its
// reading of the queue's stamp (see claimWindow). It returns the function
// that releases it; with no queues yet it holds nothing.
func (s *Store) LockQueues() (unlock func(), err error) { return s.lockQueues(false) }

// lockQueues takes the claim lock on the queues' folder: shared (senders,
// restores) or exclusive.
func (s *Store) lockQueues(shared bool) (func(), error) {
	d, err := s.root.Dir(QueueDir)
	if d == nil || err != nil {
		return func() {}, err
	}
	var unlock func()
	if shared {
		unlock, err = d.LockShared()
	} else {
		unlock, err = d.Lock()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return func() { unlock(); d.Close() }, nil
}
