package maildir

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/par"
)

// QuarantineDir is the folder of a mailbox where fsck moves files that are
// not messages. Readers skip it, as they skip [ArchiveDir].
const QuarantineDir = "quarantine"

// ListOptions selects and orders what [Store.List] returns.
type ListOptions struct {
	All        bool // read messages too, not only unread ones
	Archived   bool // the archive folder instead of the mailbox
	ByPriority bool // urgent first, then high, normal, low; by time within each
	Limit      int  // at most this many, after ordering; 0 means no limit

	// Match, if not nil, keeps only the messages it matches (see [Filter]).
	Match *Matcher
}

// List returns the messages in box b (an agent's mailbox, a queue or a
// channel), oldest first: the unread ones, or all of them with opt.All.
// A channel's posts are all listed: "read" means nothing for a broadcast.
// A folder that does not exist is empty. Files that are not messages are
// reported to [Store.Warn] and skipped.
func (s *Store) List(b Address, opt ListOptions) ([]*Message, error) {
	return s.ListContext(context.Background(), b, opt)
}

// ListContext is List with ctx checked before each file is read: once
// ctx is done it stops, keeps no index of what it read, and returns ctx's
// error.
func (s *Store) ListContext(ctx context.Context, b Address, opt ListOptions) ([]*Message, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	// Everything in a queue waits for a claimant, whatever its "read" key
	// says (a release cut short may have left it true); "read" means
	// nothing for a channel's broadcast posts.
	all := opt.All || b.Kind != KindAgent
	keep := func(m *Message) bool { return (all || !m.Read) && (opt.Match == nil || opt.Match.Match(m)) }
	var msgs []*Message
	var err error
	if all || opt.Archived {
		msgs, err = s.readFolderIf(ctx, b, opt.Archived, nil, keep)
	} else {
		msgs, _, err = s.readUnread(b, unreadScan{keep: keep, ctx: ctx})
	}
	if err != nil {
		return nil, err
	}
	sortByTime(msgs)
	if opt.ByPriority {
		slices.SortStableFunc(msgs, func(a, b *Message) int { return cmp.Compare(a.Priority.Rank(), b.Priority.Rank()) })
	}
	if opt.Limit > 0 && len(msgs) > opt.Limit {
		msgs = msgs[:opt.Limit]
	}
	return msgs, nil
}

// ErrNeedsListing is what [Store.ListFromIndex] says when its answer
// would take a listing of the folder, or more file reads than it was
// allowed.
var ErrNeedsListing = errors.New("maildir: the answer needs the folder listed")

// ListFromIndex returns agent box b's unread messages, as List with no
// options does, when the folder's index describes the folder as it stands
// and at most most files are to be read besides it; ctx is checked before
// each. Otherwise it returns ErrNeedsListing, having read the index and
// nothing else. Its file operations are few and small, so a caller with a
// deadline can make them on its own goroutine and leave a listing, which
// can take long, to another (as the prompt hook does).
func (s *Store) ListFromIndex(ctx context.Context, b Address, most int) ([]*Message, error) {
	if b.Kind != KindAgent {
		return nil, ErrNeedsListing // everything in it is read, every time
	}
	if err := s.check(b); err != nil {
		return nil, err
	}
	msgs, _, err := s.readUnread(b, unreadScan{ctx: ctx, fromIndex: true, most: most})
	if err != nil {
		return nil, err
	}
	sortByTime(msgs)
	return msgs, nil
}

func sortByTime(msgs []*Message) {
	slices.SortFunc(msgs, func(a, b *Message) int {
		if c := a.Timestamp.Compare(b.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Get returns the message id from the folder of b or its archive. id
// may be the id, the file name, or a unique prefix of the id; a prefix that
// matches several messages gives an [*AmbiguousError]. Get changes nothing.
func (s *Store) Get(b Address, id string) (*Message, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	d, name, archived, err := s.locate(b, id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m, err := s.load(d, b, archived, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(b, id)
	}
	return m, err
}

// NeglectedAfter is the age past which unread mail counts as neglected in
// [Counts]: the archive sweep's default cut-off. The sweep keeps such mail
// in the mailbox (it is the agent's work), so it is reported instead.
const NeglectedAfter = 24 * time.Hour

// Counts is what [Store.Count] reports for one mailbox.
type Counts struct {
	Box          Address   `json:"agent"`
	Total        int       `json:"total"`                  // messages in the mailbox, read or not
	Unread       int       `json:"unread"`                 // of those, the unread ones
	Archived     int       `json:"archived"`               // files in its archive folder
	Neglected    int       `json:"neglected"`              // unread and older than NeglectedAfter
	OldestUnread time.Time `json:"oldest_unread,omitzero"` // the time of the oldest unread message
}

// Count counts the messages in box b. It reads only the files the folder
// index cannot vouch for (see [IndexDir]), one batch at a time, so the
// messages it holds in memory do not grow with the size of the folder.
func (s *Store) Count(b Address) (Counts, error) {
	if err := s.check(b); err != nil {
		return Counts{}, err
	}
	c := Counts{Box: b}
	cutoff := s.now().Add(-NeglectedAfter)
	_, known, err := s.readUnread(b, unreadScan{keep: func(m *Message) bool {
		c.Total++
		if !m.Read {
			c.Unread++
			if c.OldestUnread.IsZero() || m.Timestamp.Before(c.OldestUnread) {
				c.OldestUnread = m.Timestamp
			}
			if m.Timestamp.Before(cutoff) {
				c.Neglected++
			}
		}
		return false
	}})
	c.Total += known
	if err != nil {
		return c, err
	}
	d, err := s.openFolder(b, true)
	if d == nil {
		return c, err
	}
	defer d.Close()
	c.Archived, err = s.countNames(d)
	return c, err
}

// ReadNames returns the file names of the read messages in the folder of
// b (not its archive), taking the folder index's word where it can (see
// [IndexDir]) and reading the rest. It reports nothing to Warn: it is for
// a caller such as a watcher, which passes over read mail on its first
// look and reads everything else itself.
func (s *Store) ReadNames(b Address) ([]string, error) {
	if err := s.check(b); err != nil {
		return nil, err
	}
	var names []string
	_, _, err := s.readUnread(b, unreadScan{
		keep:  func(*Message) bool { return false },
		read:  func(name string) { names = append(names, name) },
		quiet: true,
	})
	return names, err
}

// Agents returns the agents that have a mailbox, sorted.
func (s *Store) Agents() ([]string, error) {
	r, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := r.Open(MailDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var agents []string
	err = d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
		case e.IsDir() && ValidAgent(name):
			agents = append(agents, name)
		case !e.IsDir() && ValidAgent(name):
			// A valid name, the wrong kind of file: say which (a
			// symbolic link is never followed out of the root).
			s.warn(d.Join(name), fmt.Errorf("not a mailbox: it is %s, and a mailbox is a directory", TypeName(e.Type())))
		default:
			s.warn(d.Join(name), errors.New("not a mailbox (a mailbox is a directory named by an agent id)"))
		}
	})
	if err != nil {
		return nil, err
	}
	// An agent with a home record is known too: git keeps no empty folder,
	// so on the other hosts of a town a registration ("mailfs agent add",
	// which claims the home) arrives as that record alone.
	if homed, err := s.homedNames(KindAgent); err == nil {
		for _, name := range homed {
			if ValidAgent(name) && !slices.Contains(agents, name) {
				agents = append(agents, name)
			}
		}
	}
	slices.Sort(agents)
	return agents, nil
}

// errRuledOut is a file a reader's prefilter ruled out before parsing it.
var errRuledOut = errors.New("ruled out")

// readFolderIf parses the messages in one folder of a box and returns
// those keep accepts (keep is called in file-name order, from the calling
// goroutine), ctx checked before each file. pre, if not nil, sees each
// file's raw bytes first: a file it rejects is not parsed (nor kept).
// Files that vanish meanwhile are skipped silently; files that are not
// messages are reported to Warn.
func (s *Store) readFolderIf(ctx context.Context, b Address, archived bool, pre func([]byte) bool, keep func(*Message) bool) ([]*Message, error) {
	d, err := s.openFolder(b, archived)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	if err := s.eachName(d, true, func(name string) { names = append(names, name) }); err != nil {
		return nil, err
	}
	slices.Sort(names)
	var kept []*Message
	s.loadNames(ctx, d, b, archived, names, pre, func(name string, m *Message, _ durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist), err == errRuledOut:
			// moved or deleted since the listing: not ours to report
		case err != nil:
			s.warn(d.Join(name), Reason(err))
		case keep(m):
			kept = append(kept, m)
		}
	})
	return kept, ctx.Err()
}

// loadNames reads and parses the files names of d, several at a time,
// and calls each with every outcome (the message and the stat of the file
// it came from, or the error), in the order of names and from the calling
// goroutine. Batches bound the memory of a caller that keeps nothing, such
// as Count: at most one batch of messages is alive at a time. ctx is
// checked before each file is read: once it is done, no file more is read
// and each is not called for the files left.
func (s *Store) loadNames(ctx context.Context, d *durable.Dir, b Address, archived bool, names []string, pre func([]byte) bool, each func(name string, m *Message, st durable.Stat, err error)) {
	const batch = 1024
	msgs := make([]*Message, min(batch, len(names)))
	sts := make([]durable.Stat, len(msgs))
	errs := make([]error, len(msgs))
	for lo := 0; lo < len(names) && ctx.Err() == nil; lo += batch {
		part := names[lo:min(lo+batch, len(names))]
		parallel(len(part), func(i int) {
			if errs[i] = ctx.Err(); errs[i] == nil {
				msgs[i], _, _, sts[i], errs[i] = s.loadStat(d, b, archived, part[i], pre)
			}
		})
		for i, m := range msgs[:len(part)] {
			if errs[i] != nil && errs[i] == ctx.Err() {
				return // not read: ctx ended first
			}
			each(part[i], m, sts[i], errs[i])
		}
		clear(msgs)
	}
}

// parallel calls f(0) … f(n-1), in parallel when n is large (par.Do).
func parallel(n int, f func(int)) { par.Do(n, f) }

// eachName calls f with the name of each candidate message file in d, in
// directory order. Dot-files and the archive and quarantine folders are
// passed over in silence; anything else that cannot be a message is
// reported to Warn when warn is true.
func (s *Store) eachName(d *durable.Dir, warn bool, f func(name string)) error {
	return eachEntry(d, func(name string, why error) {
		if why == nil {
			f(name)
		} else if warn {
			s.warn(d.Join(name), why)
		}
	})
}

// load reads and parses one message file of box b.
func (s *Store) load(d *durable.Dir, b Address, archived bool, name string) (*Message, error) {
	m, _, _, err := s.loadFields(d, b, archived, name)
	return m, err
}

// loadFields reads and parses one message file of box b, returning the
// message, its top-level fields and the file's bytes. It is the one place
// that decides what a message file is and fills in the defaults for what a
// script left out: every reader and every rewrite goes through it.
func (s *Store) loadFields(d *durable.Dir, b Address, archived bool, name string) (*Message, []field, []byte, error) {
	m, fields, data, _, err := s.loadStat(d, b, archived, name, nil)
	return m, fields, data, err
}

// loadStat is loadFields that also returns the stat of the file whose
// bytes were parsed, for the folder index, and rules out a file pre (if
// not nil) rejects from its raw bytes: then errRuledOut.
func (s *Store) loadStat(d *durable.Dir, b Address, archived bool, name string, pre func([]byte) bool) (*Message, []field, []byte, durable.Stat, error) {
	data, st, err := d.ReadFile(name, MaxSize)
	if errors.Is(err, durable.ErrTooLarge) {
		return nil, nil, nil, durable.Stat{}, &fs.PathError{Op: "read", Path: d.Join(name), Err: ErrTooLarge}
	}
	if err != nil {
		return nil, nil, nil, durable.Stat{}, err
	}
	if len(data) == 0 {
		return nil, nil, nil, durable.Stat{}, &fs.PathError{Op: "read", Path: d.Join(name), Err: fmt.Errorf("%w: empty file", ErrInvalidMessage)}
	}
	if pre != nil && !pre(data) {
		return nil, nil, nil, durable.Stat{}, errRuledOut
	}
	m, fields, err := decode(data)
	if err != nil {
		return nil, nil, nil, durable.Stat{}, &fs.PathError{Op: "parse", Path: d.Join(name), Err: err}
	}
	m.ID = strings.TrimSuffix(name, ".json")
	m.Box = b
	m.Path = d.Join(name)
	m.Archived = archived
	if m.Timestamp.IsZero() {
		if t, ok := ParseStamp(name); ok {
			m.Timestamp = t
		} else {
			m.Timestamp = st.ModTime.UTC()
		}
	}
	return m, fields, data, st, nil
}

// Reason returns err without the [*fs.PathError] around it, for a report
// that names the file itself (a [SkipError], an fsck finding, a sweep's
// skip): "not a message", not "read state/…/x.json: not a message".
func Reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Load reads the message whose id is exactly id from the folder of b:
// not its archive, and never by prefix. It is for callers that know the
// file name, such as watchers. A file that is not there gives
// [ErrNotFound]; one that is not a message gives an error wrapping
// [ErrInvalidMessage], [ErrTooLarge] or [ErrNotMessage].
func (s *Store) Load(b Address, id string) (*Message, error) {
	d, name, err := s.exact(b, id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	m, err := s.load(d, b, false, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, notFound(b, id)
	}
	return m, err
}

// exact resolves the exact id in the folder of b (not its archive) and
// returns the open folder (the caller closes it) and the name.
func (s *Store) exact(b Address, id string) (*durable.Dir, string, error) {
	if err := s.check(b); err != nil {
		return nil, "", err
	}
	f, err := s.openFolders(b, false, nil)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	i, name, err := f.find(id, true)
	if err != nil {
		return nil, "", err
	}
	return f.take(i), name, nil
}

// ReadFile returns the bytes of message id in the folder of b (not its
// archive; the exact id, never a prefix), exactly as they are on disk, for
// callers that hand the file on, such as "watch --exec". It reads through
// the root's confined walk: a symbolic link, a FIFO or a file over
// [MaxSize] is refused, never followed or waited on.
func (s *Store) ReadFile(b Address, id string) ([]byte, error) {
	d, name, err := s.exact(b, id)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(name, MaxSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, notFound(b, id)
	case errors.Is(err, durable.ErrTooLarge):
		return nil, &fs.PathError{Op: "read", Path: d.Join(name), Err: ErrTooLarge}
	}
	return data, err
}
