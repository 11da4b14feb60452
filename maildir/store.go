package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

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

// gitignore keeps git away from the ephemeral parts of the tree.
const gitignore = `# Written by mailfs. Commit state/; never runtime/ or in-flight temps.
/runtime/
.*
!/.gitignore
`

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

	path string

	mu      sync.Mutex
	root    *durable.Root
	checked bool      // the layout was ensured for writing
	last    time.Time // the latest stamp given out, see stamp
}

// Open returns the store rooted at dir (the ".chipset" directory itself).
// dir need not exist yet.
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Store{path: abs}
	if _, err := s.open(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return s, nil
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
func (s *Store) Dir() string { return s.path }

// Close releases the store's descriptors.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		return nil
	}
	err := s.root.Close()
	s.root = nil
	return err
}

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

func (s *Store) open(create bool) (*durable.Root, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == nil {
		r, err := durable.OpenRoot(s.path)
		if errors.Is(err, fs.ErrNotExist) && create {
			r, err = s.create()
		}
		if err != nil {
			return nil, err
		}
		s.root = r
	}
	if create && !s.checked {
		if err := ensureGitignore(s.root); err != nil {
			return nil, err
		}
		s.checked = true
	}
	return s.root, nil
}

// create makes the root directory itself (not its parents: a mistyped
// --root should fail, not grow a tree) and makes its entry durable.
func (s *Store) create() (*durable.Root, error) {
	parent := filepath.Dir(s.path)
	if err := os.Mkdir(s.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot create root %s: %s does not exist", s.path, parent)
		}
		return nil, err
	}
	if err := os.Chmod(s.path, durable.DirPerm); err != nil {
		return nil, err
	}
	if p, err := os.Open(parent); err == nil {
		err = p.Sync()
		p.Close()
		if err != nil {
			return nil, err
		}
	}
	return durable.OpenRoot(s.path)
}

func ensureGitignore(r *durable.Root) error {
	d, err := r.Open("")
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Lstat(".gitignore"); err == nil {
		return nil
	}
	if err := d.Create(".gitignore", []byte(gitignore)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
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

// mailbox returns the root-relative path of agent's mailbox, or of its
// archive folder.
func mailbox(agent string, archived bool) string {
	if archived {
		return MailDir + "/" + agent + "/" + ArchiveDir
	}
	return MailDir + "/" + agent
}

// openFolder opens a mailbox folder for reading. A folder (or root) that
// does not exist yet is reported as (nil, nil): an empty mailbox.
func (s *Store) openFolder(agent string, archived bool) (*durable.Dir, error) {
	r, err := s.open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := r.Open(mailbox(agent, archived))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d, err
}
