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

	root *chipset.Root

	mu   sync.Mutex
	last time.Time // the latest stamp given out, see stamp
}

// Open returns the store rooted at dir (the ".chipset" directory itself).
// dir need not exist yet.
func Open(dir string) (*Store, error) {
	r, err := chipset.New(dir)
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

// Init creates the root, its state/mail directory and its .gitignore. It
// is idempotent, and never replaces an existing .gitignore.
func (s *Store) Init() error {
	r, err := s.open(true)
	if err != nil {
		return err
	}
	d, err := r.MkdirAll(MailDir)
	if err != nil {
		return err
	}
	return d.Close()
}

func (s *Store) open(create bool) (*durable.Root, error) { return s.root.Open(create) }

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
// names an agent and also an existing group, queue or channel.
var ErrAmbiguousAddress = errors.New("ambiguous address")

// Resolve parses addr as [ParseAddress] does, and refuses a bare name that
// could mean two things: an agent, and an existing group, queue or channel
// of the same name. The error asks for a prefix. Every command that takes
// an address resolves it here.
func (s *Store) Resolve(addr string) (Address, error) {
	a, err := ParseAddress(addr)
	if err != nil || a.explicit || a.Kind != KindAgent {
		return a, err
	}
	var also []string
	for _, other := range []Address{{Kind: KindGroup, Name: a.Name}, {Kind: KindQueue, Name: a.Name}, {Kind: KindChannel, Name: a.Name}} {
		if s.exists(other) {
			also = append(also, other.String())
		}
	}
	if len(also) > 0 {
		return Address{}, fmt.Errorf("%w %q: it names an agent, and also %s; write agent:%s or %s",
			ErrAmbiguousAddress, addr, strings.Join(also, " and "), a.Name, strings.Join(also, " or "))
	}
	return a, nil
}

// exists reports whether the group, queue or channel a exists.
func (s *Store) exists(a Address) bool {
	r, err := s.open(false)
	if err != nil {
		return false
	}
	rel := a.Dir(false)
	switch a.Kind {
	case KindGroup:
		rel = GroupDir + "/" + a.Name + ".json"
	case KindChannel:
		rel = channelConfig(a.Name)
	}
	_, err = r.OS().Lstat(rel)
	return err == nil
}

// box resolves addr to a folder of messages: an agent, a queue or a
// channel, not a group.
func (s *Store) box(addr string) (Address, error) {
	a, err := s.Resolve(addr)
	if err == nil && a.Kind == KindGroup {
		err = fmt.Errorf("%w %q: a group holds no messages; name one of its members", ErrInvalidAddress, addr)
	}
	return a, err
}

// openFolder opens a box's folder (or its archive) for reading. A folder
// (or root) that does not exist yet is reported as (nil, nil): empty.
func (s *Store) openFolder(b Address, archived bool) (*durable.Dir, error) {
	return s.root.Dir(b.Dir(archived))
}
