// Package chipset opens the mailfs root, the ".chipset" directory, for the
// packages that keep files under it (maildir, nudgeq): lazily, so readers of
// a root that does not exist yet see nothing, and creating it with its
// .gitignore on the first write, whichever package writes first.
package chipset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
		// One open of the root's folder: the .gitignore, the record.
		d, err := r.root.Open("")
		if err != nil {
			return nil, err
		}
		defer d.Close()
		if err := ensureGitignore(d); err != nil {
			return nil, err
		}
		recorded, err := r.formatIn(d)
		if err != nil {
			return nil, err
		}
		if !recorded {
			if err := ensureFormat(d); err != nil {
				return nil, err
			}
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

// Linked opens the directory at rel, as Dir does, except that one
// element of rel may be a symbolic link to a directory, which is followed:
// its target is opened as a root of its own, with the same options and
// write guard, and whatever follows it in rel is opened below the target
// without following anything. It is for the one place mailfs wants a link
// below the root: an agent's nudge queue shared with Gas Town's folder for
// the agent. The directory keeps its path relative to this root (its
// [durable.Dir.Path] is rel, not "."), so that what a caller reports or
// opens again by that path is the same folder. A link to anything but a
// directory is an error; a directory that does not exist is (nil, nil).
func (r *Root) Linked(rel string) (*durable.Dir, error) {
	d, err := r.Dir(rel)
	if err == nil || !errors.Is(err, durable.ErrNotDir) {
		return d, err
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		at := strings.Join(parts[:i+1], "/")
		link := filepath.Join(r.path, filepath.FromSlash(at))
		st, lerr := os.Lstat(link)
		if lerr != nil {
			return nil, err
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		target, terr := filepath.EvalSymlinks(link)
		if terr != nil {
			return nil, fmt.Errorf("%s is a symbolic link that leads nowhere: %w", link, terr)
		}
		root, oerr := durable.OpenRoot(target, append(r.durableOpts(), durable.WithBase(at))...)
		if oerr != nil {
			return nil, oerr
		}
		defer root.Close()
		d, err := root.Open(strings.Join(parts[i+1:], "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return d, err
	}
	return nil, err
}

// OpenOther opens a directory that is not a mailfs root (Gas Town's town,
// git's directory, the hook's state folder) with the same confinement as
// a root: nothing below path is followed, no file open blocks. It has no
// format guard: what it holds is not in mailfs's format. opts are
// durable's test seams.
func OpenOther(path string, opts ...durable.Option) (*durable.Root, error) {
	return durable.OpenRoot(path, opts...)
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

// ErrDamagedFormat is returned (wrapped, naming the file) by a write to a
// root whose format record is there but is not one: empty, garbled, not a
// regular file. Every writer stops until it is repaired: fsck --repair
// rewrites it from what the tree holds, or says what a person must decide.
var ErrDamagedFormat = errors.New("the root's format record is damaged")

// Format reads the root's format record: the format the root is in (1
// when it has none, as before the record existed), or an error wrapping
// [ErrDamagedFormat] for a record that is not one. It reads the record
// afresh each time.
func (r *Root) Format() (int, error) {
	root, err := durable.OpenRoot(r.path, r.opts...)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	d, err := root.Open("")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(FormatFile, 256)
	if errors.Is(err, fs.ErrNotExist) {
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrDamagedFormat, err)
	}
	n, err := ParseFormat(data)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", ErrDamagedFormat, filepath.Join(r.path, FormatFile), err)
	}
	return n, nil
}

// formatOK says whether this mailfs may write to the root: yes when it has
// no format record yet (the first write makes one) or a record of a
// format it writes; ErrNewerFormat, naming both, when the record is newer;
// ErrDamagedFormat when it is not a record. A record, once read, is
// remembered.
func (r *Root) formatOK() error {
	r.fmu.Lock()
	known, err := r.fknown, r.ferr
	r.fmu.Unlock()
	if known {
		return err
	}
	root, err := durable.OpenRoot(r.path, r.opts...)
	if err != nil {
		return fmt.Errorf("reading the root's format record: %w", err)
	}
	defer root.Close()
	d, err := root.Open("")
	if err != nil {
		return fmt.Errorf("reading the root's format record: %w", err)
	}
	defer d.Close()
	_, err = r.formatIn(d)
	return err
}

// formatIn is formatOK with the root's directory d open: it reads the
// record there, once, and reports whether there was one.
func (r *Root) formatIn(d *durable.Dir) (recorded bool, err error) {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	if r.fknown {
		return true, r.ferr
	}
	path := filepath.Join(r.path, FormatFile)
	data, _, err := d.ReadFile(FormatFile, 256)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	r.fknown = true
	var n int
	if err == nil {
		n, err = ParseFormat(data)
	}
	switch {
	case err != nil:
		r.ferr = fmt.Errorf("%w: %s: %w; run mailfs fsck --repair", ErrDamagedFormat, path, err)
	case n > Format:
		r.ferr = fmt.Errorf("%w: %s is mailfs format %d, and this mailfs writes format %d; install a newer mailfs to write here (it still reads what it can; see docs/upgrading.md)", ErrNewerFormat, r.path, n, Format)
	}
	return true, r.ferr
}

// RepairFormat rewrites a damaged format record as this mailfs's format,
// for fsck, which has judged that the tree holds nothing of a newer one.
// It replaces only a record that is still damaged (a record that reads
// as one, whatever its format, is left as it is and nil returned).
func (r *Root) RepairFormat() error {
	if _, err := r.Format(); !errors.Is(err, ErrDamagedFormat) {
		return err
	}
	root, err := durable.OpenRoot(r.path, r.opts...) // unguarded: the guard refuses while it is damaged
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := root.Open("")
	if err != nil {
		return err
	}
	defer d.Close()
	if st, err := d.Lstat(FormatFile); err == nil && !st.Mode.IsRegular() {
		if err := d.Remove(FormatFile); err != nil {
			return err
		}
	}
	if err := d.Replace(FormatFile, formatRecord()); err != nil {
		return err
	}
	r.fmu.Lock()
	r.fknown, r.ferr = false, nil
	r.fmu.Unlock()
	return nil
}

func formatRecord() []byte { return fmt.Appendf(nil, "mailfs format %d\n", Format) }

func ensureGitignore(d *durable.Dir) error {
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
func ensureFormat(d *durable.Dir) error {
	if _, err := d.Lstat(FormatFile); err == nil {
		return nil
	}
	err := d.Create(FormatFile, formatRecord())
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
