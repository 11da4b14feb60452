package maildir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// The layout below the root (SPEC §1).
const (
	// RootName is the name of the root directory that [FindRoot] looks for.
	RootName = ".chipset"
	// MailDir holds one directory per agent: the mailboxes.
	MailDir = "state/mail"
	// ArchiveDir is the folder inside each mailbox that holds archived mail.
	ArchiveDir = "archive"
)

// A Store is a mailfs root: the ".chipset" directory. Its methods are safe
// for concurrent use by many goroutines, and any number of processes may use
// the same root at once; SPEC §4 lists what they are promised.
//
// The root need not exist: readers see empty mailboxes, and the first write
// creates it (with its .gitignore), as [Store.Init] does.
type Store struct {
	// Now returns the current time, for ids and timestamps. Nil means
	// time.Now. Set it before the Store is used.
	Now func() time.Time

	// Warn, if not nil, is called for each file a reader skips, with a
	// [*SkipError] saying which and why; the file is left where it is. It
	// is called from the goroutine that called the reading method. Set it
	// before the Store is used.
	Warn func(error)

	// Host, if not empty, is this host's name for the home rules (SPEC
	// §10), overriding the one in runtime/host: see [Store.LocalHost].
	// Set it before the Store is used.
	Host string

	// NoIndex turns the folder index (see [IndexDir]) off: every reader
	// of unread mail then reads every file of the folder, and readers
	// write nothing, not even under runtime/index (the clock is taken
	// as coarse, unprobed). Set it before the Store is used.
	NoIndex bool

	// Verbatim keeps agent addresses apart exactly as written, as Gas City
	// does, instead of folding them as Gas Town does: each distinct
	// address has its own mailbox (see [VerbatimMailbox]) and messages
	// record addresses as given. The Gas City provider sets it. Set it
	// before the Store is used.
	Verbatim bool

	root *chipset.Root

	racy     time.Duration // RacyWindow when 0; none when negative (tests)
	noNotes  bool          // senders' notes not followed (tests)
	noteFrom int64         // noteFromSize when 0; every folder when negative (tests)

	clock  folderindex.Clock   // the file system's clock, see fineClock
	wit    folderindex.Witness // what a create raises in a watched folder, see createNoted
	coarse bool                // tests: take every clock as coarse

	mu   sync.Mutex
	last time.Time // the latest stamp given out, see stamp
}

// Open returns the store rooted at dir (the ".chipset" directory itself).
// dir need not exist yet.
func Open(dir string) (*Store, error) { return open(dir) }

// open is Open with durable's test seams (see export_test.go).
func open(dir string, opts ...durable.Option) (*Store, error) {
	r, err := chipset.New(dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Store{root: r}, nil
}

// FindRoot returns the root to use when none is given (SPEC §1): the
// nearest ".chipset" directory in dir or one of its ancestors, else
// dir/.chipset.
func FindRoot(dir string) string {
	for d := dir; ; {
		p := filepath.Join(d, RootName)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return filepath.Join(dir, RootName)
		}
		d = parent
	}
}

// Dir returns the absolute path of the root.
func (s *Store) Dir() string { return s.root.Path() }

// Close releases the store's descriptors.
func (s *Store) Close() error { return s.root.Close() }

// Root returns the store's guarded root, opened once, for the packages
// that keep files of their own below it (hooks, live, escalations, sync).
// It is the store's: callers must not Close it, nor what its Open returns.
func (s *Store) Root() *chipset.Root { return s.root }

// Init creates the root, its state/mail directory and its .gitignore. It
// is idempotent, and never replaces an existing .gitignore.
func (s *Store) Init() error {
	d, err := s.mkdir(MailDir)
	if err != nil {
		return err
	}
	return d.Close()
}

func (s *Store) open(create bool) (*durable.Root, error) { return s.root.Open(create) }

// mkdir opens the folder rel below the root for writing, making it (and
// the root, with its .gitignore) if missing.
func (s *Store) mkdir(rel string) (*durable.Dir, error) {
	r, err := s.open(true)
	if err != nil {
		return nil, err
	}
	return r.MkdirAll(rel)
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) warn(path string, err error) {
	if s.Warn != nil {
		s.Warn(&SkipError{Path: path, Err: err})
	}
}

// ErrAmbiguousAddress is returned by [Store.Resolve] for a bare name that
// names two existing things: an agent's mailbox and a group, queue or
// channel, or two of those.
var ErrAmbiguousAddress = errors.New("maildir: ambiguous address")

// Resolve parses addr as [ParseAddress] does and decides what a bare name
// means: the one thing of that name that exists (a mailbox, a group, a
// queue or a channel), else the agent of that name, whose mailbox the first
// delivery creates. A bare name is ambiguous only when two things of that
// name exist; the error says how to write each. Prefixed addresses are
// taken as written. Every command that takes an address resolves it here.
func (s *Store) Resolve(addr string) (Address, error) {
	if s.Verbatim && !strings.HasPrefix(addr, "@") && !strings.HasPrefix(addr, "queue:") && !strings.HasPrefix(addr, "channel:") {
		// Gas City's addresses are agents, each as written.
		name, err := s.agentOf(addr)
		return Address{Kind: KindAgent, Name: name}, err
	}
	a, explicit, err := parseAddress(addr)
	if err != nil || explicit {
		return a, err
	}
	var found []Address
	for _, k := range []Kind{KindAgent, KindGroup, KindQueue, KindChannel} {
		b := Address{Kind: k, Name: a.Name}
		if s.exists(b) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return Address{Kind: KindAgent, Name: a.Name}, nil
	case 1:
		return found[0], nil
	}
	written := make([]string, len(found))
	for i, f := range found {
		written[i] = f.Qualified()
	}
	return Address{}, fmt.Errorf("%w %q: it names %s; write %s",
		ErrAmbiguousAddress, addr, describe(found), strings.Join(written, " or "))
}

// describe lists what the addresses are: "the agent deacon and the group
// @deacon".
func describe(list []Address) string {
	parts := make([]string, len(list))
	for i, a := range list {
		parts[i] = "the " + a.Kind.String() + " " + a.String()
	}
	return strings.Join(parts, " and ")
}

// Exists reports whether the thing a names exists: an agent's mailbox, a
// group, a queue or a channel.
func (s *Store) Exists(a Address) bool { return s.exists(a) }

// exists reports whether the thing a names exists: an agent's mailbox, a
// group's file, a queue's folder or a channel's configuration. It looks
// through the root's no-follow walk: a symbolic link is not a mailbox.
func (s *Store) exists(a Address) bool {
	parent, name, dir := MailDir, a.Name, true
	switch a.Kind {
	case KindGroup:
		parent, name, dir = GroupDir, a.Name+".json", false
	case KindQueue:
		parent = QueueDir
	case KindChannel:
		parent, name, dir = ChannelDir, a.Name+".json", false
	}
	d, err := s.root.Dir(parent)
	if d == nil || err != nil {
		return a.Kind == KindQueue && s.homed(a)
	}
	defer d.Close()
	st, err := d.Lstat(name)
	if err != nil {
		// git keeps no empty folders: on another host, an empty queue
		// exists by its home record.
		return a.Kind == KindQueue && s.homed(a)
	}
	if dir {
		return st.Mode.IsDir()
	}
	return st.Mode.IsRegular()
}

// taken returns an error wrapping [ErrNameTaken] when a group, queue or
// channel of kind may not be called name: something else has that name.
func (s *Store) taken(kind Kind, name string) error {
	var found []Address
	for _, k := range []Kind{KindAgent, KindGroup, KindQueue, KindChannel} {
		if b := (Address{Kind: k, Name: name}); k != kind && s.exists(b) {
			found = append(found, b)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return fmt.Errorf("%w: a %s cannot be called %q: %s exists already", ErrNameTaken, kind, name, describe(found))
}

// check validates b, an address given to a method that reads or changes a
// folder of messages: a valid name (an Address built by hand is checked
// too, so no name can lead outside the mail tree), a kind that holds
// messages (not a group), and, for a queue or a channel, one that exists.
// Addresses are resolved once, at the edge ([Store.Resolve],
// [ParseMailbox]); check touches the disk only for queues and channels.
func (s *Store) check(b Address) error {
	if !ValidAgent(b.Name) {
		if b.Kind == KindAgent {
			return fmt.Errorf("%w %q: not a canonical agent id (see ParseAgent)", ErrInvalidAddress, b.Name)
		}
		return &NameError{Kind: b.Kind, Name: b.Name, Why: "not a canonical name"}
	}
	switch b.Kind {
	case KindAgent:
		return nil
	case KindGroup:
		return fmt.Errorf("%w %s: a group holds no messages; name one of its members", ErrWrongKind, b)
	case KindQueue, KindChannel:
		return s.mustExist(b)
	}
	return fmt.Errorf("%w: unknown kind %d", ErrWrongKind, b.Kind)
}

// mustExist returns nil if the queue or channel a exists, else an error
// wrapping [ErrNoQueue] or [ErrNoChannel] that names the ones that do.
func (s *Store) mustExist(a Address) error {
	if s.exists(a) {
		return nil
	}
	sentinel, create := ErrNoQueue, "queue create"
	if a.Kind == KindChannel {
		if err := s.malformedChannel(a.Name); err != nil {
			return err
		}
		sentinel, create = ErrNoChannel, "channel create"
	}
	names, _ := s.names(a.Kind)
	have := "there are none"
	if len(names) > 0 {
		for i, n := range names {
			names[i] = Address{Kind: a.Kind, Name: n}.String()
		}
		have = "there are " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%w %s (%s; \"mailfs %s %s\" creates it)", sentinel, a, have, create, a.Name)
}

// openFolder opens a box's folder (or its archive) for reading. A folder
// (or root) that does not exist yet is reported as (nil, nil): empty.
func (s *Store) openFolder(b Address, archived bool) (*durable.Dir, error) {
	return s.root.Dir(b.Dir(archived))
}

// AddAgent makes agent's mailbox, empty, if it has none: the agent is then
// known (it is listed, patterns of groups match it, a send to it is no
// first send). It reports whether the mailbox was made now. An empty
// folder is not kept by git: on a town of several machines the agent is
// known on the others by its home record ("mailfs agent add" claims it on
// a named host; [Store.Agents] lists homed agents), or its first mail.
func (s *Store) AddAgent(agent string) (made bool, err error) {
	name, err := ParseAgent(agent)
	if err != nil {
		return false, err
	}
	b := Address{Kind: KindAgent, Name: name}
	if s.exists(b) {
		return false, nil
	}
	d, err := s.mkdir(b.Dir(false))
	if err != nil {
		return false, err
	}
	return true, d.Close()
}
