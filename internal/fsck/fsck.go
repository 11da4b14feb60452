// Package fsck checks a mailfs root and repairs what is safe to repair.
//
// It walks every folder of messages (mailboxes, archives, work queues,
// channels), the groups, and the nudge queues, through the same confined,
// no-follow directory handles as the rest of mailfs, and reports:
//
//   - dot-temps older than an hour (a writer died, or a script's temp);
//   - files set aside by an interrupted fallback rewrite (.mailfs-swap.*);
//   - nudge claims older than the orphan timeout (their drainer died);
//   - files that are not valid messages (corrupt, too large, duplicate keys,
//     invalid UTF-8, not one object, not named *.json) once they are older
//     than a grace period, since a script may still be writing them;
//   - entries that are not regular files (links, FIFOs, sockets, devices,
//     unexpected directories);
//   - the same id in a mailbox and in its archive;
//   - a message whose "to" does not match the folder it sits in;
//   - permissions wider than 0600 for files and 0700 for directories.
//
// Repair does only what loses nothing: it removes old dot-temps; puts a
// set-aside file back under its name (or, if the name is taken again,
// quarantines it); returns orphaned claims to their queue; moves invalid
// files into the folder's quarantine/, never replacing anything, with the
// reason in a file beside each; removes the mailbox name of a message that
// is also in the archive only when both names are the same file (an archive
// move interrupted in the link-and-unlink fallback); and tightens
// permissions. Everything else is reported for a person to decide.
package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// A Kind names what a [Finding] found.
type Kind string

// The kinds of finding.
const (
	Temp        Kind = "temp"         // an old dot-temp
	Swap        Kind = "swap"         // a file set aside by an interrupted rewrite
	Orphan      Kind = "orphan-claim" // a nudge claim whose drainer died
	Invalid     Kind = "invalid"      // a file that is not a valid message (or nudge, or group)
	NotRegular  Kind = "not-regular"  // a link, FIFO, socket, device or stray directory
	Duplicate   Kind = "duplicate"    // the same id in a mailbox and its archive
	Misdirected Kind = "misdirected"  // a "to" that does not match its folder
	Permissions Kind = "permissions"  // a mode wider than 0600 / 0700
)

// A Finding is one problem.
type Finding struct {
	Kind     Kind   `json:"kind"`
	Path     string `json:"path"`   // relative to the root
	Detail   string `json:"detail"` // what is wrong
	Repaired bool   `json:"repaired"`
	Action   string `json:"action,omitempty"` // what repair did, or why it did not
}

func (f *Finding) String() string {
	s := fmt.Sprintf("%s %s: %s", f.Kind, f.Path, f.Detail)
	if f.Action != "" {
		s += " (" + f.Action + ")"
	}
	return s
}

// Options tune a check. The zero value checks without repairing.
type Options struct {
	Repair      bool
	Now         func() time.Time // nil: time.Now
	TempAge     time.Duration    // dot-temps older than this are reported; 0: an hour
	Grace       time.Duration    // invalid files younger than this are let be; 0: a minute
	OrphanAfter time.Duration    // nudge claims older than this are orphans; 0: nudgeq's default
}

// Check checks the root at dir and, with opt.Repair, repairs. It returns
// every finding, repaired or not; the error is for a root it could not
// walk at all.
func Check(dir string, opt Options) ([]*Finding, error) {
	r, err := durable.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	store, err := maildir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	c := &checker{r: r, store: store, opt: opt, now: time.Now()}
	if opt.Now != nil {
		c.now = opt.Now()
	}
	if c.opt.TempAge == 0 {
		c.opt.TempAge = time.Hour
	}
	if c.opt.Grace == 0 {
		c.opt.Grace = time.Minute
	}
	if c.opt.OrphanAfter == 0 {
		c.opt.OrphanAfter = nudgeq.DefaultOrphanAfter
	}
	root, err := r.Open("")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	c.dirMode(root)
	if st, err := root.Lstat(".gitignore"); err == nil {
		c.fileMode(root, ".gitignore", st)
	}
	c.walk()
	return c.found, nil
}

type checker struct {
	r     *durable.Root
	store *maildir.Store // for what maildir knows how to read, such as groups
	opt   Options
	now   time.Time
	found []*Finding
}

func (c *checker) report(kind Kind, path, detail string) *Finding {
	f := &Finding{Kind: kind, Path: path, Detail: detail}
	c.found = append(c.found, f)
	return f
}

// fix runs a repair for f when repairing, and records the outcome: action,
// or what do put in f.Action when action is empty.
func (c *checker) fix(f *Finding, action string, do func() error) {
	if !c.opt.Repair {
		return
	}
	if err := do(); err != nil {
		f.Action = "not repaired: " + err.Error()
		return
	}
	f.Repaired = true
	if action != "" { // else do recorded what it did
		f.Action = action
	}
}

// walk visits every folder of the layout.
func (c *checker) walk() {
	for _, kind := range []struct {
		dir  string
		kind maildir.Kind
	}{{maildir.MailDir, maildir.KindAgent}, {maildir.QueueDir, maildir.KindQueue}, {maildir.ChannelDir, maildir.KindChannel}} {
		parent := c.open(kind.dir)
		if parent == nil {
			continue
		}
		parent.Each(func(e fs.DirEntry) {
			name := e.Name()
			switch {
			case strings.HasPrefix(name, "."):
				c.dotFile(parent, name)
			case kind.kind == maildir.KindChannel && strings.HasSuffix(name, ".json") && e.Type().IsRegular():
				c.channelConfig(parent, name)
			case !e.IsDir() || !maildir.ValidAgent(name):
				c.report(NotRegular, parent.Join(name), "not a folder named by an agent, queue or channel id")
			default:
				c.box(maildir.Address{Kind: kind.kind, Name: name})
			}
		})
		parent.Close()
	}
	c.groups()
	c.nudges()
}

// open opens a folder, reporting its mode; nil if it does not exist.
func (c *checker) open(rel string) *durable.Dir {
	d, err := c.r.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		c.report(NotRegular, rel, err.Error())
		return nil
	}
	c.dirMode(d)
	return d
}

// box checks one folder of messages and its archive.
func (c *checker) box(b maildir.Address) {
	d := c.open(b.Dir(false))
	if d == nil {
		return
	}
	defer d.Close()
	active := c.messages(b, d, false)
	a, err := d.Sub(maildir.ArchiveDir)
	if err != nil {
		return
	}
	defer a.Close()
	c.dirMode(a)
	c.messages(b, a, true)
	// The same id in both places.
	for name, st := range active {
		ast, err := a.Lstat(name)
		if err != nil {
			continue
		}
		f := c.report(Duplicate, d.Join(name), "the same id is in "+a.Join(name))
		if st.Dev == ast.Dev && st.Ino == ast.Ino {
			c.fix(f, "removed the mailbox name: both were one file, an archive move cut short", func() error {
				if err := d.Remove(name); err != nil {
					return err
				}
				return d.Sync()
			})
		} else if c.opt.Repair {
			f.Action = "not repaired: two different files; decide which to keep"
		}
	}
}

// messages checks the entries of one folder and returns its valid
// message files.
func (c *checker) messages(b maildir.Address, d *durable.Dir, archived bool) map[string]durable.Stat {
	valid := map[string]durable.Stat{}
	d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case e.IsDir() && !archived && (name == maildir.ArchiveDir || name == maildir.QuarantineDir):
		case !e.Type().IsRegular():
			c.report(NotRegular, d.Join(name), "never read as a message: "+typeOf(e.Type()))
		default:
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
			if why := c.validMessage(b, d, name); why != "" {
				c.invalid(d, name, st, why)
				return
			}
			valid[name] = st
		}
	})
	return valid
}

// validMessage says why name is not a valid message of box b, or "".
// A valid message whose "to" does not match is reported here too.
func (c *checker) validMessage(b maildir.Address, d *durable.Dir, name string) string {
	if !strings.HasSuffix(name, ".json") {
		return "not a message: the name does not end in .json"
	}
	data, _, err := d.ReadFile(name, maildir.MaxSize)
	if err != nil {
		return unwrap(err).Error()
	}
	if len(data) == 0 {
		return "empty file"
	}
	m, err := maildir.Parse(data)
	if err != nil {
		return err.Error()
	}
	if why := misdirected(b, m); why != "" {
		c.report(Misdirected, d.Join(name), why)
	}
	return ""
}

// misdirected says how m's "to" contradicts box b, or "".
func misdirected(b maildir.Address, m *maildir.Message) string {
	if m.To == "" {
		return "" // a script may leave it out
	}
	to, err := maildir.ParseAddress(m.To)
	if err != nil {
		return fmt.Sprintf("its to %q is not an address", m.To)
	}
	switch b.Kind {
	case maildir.KindAgent:
		if to.Kind == maildir.KindGroup || to.Kind == maildir.KindQueue || to.Kind == maildir.KindAgent && to.Name == b.Name {
			return "" // a group's copy, a claimed queue item, or its own
		}
		for _, cc := range m.CC {
			if a, err := maildir.ParseAddress(cc); err == nil && (a.Kind == maildir.KindGroup || a.Name == b.Name) {
				return ""
			}
		}
	default:
		if to == b || to.Kind == b.Kind && to.Name == b.Name {
			return ""
		}
	}
	return fmt.Sprintf("its to is %s, but it sits in %s", m.To, b)
}

// invalid reports a file that is not a valid message and, past the grace
// period, quarantines it when repairing.
func (c *checker) invalid(d *durable.Dir, name string, st durable.Stat, why string) {
	if c.now.Sub(st.ModTime) < c.opt.Grace {
		return // a script may still be writing it
	}
	f := c.report(Invalid, d.Join(name), why)
	c.fix(f, "", func() error {
		dest, err := c.quarantine(d, name, why)
		f.Action = "moved to " + dest
		return err
	})
}

// quarantine moves name into d's quarantine/ folder, never replacing a
// file, with the reason beside it. It returns where the file went.
func (c *checker) quarantine(d *durable.Dir, name, why string) (string, error) {
	q, err := c.r.MkdirAll(d.Join(maildir.QuarantineDir))
	if err != nil {
		return "", err
	}
	defer q.Close()
	dest := name
	for n := 2; ; n++ {
		err = d.Move(name, q, dest)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
		dest = fmt.Sprintf("%s.%d", name, n)
	}
	if err != nil {
		return "", err
	}
	reason := fmt.Sprintf("%s\nquarantined by mailfs fsck at %s from %s\n", why, c.now.UTC().Format(time.RFC3339), d.Join(name))
	if err := q.Create(dest+".reason", []byte(reason)); err != nil && !errors.Is(err, fs.ErrExist) {
		return q.Join(dest), err
	}
	if err := q.Sync(); err != nil {
		return q.Join(dest), err
	}
	return q.Join(dest), d.Sync()
}

// dotFile checks a dot-file: a temp, or a file set aside by a rewrite.
func (c *checker) dotFile(d *durable.Dir, name string) {
	st, err := d.Lstat(name)
	if err != nil {
		return
	}
	if orig, ok := durable.IsSwap(name); ok {
		f := c.report(Swap, d.Join(name), "set aside by a rewrite that did not finish")
		c.fix(f, "", func() error {
			if err := d.Move(name, d, orig); err == nil {
				f.Action = "put back as " + d.Join(orig)
				return d.Sync()
			} else if !errors.Is(err, fs.ErrExist) {
				return err
			}
			dest, err := c.quarantine(d, name, "an older copy of "+orig+", set aside by a rewrite that did not finish")
			f.Action = orig + " exists: moved to " + dest
			return err
		})
		return
	}
	if c.now.Sub(st.ModTime) < c.opt.TempAge || d.Path() == "" && name == ".gitignore" {
		return
	}
	if !st.Mode.IsRegular() {
		c.report(NotRegular, d.Join(name), "a hidden "+typeOf(st.Mode.Type()))
		return
	}
	f := c.report(Temp, d.Join(name), fmt.Sprintf("a temp file %v old", c.now.Sub(st.ModTime).Round(time.Minute)))
	c.fix(f, "removed", func() error { return d.Remove(name) })
}

// nudges checks the nudge queues: orphaned claims, files that are not
// nudges, temps, modes.
func (c *checker) nudges() {
	parent := c.open(nudgeq.Dir)
	if parent == nil {
		return
	}
	defer parent.Close()
	parent.Each(func(e fs.DirEntry) {
		if !e.IsDir() || !maildir.ValidAgent(e.Name()) {
			if !strings.HasPrefix(e.Name(), ".") {
				c.report(NotRegular, parent.Join(e.Name()), "not a queue named by an agent id")
			}
			return
		}
		q := c.open(parent.Join(e.Name()))
		if q == nil {
			return
		}
		c.nudgeFolder(q, true)
		if r, err := q.Sub("refused"); err == nil {
			c.dirMode(r)
			c.nudgeFolder(r, false)
			r.Close()
		}
		q.Close()
	})
}

func (c *checker) nudgeFolder(d *durable.Dir, nudges bool) {
	d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case e.IsDir() && (name == "refused" || name == maildir.QuarantineDir):
		case !e.Type().IsRegular():
			c.report(NotRegular, d.Join(name), "never read as a nudge: "+typeOf(e.Type()))
		default:
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
			if orig, at, ok := nudgeq.ParseClaim(name); ok {
				if c.now.Sub(at) >= c.opt.OrphanAfter {
					f := c.report(Orphan, d.Join(name), fmt.Sprintf("claimed %v ago by a drainer that did not finish", c.now.Sub(at).Round(time.Second)))
					c.fix(f, "returned to the queue as "+d.Join(orig), func() error { return d.Move(name, d, orig) })
				}
				return
			}
			if !nudges {
				return // refusal notes: small JSON the drain reads leniently
			}
			data, _, err := d.ReadFile(name, 1<<20)
			if err == nil {
				_, err = nudgeq.Parse(data)
			}
			if err != nil {
				c.invalid(d, name, st, unwrap(err).Error())
			}
		}
	})
}

// groups checks the group files.
func (c *checker) groups() {
	d := c.open(maildir.GroupDir)
	if d == nil {
		return
	}
	defer d.Close()
	d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case !e.Type().IsRegular():
			c.report(NotRegular, d.Join(name), "never read as a group: "+typeOf(e.Type()))
		default:
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
			if group, ok := strings.CutSuffix(name, ".json"); !ok || !maildir.ValidAgent(group) {
				c.report(Invalid, d.Join(name), "not a group: groups are <name>.json")
			} else if _, err := c.store.Group(group); err != nil {
				c.report(Invalid, d.Join(name), err.Error())
			}
		}
	})
}

func (c *checker) channelConfig(d *durable.Dir, name string) {
	if st, err := d.Lstat(name); err == nil {
		c.fileMode(d, name, st)
	}
}

// dirMode reports (and repairs) a directory mode wider than 0700.
func (c *checker) dirMode(d *durable.Dir) {
	st, err := d.Stat()
	if err != nil || st.Mode.Perm()&^durable.DirPerm == 0 {
		return
	}
	path := d.Path()
	if path == "" {
		path = "."
	}
	f := c.report(Permissions, path, fmt.Sprintf("mode %v, wider than %v", st.Mode.Perm(), durable.DirPerm))
	c.fix(f, "set to "+durable.DirPerm.String(), func() error { return d.SetMode(durable.DirPerm) })
}

// fileMode reports (and repairs) a file mode wider than 0600.
func (c *checker) fileMode(d *durable.Dir, name string, st durable.Stat) {
	if st.Mode.Perm()&^durable.Perm == 0 {
		return
	}
	f := c.report(Permissions, d.Join(name), fmt.Sprintf("mode %v, wider than %v", st.Mode.Perm(), durable.Perm))
	c.fix(f, "set to "+durable.Perm.String(), func() error { return d.Chmod(name, durable.Perm) })
}

func typeOf(t fs.FileMode) string {
	switch {
	case t&fs.ModeSymlink != 0:
		return "a symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeDevice != 0:
		return "a device"
	case t.IsDir():
		return "a directory"
	}
	return "not a regular file"
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
