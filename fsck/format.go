package fsck

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mailfs/mailfs/internal/chipset"
)

// format reads the root's format record before the scan. A root in a
// newer format is checked but nothing in it is repaired: this mailfs
// cannot tell what the newer one keeps (a body it cannot parse may be
// the newer format's, not damage). A damaged record is returned, to be
// judged once the scan has seen what the tree holds.
func (c *checker) format() (damaged *Finding) {
	n, err := c.cr.Format()
	switch {
	case errors.Is(err, chipset.ErrDamagedFormat):
		return c.report(Format, chipset.FormatFile, err.Error()+"; every write to the root is refused until it is repaired")
	case err != nil:
		c.report(Format, chipset.FormatFile, err.Error())
	case n > chipset.Format:
		f := c.report(Format, chipset.FormatFile, fmt.Sprintf("the root is mailfs format %d, and this mailfs writes format %d: checked, nothing repaired (install a newer mailfs to repair it)", n, chipset.Format))
		if c.opt.Repair {
			f.Action = "not repaired: a newer format; nothing in the root was changed"
			c.opt.Repair = false
			c.newer = true
		}
	}
	return nil
}

// repairFormat plans the repair of a damaged format record, first of all
// repairs (every other write waits for it): rewritten as this mailfs's
// format when the scan found every message readable in it, else left for
// a person, since a file it cannot parse may be a newer format's.
func (c *checker) repairFormat(f *Finding) {
	if !c.opt.Repair {
		return
	}
	for _, g := range c.found {
		if g.Kind == Invalid && strings.HasPrefix(g.Path, "state/") {
			f.Action = fmt.Sprintf("not repaired: %s does not parse as format %d, so the root may be in a newer format; write \"mailfs format N\" (N the format of the mailfs that wrote it) into %s", g.Path, chipset.Format, chipset.FormatFile)
			return
		}
	}
	c.planned = append([]repair{{f, fmt.Sprintf("rewritten as format %d: every message in the tree reads as format %d", chipset.Format, chipset.Format), c.cr.RepairFormat}}, c.planned...)
}
