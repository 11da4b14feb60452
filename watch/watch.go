package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/mailfs/mailfs/maildir"
)

// DefaultGrace is how long a file may stay unparseable before a warning.
const DefaultGrace = 2 * time.Second

// DefaultPoll is the polling interval the command uses when told to poll
// without one: a second of latency against a scan per second.
const DefaultPoll = time.Second

// An Event is a new message in a watched mailbox (or queue, or channel).
type Event struct {
	Box     maildir.Address // the folder: an agent's mailbox, a queue, a channel
	ID      string
	Path    string // relative to the root, "/"-separated
	Message *maildir.Message
	// Initial says the message was in the mailbox, unread, when the
	// watch began: it was not seen arriving.
	Initial bool
}

// A Watcher watches mailboxes. Set its fields, then call Watch.
type Watcher struct {
	Store *maildir.Store

	// Boxes are the folders to watch: agents' mailboxes, queues and
	// channels (not groups). They need not exist yet.
	Boxes []maildir.Address

	// All watches every mailbox, those created later included.
	All bool

	// Poll, if positive, scans every mailbox at this interval instead of
	// using fsnotify.
	Poll time.Duration

	// Grace is how long a file may stay unparseable (a script still writing
	// it) before it is reported to Warn; 0 means DefaultGrace.
	Grace time.Duration

	// Warn, if not nil, receives files that are not messages, once each,
	// and watch errors the watcher recovers from. It is called from the
	// watcher's goroutine.
	Warn func(error)

	// afterFirstScan, for tests, runs as soon as the first scan has
	// listed every box: what it delivers must be reported, which holds
	// only if the watches were added before that scan.
	afterFirstScan func()
	// remembered, for tests, is told how many ids a box remembers after
	// each file it looked at.
	remembered func(n int)
	// listed, for tests, is told of each listing of a box's folder.
	listed func(maildir.Address)

	mu     sync.Mutex
	cancel context.CancelFunc // the running watch's, nil when none runs
	done   chan struct{}      // closed when the running watch's goroutine has ended
}

// Watch starts watching and returns the channel of events, which is closed
// when ctx ends or [Watcher.Close] is called. Errors that prevent watching
// at all, such as an exhausted inotify limit, are returned here. A Watcher
// runs one watch at a time.
func (w *Watcher) Watch(ctx context.Context) (<-chan Event, error) {
	st := &state{
		w:       w,
		root:    w.Store.Dir(),
		out:     make(chan Event),
		boxes:   map[string]*box{},
		watched: map[string]bool{},
		grace:   cmp.Or(w.Grace, DefaultGrace),
	}
	for _, addr := range w.Boxes {
		switch {
		case addr.Kind == maildir.KindGroup:
			return nil, fmt.Errorf("%w %s: watch a group's members, not the group", maildir.ErrWrongKind, addr)
		case !maildir.ValidAgent(addr.Name):
			return nil, fmt.Errorf("%w %q", maildir.ErrInvalidAddress, addr.Name)
		}
		st.boxes[addr.Dir(false)] = newBox(addr)
	}
	st.kinds = kindDirs(w.All, st.boxes)
	if w.Poll <= 0 {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, limitError(err)
		}
		st.fsw = fsw
		// Watch first, scan second: what lands in between is seen twice at
		// worst, and reported once.
		if err := st.addWatches(); err != nil {
			fsw.Close()
			return nil, err
		}
	}
	st.scanAll(true)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	w.mu.Lock()
	w.cancel, w.done = cancel, done
	w.mu.Unlock()
	go func() {
		defer close(done)
		st.run(ctx)
	}()
	return st.out, nil
}

// Close ends the running watch: it cancels it, and returns once its
// goroutine has ended, its fsnotify watcher closed and its event channel
// closed (events not yet received are dropped). Without a running watch,
// or a second time, it does nothing.
func (w *Watcher) Close() error {
	w.mu.Lock()
	cancel, done := w.cancel, w.done
	w.cancel, w.done = nil, nil
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}

// limitError explains an exhausted inotify limit.
func limitError(err error) error {
	read := func(name string) string {
		b, _ := os.ReadFile("/proc/sys/fs/inotify/" + name)
		return strings.TrimSpace(string(b))
	}
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("out of inotify watches (fs.inotify.max_user_watches = %s): raise it with \"sysctl fs.inotify.max_user_watches=524288\", or watch by polling: %w", read("max_user_watches"), err)
	case errors.Is(err, syscall.EMFILE):
		return fmt.Errorf("out of inotify instances (fs.inotify.max_user_instances = %s): raise it with \"sysctl fs.inotify.max_user_instances=1024\", or watch by polling: %w", read("max_user_instances"), err)
	}
	return err
}

// state is a running watcher; only its goroutine touches it after Watch.
type state struct {
	w       *Watcher
	root    string
	out     chan Event
	fsw     *fsnotify.Watcher
	boxes   map[string]*box // by root-relative folder
	kinds   []string        // the folders holding the boxes; see kindDirs
	watched map[string]bool // absolute directories with a watch
	grace   time.Duration
	queue   []Event // found, not yet sent
}

// box is one watched folder.
type box struct {
	addr    maildir.Address
	seen    map[string]bool      // ids reported, or read already at start
	pending map[string]time.Time // ids that did not parse yet, since when
	warned  map[string]bool      // pending ids already reported to Warn
	kept    int                  // len(seen) after the last forget
}

// forgetSlack is how far seen may grow past twice what the last forget
// kept before the next: a forget lists the folder, so it runs once per
// forgetSlack ids at least, and seen holds at most about twice the
// folder's files plus this.
const forgetSlack = 1024

// forget drops from seen the ids whose files are no longer in the
// folder (read and archived, deleted, claimed away), so that a watcher
// that runs for weeks remembers what its folder holds, not everything it
// ever held. It lists the folder only (no file is opened). A message
// that left and comes back after a forget (restored from the archive, or
// a file a git checkout removed and wrote again just as the folder was
// listed) is reported again, as new: reported twice, never missed.
func (st *state) forget(b *box) {
	entries, _, err := st.entries(b)
	if err == nil {
		here := make(map[string]bool, len(entries))
		for _, e := range entries {
			here[e.ID] = true
		}
		for id := range b.seen {
			if !here[id] {
				delete(b.seen, id)
			}
		}
	}
	b.kept = len(b.seen) // after a failed listing too: the next try waits as long
}

func newBox(addr maildir.Address) *box {
	return &box{addr: addr, seen: map[string]bool{}, pending: map[string]time.Time{}, warned: map[string]bool{}}
}

func agentBox(name string) *box { return newBox(maildir.Address{Kind: maildir.KindAgent, Name: name}) }

func (st *state) abs(rel string) string { return filepath.Join(st.root, filepath.FromSlash(rel)) }

// kindDirs returns the folders whose children are watched boxes:
// state/mail, state/queue, state/channel, as needed. The set is fixed once
// the boxes named at start are known: boxes added later are mailboxes, and
// only with All, which includes state/mail from the start.
func kindDirs(all bool, boxes map[string]*box) []string {
	dirs := map[string]bool{}
	if all {
		dirs[maildir.MailDir] = true
	}
	for rel := range boxes {
		dirs[path.Dir(rel)] = true
	}
	return slices.Sorted(maps.Keys(dirs))
}

// addWatches watches the directories on the way to the boxes, then every
// watched box that exists. It goes from the top down, each watch in place
// before the next level is looked at: a directory created meanwhile is
// either there when looked at or reported by its parent's watch. While the
// root does not exist its parent is watched, to see it appear.
func (st *state) addWatches() error {
	for _, kindDir := range st.kinds {
		chain := []string{filepath.Dir(st.root), st.root, st.abs("state"), st.abs(kindDir)}
		for i, dir := range chain {
			if i == 0 && isDir(chain[1]) {
				continue // the root exists: its parent is not ours to watch
			}
			if !isDir(dir) {
				break // the watch on its parent will report it
			}
			if err := st.add(dir); err != nil {
				return err
			}
		}
	}
	if st.w.All {
		agents, err := st.w.Store.Agents()
		if err != nil {
			return err
		}
		for _, a := range agents {
			if rel := maildir.MailDir + "/" + a; st.boxes[rel] == nil {
				st.boxes[rel] = agentBox(a)
			}
		}
	}
	for rel := range st.boxes {
		if dir := st.abs(rel); isDir(dir) {
			if err := st.add(dir); err != nil {
				return err
			}
		}
	}
	return nil
}

// isDir reports whether path is a real directory, not a symlink to one.
func isDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

func (st *state) add(dir string) error {
	if st.watched[dir] {
		return nil
	}
	if err := st.fsw.Add(dir); err != nil {
		return limitError(err)
	}
	st.watched[dir] = true
	return nil
}

func (st *state) warn(err error) {
	if st.w.Warn != nil {
		st.w.Warn(err)
	}
}

func (st *state) run(ctx context.Context) {
	defer close(st.out)
	if !st.flush(ctx) { // what the first scan found
		return
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if st.fsw != nil {
		defer st.fsw.Close()
		events, errs = st.fsw.Events, st.fsw.Errors
	}
	// The ticker polls in poll mode, and otherwise retries the files that
	// did not parse yet and warns about those past their grace — only
	// while there are such files: an idle watcher wakes for nothing.
	every := st.w.Poll
	if every <= 0 {
		every = st.grace / 4
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	ticking := true
	for {
		if st.fsw != nil {
			switch waiting := st.waitingToParse(); {
			case waiting && !ticking:
				tick.Reset(every)
				ticking = true
			case !waiting && ticking:
				tick.Stop()
				ticking = false
			}
		}
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok { // fsnotify closed: nothing more will come
				st.warn(errors.New("watch: the file system notifications ended"))
				return
			}
			st.event(ctx, ev)
		case err, ok := <-errs:
			if !ok {
				st.warn(errors.New("watch: the file system notifications ended"))
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// Events were lost: look at everything again.
				st.warn(errors.New("watch: the kernel's event queue overflowed; rescanning every mailbox"))
				st.addWatches()
				st.scanAll(false)
			} else if err != nil {
				st.warn(fmt.Errorf("watch: %w", err))
			}
		case <-tick.C:
			if st.fsw == nil {
				st.scanAll(false)
			}
			st.retryPending()
		}
		if !st.flush(ctx) {
			return
		}
	}
}

// event handles one fsnotify event as a hint about the path it names.
func (st *state) event(ctx context.Context, ev fsnotify.Event) {
	if ev.Op == fsnotify.Chmod {
		return
	}
	rel, err := filepath.Rel(st.root, ev.Name)
	if err != nil {
		return
	}
	rel = filepath.ToSlash(rel)
	switch {
	case rel == "." || rel == "state" || slices.Contains(st.kinds, rel):
		// A directory on the way to the boxes appeared (or went): watch
		// down to the boxes, and look.
		st.addWatches()
		st.scanAll(false)
	case st.boxes[rel] != nil || st.w.All && path.Dir(rel) == maildir.MailDir && maildir.ValidAgent(path.Base(rel)):
		// A box's folder appeared.
		if st.boxes[rel] == nil {
			st.boxes[rel] = agentBox(path.Base(rel))
		}
		if ev.Has(fsnotify.Create) && isDir(ev.Name) {
			delete(st.watched, ev.Name) // a new directory needs a new watch
			if err := st.add(ev.Name); err != nil {
				st.warn(err)
			}
		}
		st.scan(st.boxes[rel], false)
	case st.boxes[path.Dir(rel)] != nil: // a file in a box
		st.check(st.boxes[path.Dir(rel)], path.Base(rel), false)
	}
	// Anything else (the root's parent, while the root does not exist, is
	// watched too) is not ours.
}

// scanAll scans every watched box.
func (st *state) scanAll(initial bool) {
	if st.w.All {
		if agents, err := st.w.Store.Agents(); err == nil {
			for _, a := range agents {
				rel := maildir.MailDir + "/" + a
				if st.boxes[rel] != nil {
					continue
				}
				st.boxes[rel] = agentBox(a)
				if st.fsw != nil && isDir(st.abs(rel)) {
					if err := st.add(st.abs(rel)); err != nil {
						st.warn(err)
					}
				}
			}
		}
	}
	for _, b := range st.boxes {
		st.scan(b, initial)
	}
	if initial && st.w.afterFirstScan != nil {
		st.w.afterFirstScan()
	}
}

// scan looks at every file of a mailbox it has not reported yet. The
// first look passes over the read messages without reading them where the
// folder index can vouch for them.
func (st *state) scan(b *box, initial bool) {
	if initial {
		read, err := st.w.Store.ReadNames(b.addr)
		if err != nil {
			st.warn(fmt.Errorf("watch: %w", err))
			return
		}
		for _, name := range read {
			b.seen[strings.TrimSuffix(name, ".json")] = true
		}
	}
	entries, skipped, err := st.entries(b)
	if err != nil {
		st.warn(fmt.Errorf("watch: %w", err))
		return
	}
	for _, sk := range skipped {
		id := strings.TrimSuffix(sk.Path[strings.LastIndex(sk.Path, "/")+1:], ".json")
		if !b.warned[id] && !b.seen[id] {
			b.warned[id] = true
			st.warn(sk)
		}
	}
	for _, e := range entries {
		st.check(b, e.ID+".json", initial)
	}
	if initial {
		// The first scan has seen what the folder holds, as a forget
		// would have: counting it as kept is what stops the first new
		// message from listing the whole folder again.
		b.kept = len(b.seen)
	}
}

// entries lists a box's folder.
func (st *state) entries(b *box) ([]maildir.Entry, []*maildir.SkipError, error) {
	if st.w.listed != nil {
		st.w.listed(b.addr)
	}
	return st.w.Store.Entries(b.addr, false)
}

// check looks at one file name in a mailbox.
func (st *state) check(b *box, name string, initial bool) {
	if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
		return
	}
	id := strings.TrimSuffix(name, ".json")
	if b.seen[id] {
		return
	}
	m, err := st.w.Store.Load(b.addr, id)
	switch {
	case errors.Is(err, maildir.ErrNotFound):
		delete(b.pending, id) // gone, or a name that was only passing through
		delete(b.warned, id)
	case errors.Is(err, maildir.ErrNotMessage):
		if !b.warned[id] {
			b.warned[id] = true
			st.warn(&maildir.SkipError{Path: b.addr.Dir(false) + "/" + name, Err: maildir.Reason(err)})
		}
	case err != nil:
		if _, ok := b.pending[id]; !ok {
			b.pending[id] = time.Now()
		}
	default:
		b.seen[id] = true
		delete(b.pending, id)
		delete(b.warned, id)
		if !initial && len(b.seen) > 2*b.kept+forgetSlack {
			st.forget(b) // not in the first scan, which sets kept when done
		}
		if st.w.remembered != nil {
			st.w.remembered(len(b.seen))
		}
		if initial && m.Read {
			return // old news: it was there, and read, before we started
		}
		st.queue = append(st.queue, Event{Box: b.addr, ID: id, Path: m.Path, Message: m, Initial: initial})
	}
}

// waitingToParse reports whether a file that did not parse yet is still
// within its grace (one past it was warned about, and is looked at again
// when it changes).
func (st *state) waitingToParse() bool {
	for _, b := range st.boxes {
		for id := range b.pending {
			if !b.warned[id] {
				return true
			}
		}
	}
	return false
}

// retryPending tries the files that did not parse yet again, and warns
// once about those still unparseable after the grace period.
func (st *state) retryPending() {
	for _, b := range st.boxes {
		for id, since := range b.pending {
			st.check(b, id+".json", false)
			if _, still := b.pending[id]; still && !b.warned[id] && time.Since(since) >= st.grace {
				b.warned[id] = true
				_, err := st.w.Store.Load(b.addr, id)
				st.warn(fmt.Errorf("skipping %s/%s.json until it changes: still not a message after %v: %w",
					b.addr.Dir(false), id, st.grace, maildir.Reason(err)))
			}
		}
	}
}

// flush sends the events found so far, oldest first. It returns false when
// ctx ended.
func (st *state) flush(ctx context.Context) bool {
	q := st.queue
	st.queue = nil
	slices.SortFunc(q, func(a, b Event) int {
		if c := a.Message.Timestamp.Compare(b.Message.Timestamp); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, ev := range q {
		select {
		case st.out <- ev:
		case <-ctx.Done():
			return false
		}
	}
	return true
}
