// Package chipset opens the mailfs root, the ".chipset" directory, for the
// packages that keep files under it (maildir, nudgeq): lazily, so readers of
// a root that does not exist yet see nothing, and creating it with its
// .gitignore on the first write, whichever package writes first.
package chipset

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/mailfs/mailfs/internal/durable"
)

// Gitignore is written at the top of every root mailfs creates: state/ is
// committed, runtime/ and in-flight temps (every dot-file) are not.
const Gitignore = `# Written by mailfs. Commit state/; never runtime/ or in-flight temps.
/runtime/
.*
!/.gitignore
`

// Format is the version of the on-disk format this mailfs writes, and
// FormatFile the file at the top of a root that records the format the
// root is in (committed with it: every host of a town sees it). A root
// without one is format 1, the format of every mailfs before the file.
const (
	Format     = 1
	FormatFile = "format"
)

// ErrNewerFormat is returned by a write to a root in a format newer than
// this mailfs writes: it would not know what the newer one keeps, and
// could break it. Reading goes on: what it can read, it reads.
var ErrNewerFormat = errors.New("the root is in a newer format than this mailfs writes")

// A Root is a mailfs root that is opened on first use. It is safe for
// concurrent use.
type Root struct {
	path string

	opts []durable.Option // how the durable root is opened, each time

	mu      sync.Mutex
	root    *durable.Root
	checked bool // the .gitignore and the format record are known to exist

	fmu    sync.Mutex
	fknown bool  // the format record was read
	ferr   error // what it said: nil, or why this mailfs must not write
}

// New returns the root at dir, made absolute. dir need not exist. opts
// are durable's test seams, given to the durable root whenever it is
// opened.
func New(dir string, opts ...durable.Option) (*Root, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return &Root{path: abs, opts: opts}, nil
}

// Path returns the absolute path of the root.
func (r *Root) Path() string { return r.path }

// Open returns the open root. With create false, a root that does not exist
// gives an error matching fs.ErrNotExist. With create true it is made
// (the directory itself, mode 0700, not its parents: a mistyped path fails
// rather than growing a tree), and so is its .gitignore if missing.
func (r *Root) Open(create bool) (*durable.Root, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root == nil {
		root, err := durable.OpenRoot(r.path, r.durableOpts()...)
		if errors.Is(err, fs.ErrNotExist) && create {
			root, err = r.create()
		}
		if err != nil {
			return nil, err
		}
		r.root = root
	}
	if create && !r.checked {
		if err := ensureGitignore(r.root); err != nil {
			return nil, err
		}
		if err := r.formatOK(); err != nil {
			return nil, err
		}
		if err := ensureFormat(r.root); err != nil {
			return nil, err
		}
		r.checked = true
	}
	return r.root, nil
}

// Dir opens the directory rel below the root for reading; a directory (or
// root) that does not exist yet is (nil, nil).
func (r *Root) Dir(rel string) (*durable.Dir, error) {
	root, err := r.Open(false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return d, err
}

// Linked opens the directory at rel, as Dir does, except that when rel
// itself (its last element, nothing above it) is a symbolic link to a
// directory, the link is followed: its target is opened as a root of its
// own, with the same options. It is for the one place mailfs wants a link
// below the root: an agent's nudge queue shared with Gas Town's folder for
// the agent. A link to anything but a directory is an error.
func (r *Root) Linked(rel string) (*durable.Dir, error) {
	d, err := r.Dir(rel)
	if err == nil || !errors.Is(err, durable.ErrNotDir) {
		return d, err
	}
	link := filepath.Join(r.path, filepath.FromSlash(rel))
	if st, lerr := os.Lstat(link); lerr != nil || st.Mode()&fs.ModeSymlink == 0 {
		return nil, err
	}
	target, terr := filepath.EvalSymlinks(link)
	if terr != nil {
		return nil, fmt.Errorf("%s is a symbolic link that leads nowhere: %w", link, terr)
	}
	root, oerr := durable.OpenRoot(target, r.opts...)
	if oerr != nil {
		return nil, oerr
	}
	defer root.Close()
	return root.Open(".")
}

// Close releases the root's descriptors; a later use opens it again.
func (r *Root) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root == nil {
		return nil
	}
	err := r.root.Close()
	r.root = nil
	return err
}

func (r *Root) create() (*durable.Root, error) {
	parent := filepath.Dir(r.path)
	if err := os.Mkdir(r.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot create root %s: %s does not exist", r.path, parent)
		}
		return nil, err
	}
	if err := os.Chmod(r.path, durable.DirPerm); err != nil {
		return nil, err
	}
	if p, err := os.Open(parent); err == nil { // make the new root's name durable
		err = p.Sync()
		p.Close()
		if err != nil {
			return nil, err
		}
	}
	return durable.OpenRoot(r.path, r.durableOpts()...)
}

// durableOpts are the options the durable root is opened with: the
// caller's, and the format check before every write.
func (r *Root) durableOpts() []durable.Option {
	return append(slices.Clone(r.opts), durable.WithWriteGuard(r.formatOK))
}

// formatOK says whether this mailfs may write to the root: yes when it has
// no format record yet (the first write makes one) or a record of a
// format it writes; ErrNewerFormat, naming both, when the record is newer.
// A record, once read, is remembered.
func (r *Root) formatOK() error {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	if r.fknown {
		return r.ferr
	}
	path := filepath.Join(r.path, FormatFile)
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the root's format record: %w", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, 256))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the root's format record: %w", err)
	}
	r.fknown = true
	n, err := ParseFormat(data)
	switch {
	case err != nil:
		r.ferr = fmt.Errorf("%s: %w", path, err)
	case n > Format:
		r.ferr = fmt.Errorf("%w: %s is mailfs format %d, and this mailfs writes format %d; install a newer mailfs to write here (it still reads what it can; see docs/upgrading.md)", ErrNewerFormat, r.path, n, Format)
	}
	return r.ferr
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
	if err := d.Create(".gitignore", []byte(Gitignore)); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// ensureFormat records the format in a root that has no record, before
// the first write (a Create of the record is itself checked by formatOK).
func ensureFormat(r *durable.Root) error {
	d, err := r.Open("")
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.Lstat(FormatFile); err == nil {
		return nil
	}
	err = d.Create(FormatFile, fmt.Appendf(nil, "mailfs format %d\n", Format))
	if errors.Is(err, fs.ErrExist) {
		return nil // another writer recorded it first
	}
	return err
}

// ParseFormat reads a format file: "mailfs format N".
func ParseFormat(data []byte) (int, error) {
	var n int
	if _, err := fmt.Sscanf(string(data), "mailfs format %d\n", &n); err != nil || n < 1 {
		return 0, fmt.Errorf("not a mailfs format record (want \"mailfs format N\"): %q", data)
	}
	return n, nil
}
