package fsck

import (
	"errors"
	"io/fs"
	"strings"

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
	d.Each(func(e fs.DirEntry) {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "."):
			c.dotFile(d, name)
		case top && e.IsDir() && maildir.ValidAgent(name):
			subs = append(subs, name) // a sender's records, from before records were per root
		case !e.Type().IsRegular():
			c.report(NotRegular, d.Join(name), "in place of a keyed send's record: "+maildir.TypeName(e.Type())+"; a send with its key is refused until a person removes it")
		default:
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
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
