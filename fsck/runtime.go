package fsck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// once checks the records of keyed sends (runtime/once): each must be a
// regular file that reads as a record. One that does not is reported,
// never repaired: whether its send was delivered is unknown, and a retry
// of its key is refused until a person, who can look, removes it
// (removing it would let a retry send a second time).
func (c *checker) once() {
	d := c.open(maildir.OnceDir)
	if d == nil {
		return
	}
	defer d.Close()
	c.onceFolder(d, true)
}

func (c *checker) onceFolder(d *durable.Dir, top bool) {
	var subs []string
	sub := func(name string) bool {
		if top && maildir.ValidAgent(name) {
			subs = append(subs, name) // a sender's records, from before records were per root
			return true
		}
		return false
	}
	c.sideFiles(d, "a keyed send's record", "; a send with its key is refused until a person removes it", sub, func(name string, st durable.Stat) {
		data, _, err := d.ReadFile(name, maildir.MaxOnceRecord)
		if errors.Is(err, fs.ErrNotExist) {
			return // pruned since it was listed
		}
		if err == nil {
			err = maildir.CheckOnceRecord(data)
		}
		if err != nil && c.now.Sub(st.ModTime) >= c.opt.Grace {
			f := c.report(Invalid, d.Join(name), "a keyed send's record that cannot be read ("+maildir.Reason(err).Error()+"): whether its send was delivered is unknown, and a retry of its key is refused")
			f.Action = "not repaired: look for the send's copies (mailfs search); if none arrived, remove the record"
		}
	})
	for _, sub := range subs {
		if sd, err := d.Sub(sub); err == nil {
			c.dirMode(sd)
			c.onceFolder(sd, false)
			sd.Close()
		}
	}
}

// index checks the readers' caches (runtime/index): anything there that
// is not a regular file (a FIFO at a send's adds note, a link) is
// reported and, being a cache, removed by --repair; what the files hold
// is checked by their readers, who drop what does not check out.
func (c *checker) index() {
	d := c.open(maildir.IndexDir)
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
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			f := c.report(NotRegular, d.Join(name), "in place of a cache file: "+maildir.TypeName(e.Type())+"; readers and senders pass it by")
			dir := d.Path()
			c.fix(f, "removed (a cache: the next reader makes it again)", func() error {
				return c.underLocks([]string{dir}, func(open map[string]*durable.Dir) error {
					dd := open[dir]
					if err := still(dd, name, st); err != nil {
						return err
					}
					if err := dd.Remove(name); err != nil {
						return err
					}
					return dd.Sync()
				})
			})
		}
	})
}

// audit checks the audit log (state/audit): each entry one JSON object.
// One that does not parse is quarantined like a message (the log reads
// past it); anything not a regular file is reported.
func (c *checker) audit() {
	d := c.open(maildir.AuditDir)
	if d == nil {
		return
	}
	defer d.Close()
	quarantine := func(name string) bool { return name == maildir.QuarantineDir }
	c.sideFiles(d, "an audit entry", "; mailfs audit fails until a person removes it", quarantine, func(name string, st durable.Stat) {
		data, _, err := d.ReadFile(name, 64<<10)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		var entry maildir.AuditEntry
		if err == nil && !strings.HasSuffix(name, ".json") {
			err = errors.New("not an audit entry: entries are <id>.json")
		}
		if err == nil {
			err = json.Unmarshal(data, &entry)
		}
		if err != nil {
			c.invalid(d, name, st, "not an audit entry: "+maildir.Reason(err).Error())
		}
	})
}

// gone checks the homes' tombstones (state/gone/<host>/<day>/<time>.txt,
// or <day>.txt from an older mailfs): each
// line a path under state/. A damaged one is reported, never repaired:
// only its host's sync writes it, and removing one could let a deleted
// message come back.
func (c *checker) gone() {
	d := c.open(gitsync.GoneDir)
	if d == nil {
		return
	}
	defer d.Close()
	var hosts []string
	d.Each(func(e fs.DirEntry) {
		switch name := e.Name(); {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case e.IsDir():
			hosts = append(hosts, name)
		default:
			c.report(NotRegular, d.Join(name), "not a host's folder of tombstones")
		}
	})
	for _, host := range hosts {
		h, err := d.Sub(host)
		if err != nil {
			continue
		}
		c.dirMode(h)
		var days []string
		h.Each(func(e fs.DirEntry) {
			name := e.Name()
			if e.IsDir() && !strings.HasPrefix(name, ".") {
				if _, err := time.Parse(time.DateOnly, name); err == nil {
					days = append(days, name) // a day's batches, one a burying sync
					return
				}
			}
			c.tombstoneFile(h, name, e, "")
		})
		for _, day := range days {
			b, err := h.Sub(day)
			if err != nil {
				continue
			}
			c.dirMode(b)
			b.Each(func(e fs.DirEntry) { c.tombstoneFile(b, e.Name(), e, day) })
			b.Close()
		}
		h.Close()
	}
}

// tombstoneFile checks one file of tombstones in d: a whole day's
// (<day>.txt, an older mailfs's form) where day is "", else one batch of
// that day (<day>/<time>.txt).
func (c *checker) tombstoneFile(d *durable.Dir, name string, e fs.DirEntry, day string) {
	if strings.HasPrefix(name, ".") {
		c.dotFile(d, name)
		return
	}
	if !e.Type().IsRegular() {
		c.report(NotRegular, d.Join(name), "never read as tombstones: "+maildir.TypeName(e.Type()))
		return
	}
	st, err := d.Lstat(name)
	if err != nil {
		return
	}
	c.fileMode(d, name, st)
	data, _, err := d.ReadFile(name, 64<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if why := tombstonesWhy(name, day, data, err); why != "" {
		c.report(Invalid, d.Join(name), why+"; only its host's sync writes it: reported, not repaired (removing it could let a deleted message come back)")
	}
}

// tombstonesWhy says why a file of tombstones is not one, or "": a day's
// file (day "") or one of a day's batches.
func tombstonesWhy(name, day string, data []byte, err error) string {
	if err != nil {
		return maildir.Reason(err).Error()
	}
	base, ok := strings.CutSuffix(name, ".txt")
	if day == "" {
		if _, perr := time.Parse(time.DateOnly, base); !ok || perr != nil {
			return "not a day of tombstones: they are <YYYY-MM-DD>/<time>.txt, or <YYYY-MM-DD>.txt from an older mailfs"
		}
	} else if !ok || base == "" {
		return "not a batch of tombstones: they are <YYYY-MM-DD>/<time>.txt"
	}
	if !utf8.Valid(data) {
		return "not UTF-8"
	}
	if len(data) == 0 {
		return ""
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if !strings.HasPrefix(line, "state/") || strings.Contains(line, "..") || !strings.HasSuffix(line, ".json") {
			return fmt.Sprintf("line %d is not a message's path: %q", i+1, line)
		}
	}
	return ""
}

// sideFiles walks the side files of one folder, d: dot-files go to
// dotFile; a folder dir keeps (nil: none) is passed over; anything else
// that is not a regular file is reported as never read as what (with
// after, if any, added); each regular file's mode is checked and then
// it is handed to check with its stat. A file gone between the listing and
// its stat is skipped: it moved, which is no finding.
func (c *checker) sideFiles(d *durable.Dir, what, after string, dir func(name string) bool, check func(name string, st durable.Stat)) {
	d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case e.IsDir() && dir != nil && dir(name):
		case !e.Type().IsRegular():
			c.report(NotRegular, d.Join(name), "never read as "+what+": "+maildir.TypeName(e.Type())+after)
		default:
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
			check(name, st)
		}
	})
}
