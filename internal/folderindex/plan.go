package folderindex

import (
	"errors"
	"io/fs"
	"slices"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// Rules say when an index may be trusted, and where the index files are.
type Rules struct {
	// Open opens the index folder: for reading (nil, nil when there is
	// none) or, with create, for writing.
	Open func(create bool) (*durable.Dir, error)
	// Window is the racy window (see [Racy]).
	Window time.Duration
	// Fine reports whether the file system of device dev gives a directory
	// a later ctime at every change: then a folder's stamp is never racy.
	Fine func(dev uint64) bool
	// Classify says whether a folder entry is a candidate message file,
	// and if not, why (nil: passed over in silence).
	Classify func(name string, typ fs.FileMode) (candidate bool, why error)
	// Notes says whether an index is carried forward by its senders'
	// notes (see the adds log), however long ago it was listed: along an
	// unbroken chain of at most maxAdds notes from its stamp to the
	// folder's. Past the chain's end the folder is listed again, which is
	// when a file rewritten in place is seen.
	Notes bool
}

// DirRacy reports whether a folder's stat taken at now could fail to show
// a change made after it.
func (r *Rules) DirRacy(st durable.Stat, now time.Time) bool {
	return Racy(st, now, r.Window) && !r.Fine(st.Dev)
}

// A Plan says which files of a folder a reader of its unread mail must
// read: the index answers, the reader reads Read and says what each file
// it read is (Record), then Save keeps the answer for the next reader.
type Plan struct {
	Read  []string // the files to read, sorted
	Known []Entry  // files known to be read: not to be read again
	// Count is the number of message files: Known and Read together.
	Count int

	rules *Rules
	rel   string
	now   time.Time
	next  *Folder // the index being rebuilt; nil when the old one held
}

// PlanUnread plans a read of folder d (whose stat, read before the
// listing, is st): from its index when that describes the folder as it
// stands; else from a listing that keeps what the old index still vouches
// for, and rebuilds the index as the reader records what it reads.
// listed is called with each entry that is not a message file and why
// (as Rules Classify says), whether a listing found it or the index
// recorded it: a reader reports them either way.
// Known is filled only when known is true (the index's list of files known
// to be read is read only when the reader wants their names, or the folder
// changed).
func PlanUnread(d *durable.Dir, st durable.Stat, r *Rules, known bool, listed func(name string, typ fs.FileMode, why error)) (*Plan, error) {
	return planUnread(d, st, r, known, true, listed)
}

// ErrNeedsListing is what [PlanFromIndex] says when the folder's index
// does not describe the folder as it stands.
var ErrNeedsListing = errors.New("folderindex: the index does not describe the folder as it stands")

// PlanFromIndex plans a read of folder d as PlanUnread does when the
// index (with its senders' notes) describes the folder as it stands, and
// otherwise returns ErrNeedsListing, having read the index and nothing
// else: a plan that costs one or two small reads, never a listing.
func PlanFromIndex(d *durable.Dir, st durable.Stat, r *Rules, known bool, listed func(name string, typ fs.FileMode, why error)) (*Plan, error) {
	return planUnread(d, st, r, known, false, listed)
}

func planUnread(d *durable.Dir, st durable.Stat, r *Rules, known, list bool, listed func(name string, typ fs.FileMode, why error)) (*Plan, error) {
	p := &Plan{rules: r, rel: d.Path(), now: time.Now()}
	idx, _ := r.Open(false)
	var old *Folder
	if idx != nil {
		old = ReadFolder(idx, p.rel, known)
		if !old.Usable(st) {
			if f, ok := followAdds(idx, r, p.rel, old, st, p.now); ok {
				old = f // the index, and the adds its senders noted since: the folder as it stands
			} else if !known && old != nil && list {
				old = ReadFolder(idx, p.rel, true) // the folder changed: its known names are needed
			}
		}
		idx.Close()
	}
	if old.Usable(st) {
		if listed != nil {
			for _, o := range old.Odd {
				if _, why := r.Classify(o.Name, o.Typ); why != nil {
					listed(o.Name, o.Typ, why)
				}
			}
		}
		p.Read, p.Known, p.Count = old.Load, old.Known, old.Count
		return p, nil
	}
	if !list {
		return nil, ErrNeedsListing
	}
	was := map[string]Entry{}
	if old != nil {
		for _, k := range old.Known {
			was[k.Name] = k
		}
	}
	p.next = &Folder{Stamp: StampOf(st), Racy: r.DirRacy(st, p.now)}
	same, load, err := Relist(d, was, r.Classify, func(name string, typ fs.FileMode, why error) {
		p.next.Odd = append(p.next.Odd, Odd{Name: name, Typ: typ})
		if listed != nil {
			listed(name, typ, why)
		}
	})
	if err != nil {
		return nil, err
	}
	p.Read, p.Known, p.next.Known = load, same, append(p.next.Known, same...)
	p.Count = len(same) + len(load)
	return p, nil
}

// Record says what the file name, whose stat is st, was when it was read:
// a message that says it is read (read), or anything else (unread, or not
// a message). A file too fresh to vouch for is read again next time.
func (p *Plan) Record(name string, st durable.Stat, read bool) {
	if p.next == nil {
		return
	}
	switch {
	case !read:
		p.next.Load = append(p.next.Load, name)
	case Racy(st, p.now, p.rules.Window):
		// A file removed and made again within the clock's tick could
		// have the same inode and ctime: read again at the next call,
		// which lists the folder again to vouch for it then.
		p.next.Load = append(p.next.Load, name)
		p.next.Racy = true
	default:
		p.next.Known = append(p.next.Known, Entry{Name: name, Ino: st.Ino, Ctime: st.Ctime.UnixNano()})
	}
}

// Save keeps what the reader recorded as the folder's index, when the
// plan listed it. Files that vanished since the listing are left out (the
// folder's stamp moved with them). The index is a cache: written
// atomically, not fsynced, and a failure is not reported.
func (p *Plan) Save() {
	if p.next == nil {
		return
	}
	p.next.Count = len(p.next.Known) + len(p.next.Load)
	write(p.rules, FileName(p.rel), p.next.Encode())
	// The new index stands at the stamp the listing read: the notes of
	// adds before it are spent. (A note appended meanwhile goes with them:
	// the next reader lists the folder.)
	if d, _ := p.rules.Open(false); d != nil {
		_ = d.Remove(AddsName(p.rel))
		d.Close()
	}
}

// write replaces the index file name.
func write(r *Rules, name string, data []byte) {
	d, err := r.Open(true)
	if err != nil || d == nil {
		return
	}
	defer d.Close()
	_ = d.ReplaceEphemeral(name, data)
}

// Count counts the message files of folder d (an archive), from its index
// when the folder has not changed since, and keeps the count in the index
// for the next call.
func Count(d *durable.Dir, st durable.Stat, r *Rules, count func() (int, error)) (int, error) {
	rel := d.Path()
	if idx, _ := r.Open(false); idx != nil {
		f := ReadFolder(idx, rel, false)
		idx.Close()
		if f.Usable(st) {
			return f.Count, nil
		}
	}
	n, err := count()
	if err != nil {
		return 0, err
	}
	write(r, FileName(rel), (&Folder{Stamp: StampOf(st), Racy: r.DirRacy(st, time.Now()), Count: n}).Encode())
	return n, nil
}

// A ThreadPlan says which files of a folder may belong to a thread: from
// the thread index when it holds (Names), else the reader reads Read,
// records each file's thread, and Save keeps the rebuilt index.
type ThreadPlan struct {
	Names []string // when the index held: the files filed under the hash
	Read  []string // when rebuilding: the files to read

	rules   *Rules
	rel     string
	st      durable.Stat
	now     time.Time
	racy    bool
	hash    uint64
	entries []ThreadEntry
	rebuilt bool
}

// PlanThread plans the lookup of the thread whose hash is hash in folder d
// (whose stat is st).
func PlanThread(d *durable.Dir, st durable.Stat, r *Rules, hash uint64, listed func(name string, typ fs.FileMode, why error)) (*ThreadPlan, error) {
	p := &ThreadPlan{rules: r, rel: d.Path(), st: st, now: time.Now(), hash: hash}
	idx, _ := r.Open(false)
	old := map[string]ThreadEntry{}
	if idx != nil {
		names, ok := LookupThread(idx, p.rel, st, hash)
		if ok {
			idx.Close()
			p.Names = names
			return p, nil
		}
		old = ReadThreads(idx, p.rel)
		idx.Close()
	}
	p.rebuilt = true
	p.racy = r.DirRacy(st, p.now)
	was := map[string]Entry{}
	for name, e := range old {
		was[name] = e.Entry
	}
	same, load, err := Relist(d, was, r.Classify, listed)
	if err != nil {
		return nil, err
	}
	for _, k := range same {
		p.entries = append(p.entries, ThreadEntry{Entry: k, Hash: old[k.Name].Hash})
		if old[k.Name].Hash == hash {
			p.Names = append(p.Names, k.Name)
		}
	}
	p.Read = load
	return p, nil
}

// Record says which thread (its key) the file name, whose stat is st, was
// found to belong to when read.
func (p *ThreadPlan) Record(name string, st durable.Stat, key string) {
	if !p.rebuilt {
		return
	}
	ctime := st.Ctime.UnixNano()
	if Racy(st, p.now, p.rules.Window) {
		ctime = -1 // read again at the next rebuild, which the next lookup makes
		p.racy = true
	}
	h := ThreadHash(key)
	p.entries = append(p.entries, ThreadEntry{Entry: Entry{Name: name, Ino: st.Ino, Ctime: ctime}, Hash: h})
	if h == p.hash {
		p.Names = append(p.Names, name)
	}
}

// Save keeps the rebuilt thread index, when the plan rebuilt it.
func (p *ThreadPlan) Save() {
	if p.rebuilt {
		write(p.rules, ThreadsName(p.rel), EncodeThreads(StampOf(p.st), p.racy, p.entries))
	}
}

// Forget makes the index of folder rel vouch no more for the file name,
// as if it had never been read: the next reader reads it. A verb that
// finds a message already as it wants it (and so writes nothing, which
// moves no stamp) calls it, so that the index is right about the message
// it named even after a write the stamp cannot show (a file rewritten in
// place under its own name).
func Forget(r *Rules, rel, name string) {
	idx, _ := r.Open(false)
	if idx == nil {
		return
	}
	f := ReadFolder(idx, rel, true)
	idx.Close()
	if f == nil {
		return
	}
	i := slices.IndexFunc(f.Known, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return
	}
	f.Known = slices.Delete(f.Known, i, i+1)
	if j, found := slices.BinarySearch(f.Load, name); !found {
		f.Load = slices.Insert(f.Load, j, name)
	}
	write(r, FileName(rel), f.Encode())
}
