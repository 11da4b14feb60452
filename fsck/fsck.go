// Package fsck checks a mailfs root and repairs what is safe to repair.
//
// It walks every folder of messages (mailboxes, archives, work queues,
// channels), the groups, the nudge queues (a queue linked to Gas Town's
// folder where it leads), and the side files mailfs writes — the format
// record, the keyed sends' records (runtime/once), the readers' caches
// (runtime/index), the audit log (state/audit), the homes' tombstones
// (state/gone) — through the root's one guarded way in (internal/chipset)
// and the same confined, no-follow directory handles as the rest of
// mailfs, and reports:
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
// Repair does only what loses nothing: it removes old dot-temps; removes a
// set-aside file that is a second name of its message, and quarantines
// one that is an older copy (never puts one back: the fallback rewrite
// never leaves a name missing, so that could only resurrect a message
// moved or deleted since); returns orphaned claims to their queue; moves invalid
// files into the folder's quarantine/, never replacing anything, with the
// reason in a file beside each; removes the second name of a message left
// under two names by a move cut short (an interrupted link-and-unlink
// fallback); and tightens permissions. Everything else is reported for a
// person to decide.
//
// # Why a repair cannot destroy
//
// fsck runs beside live agents (from cron, say), and a scan that lists
// folder after folder does not see one moment: a message archived and
// restored while it scans is seen in both folders, which looks exactly
// like a move cut short. So the scan only decides; the repairs run after
// it, each in three steps: take the locks the commands take (the folders'
// own, which renames and removals hold on file systems without
// renameat2's flags, and the queues' lock that claims and releases hold),
// look again at what the scan judged, and act only if it is still so —
// the same file (device, inode, size, modification time, link count).
// A name is removed only through [durable.Dir.RemoveSecond], which first
// renames it aside, out of every other process's reach, and unlinks it
// only if the file still has another name and the name kept is still
// that file; otherwise it puts it back. A repair that finds the world
// changed reports "changed since the scan; not repaired" and leaves it to
// the next run. A crash at any step leaves every message under at least
// one name: at worst under the set-aside name, which the next run
// quarantines, where a person finds it.
//
// What it cannot see: a file changed in place without its size or
// modification time moving (a writer that restores its mtime) looks
// unchanged; such a file is only ever quarantined or chmodded, never
// removed. Two names of one file are judged the same move cut short even
// if a person made the hard link on purpose.
package fsck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
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
	Duplicate   Kind = "duplicate"    // the same id in two folders (mailboxes, archives, queues)
	Misdirected Kind = "misdirected"  // a "to" that does not match its folder
	Permissions Kind = "permissions"  // a mode wider than 0600 / 0700
	Unfinished  Kind = "unfinished"   // a queue item a cut-short claim or release left a claim record (or read) on
	Dangling    Kind = "dangling"     // a group that names a group that does not exist
	Neglected   Kind = "neglected"    // a mailbox with unread mail older than the sweep's cut-off
	Stranded    Kind = "stranded"     // a queue item no claim can take (too large with a claim record)
	Format      Kind = "format"       // a format record that is damaged, or newer than this mailfs writes
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
	UnreadAfter time.Duration    // unread mail older than this is neglected; 0: 24h, the sweep's default cut-off

	// Progress, if set, is told after each folder of messages is checked:
	// how many so far, and the folder's path relative to the root.
	Progress func(folders int, path string)
}

// DefaultUnreadAfter is the age past which unread mail is reported, the
// archive sweep's default cut-off.
const DefaultUnreadAfter = 24 * time.Hour

// Check checks the root at dir and, with opt.Repair, repairs. It returns
// every finding, repaired or not; the error is for a root it could not
// walk at all, or for ctx ending: then the findings are those of the
// folders checked so far (a [*Stopped] says how many), every repair made
// is whole, and none is begun after ctx ends.
func Check(ctx context.Context, dir string, opt Options) ([]*Finding, error) {
	cr, err := chipset.New(dir)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	r, err := cr.Open(false)
	if err != nil {
		return nil, err
	}
	store, err := maildir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	c := &checker{ctx: ctx, cr: cr, r: r, store: store, opt: opt, now: time.Now()}
	if opt.Now != nil {
		c.now = opt.Now()
	}
	c.opt.TempAge = cmp.Or(c.opt.TempAge, time.Hour)
	c.opt.Grace = cmp.Or(c.opt.Grace, time.Minute)
	c.opt.OrphanAfter = cmp.Or(c.opt.OrphanAfter, nudgeq.DefaultOrphanAfter)
	c.opt.UnreadAfter = cmp.Or(c.opt.UnreadAfter, DefaultUnreadAfter)
	damaged := c.format()
	c.places = map[string][]place{}
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
	if damaged != nil {
		c.repairFormat(damaged)
	}
	c.repair()
	if err := ctx.Err(); err != nil {
		return c.found, &Stopped{Folders: c.folders, Err: err}
	}
	return c.found, nil
}

// Stopped is the error [Check] returns when its context ended before it
// had checked everything.
type Stopped struct {
	Folders int   // the folders of messages checked before it stopped
	Err     error // the context's error
}

func (e *Stopped) Error() string {
	return fmt.Sprintf("fsck: stopped after checking %d folders: %v", e.Folders, e.Err)
}

func (e *Stopped) Unwrap() error { return e.Err }

type checker struct {
	ctx     context.Context // ends the walk; a repair begun is finished
	folders int             // folders of messages checked
	cr      *chipset.Root   // the one guarded way into the root
	r       *durable.Root   // cr, open
	store   *maildir.Store  // for what maildir knows how to read, such as groups
	opt     Options
	now     time.Time
	found   []*Finding

	newer bool // the root is in a newer format: nothing is repaired

	places      map[string][]place // where each message id was seen
	linkedTemps []linkedTemp       // temps whose other name is in another folder
	unfinished  []unfinishedItem   // queue items seen with a claim record or read
	planned     []repair           // the repairs the scan decided on
}

// A place is one folder a message id was seen in.
type place struct {
	box      maildir.Address
	archived bool
	dir      string // the folder, relative to the root
	st       durable.Stat
	claimer  string // the agent its claim record names, if any
}

func (c *checker) report(kind Kind, path, detail string) *Finding {
	f := &Finding{Kind: kind, Path: path, Detail: detail}
	c.found = append(c.found, f)
	return f
}

// fix plans a repair for f when repairing: decide now, act after the
// scan (see [checker.repair]), where do looks again at what the scan saw.
// action is what to record in f.Action, or "" when do records it.
func (c *checker) fix(f *Finding, action string, do func() error) {
	if c.opt.Repair {
		c.planned = append(c.planned, repair{f, action, do})
	}
}

// A repair is one planned fix.
type repair struct {
	f      *Finding
	action string
	do     func() error
}

// repair runs the planned repairs, in the order they were planned, and
// records each outcome. None runs once ctx has ended.
func (c *checker) repair() {
	for _, r := range c.planned {
		if c.ctx.Err() != nil {
			r.f.Action = "not repaired: interrupted"
			continue
		}
		if err := r.do(); err != nil {
			outcome(r.f, err)
			continue
		}
		r.f.Repaired = true
		if r.action != "" { // else do recorded what it did
			r.f.Action = r.action
		}
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
			if c.ctx.Err() != nil {
				return
			}
			name := e.Name()
			switch {
			case strings.HasPrefix(name, "."):
				c.dotFile(parent, name)
			case kind.kind == maildir.KindChannel && strings.HasSuffix(name, ".json") && e.Type().IsRegular():
				c.channelConfig(parent, name)
			case !e.IsDir() && maildir.ValidAgent(name):
				// A valid name, the wrong kind of file (a symbolic link is
				// never followed out of the root): say which.
				c.report(NotRegular, parent.Join(name), "not a folder: "+maildir.TypeName(e.Type()))
			case !e.IsDir() || !maildir.ValidAgent(name):
				c.report(NotRegular, parent.Join(name), "not a folder named by an agent, queue or channel id")
			default:
				if kind.kind == maildir.KindChannel {
					c.channelFolder(name)
				}
				c.box(maildir.Address{Kind: kind.kind, Name: name})
			}
		})
		parent.Close()
	}
	if c.ctx.Err() != nil {
		return // duplicates are judged on a whole scan, or not at all
	}
	c.confirmUnfinished()
	c.duplicates()
	c.groups()
	c.nudges()
	c.once()
	c.index()
	c.audit()
	c.gone()
	c.tempsLinkedElsewhere()
}

// An unfinishedItem is a queue item the scan saw with a claim record or
// read set.
type unfinishedItem struct {
	q         maildir.Address
	dir, name string
	id        string
	st        durable.Stat
}

// confirmUnfinished reports the queue items the scan saw carrying a claim
// record, or read, only if they still do once the claimants' lock is
// held: a release moves the item back into its queue, then drops the
// record, under that lock, so a scan that passed between the two saw a
// verb at work, not a cut-short one (Why 8: files that moved during a
// scan beside live agents were findings).
func (c *checker) confirmUnfinished() {
	if len(c.unfinished) == 0 {
		return
	}
	unlock, err := c.store.LockQueues()
	if err != nil {
		unlock = func() {}
	}
	var still []unfinishedItem
	for _, u := range c.unfinished {
		if d, err := c.reopen(u.dir); err == nil {
			if stillSame(d, u.name, u.st) {
				still = append(still, u)
			}
			d.Close()
		}
	}
	unlock()
	for _, u := range still {
		f := c.report(Unfinished, u.dir+"/"+u.name, "an item waiting in a queue still has a claim record or read set: a claim or release was cut short")
		c.fix(f, "dropped the claim record and set read false, under the claimants' lock", func() error {
			return c.store.Settle(u.q, u.id)
		})
	}
}

// A linkedTemp is a dot-temp with more than one name, none of them in its
// own folder.
type linkedTemp struct {
	dir, name string
	st        durable.Stat
}

// tempsLinkedElsewhere judges the temps that are a second name of a file
// whose other name is in another folder: a write cut between its link and
// its unlink, the message moved on since (archived, claimed). When a
// message the scan saw holds the file, the temp's name is removed, only
// while it is still a second name of it (claims pass over a file with two
// names, so a queue item would otherwise be passed over for ever); else
// it is reported for a person.
func (c *checker) tempsLinkedElsewhere() {
	for _, t := range c.linkedTemps {
		var holder *place
		var id string
		for _, pid := range slices.Sorted(maps.Keys(c.places)) {
			for i, p := range c.places[pid] {
				if durable.Same(p.st, t.st) {
					holder, id = &c.places[pid][i], pid
				}
			}
		}
		path := t.dir + "/" + t.name
		if t.dir == "" {
			path = t.name
		}
		if holder == nil {
			f := c.report(Temp, path, "a temp that is a second name of a file in no folder of messages fsck reads")
			f.Action = "not repaired: find the file's other name (its inode) and remove the temp's once you know"
			continue
		}
		keep := holder.dir + "/" + id + ".json"
		f := c.report(Temp, path, "a temp that is also "+keep+": a write cut between its link and its unlink, the message moved on since (claims pass over a file with two names)")
		t, held := t, *holder
		c.fix(f, "removed the temp's name", func() error {
			paths := append(queueLock([]place{held}), t.dir, held.dir)
			return c.underLocks(paths, func(open map[string]*durable.Dir) error {
				d, kd := open[t.dir], open[held.dir]
				if err := d.RemoveSecond(t.name, kd, id+".json", t.st); err != nil {
					return err
				}
				return d.Sync()
			})
		})
	}
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

// linked opens the directory a link at rel leads to (through the root's
// one way of following a link, which keeps rel as its path), reporting a
// link that leads nowhere, or to anything but a directory.
func (c *checker) linked(rel string) *durable.Dir {
	d, err := c.cr.Linked(rel)
	if err == nil && d == nil {
		err = fs.ErrNotExist
	}
	if err != nil {
		c.report(NotRegular, rel, "a link to no directory: "+err.Error())
		return nil
	}
	return d
}

// reopen opens the folder at rel again for a repair, following the one
// link a folder's path may hold (a nudge queue shared with Gas Town); a
// folder gone since the scan is ErrChanged.
func (c *checker) reopen(rel string) (*durable.Dir, error) {
	d, err := c.cr.Linked(rel)
	if err == nil && d == nil {
		err = ErrChanged
	}
	return d, err
}

// box checks one folder of messages and its archive.
func (c *checker) box(b maildir.Address) {
	d := c.open(b.Dir(false))
	if d == nil {
		return
	}
	defer d.Close()
	c.messages(b, d, false)
	a, err := d.Sub(maildir.ArchiveDir)
	if err != nil {
		return
	}
	defer a.Close()
	c.dirMode(a)
	c.messages(b, a, true)
}

// messages checks the entries of one folder, and records where each valid
// message is.
func (c *checker) messages(b maildir.Address, d *durable.Dir, archived bool) {
	var unread int
	var oldest time.Time
	// maildir's walker and its one rule for what an entry is.
	maildir.EachEntry(d, func(name string, typ fs.FileMode, class maildir.EntryClass, why error) {
		if c.ctx.Err() != nil {
			return
		}
		switch {
		case class == maildir.Hidden:
			c.dotFile(d, name)
		case class == maildir.OwnFolder, archived && name == maildir.QuarantineDir && typ.IsDir():
			// fsck's own quarantine (of a mailbox, or of its archive)
		case !typ.IsRegular():
			c.report(NotRegular, d.Join(name), "never read as a message: "+maildir.TypeName(typ))
		default: // a candidate, or a regular file not named *.json (invalid, below)
			st, err := d.Lstat(name)
			if err != nil {
				return
			}
			c.fileMode(d, name, st)
			m, data, why := c.validMessage(b, d, name)
			if why == movedAway {
				return // moved (or removed) since it was listed: not a finding
			}
			if why != "" {
				c.invalid(d, name, st, why)
				return
			}
			if b.Kind == maildir.KindQueue && !archived {
				if err := maildir.Claimable(b, data); err != nil {
					c.report(Stranded, d.Join(name), err.Error())
				}
			}
			p := place{box: b, archived: archived, dir: d.Path(), st: st}
			if m.Claim != nil {
				p.claimer = m.Claim.Agent
			}
			id := strings.TrimSuffix(name, ".json")
			c.places[id] = append(c.places[id], p)
			if b.Kind == maildir.KindQueue && !archived && (m.Claim != nil || m.Read) && c.now.Sub(st.ModTime) >= c.opt.Grace {
				c.unfinished = append(c.unfinished, unfinishedItem{b, d.Path(), name, id, st})
			}
			if b.Kind == maildir.KindAgent && !archived && !m.Read {
				t := m.Timestamp
				if t.IsZero() {
					if t, _ = maildir.ParseStamp(name); t.IsZero() {
						t = st.ModTime
					}
				}
				if c.now.Sub(t) > c.opt.UnreadAfter {
					unread++
					if oldest.IsZero() || t.Before(oldest) {
						oldest = t
					}
				}
			}
		}
	})
	if c.ctx.Err() != nil {
		return
	}
	c.folders++
	if c.opt.Progress != nil {
		c.opt.Progress(c.folders, d.Path())
	}
	if unread > 0 {
		c.report(Neglected, d.Path(), fmt.Sprintf("%d unread messages older than %v (the oldest from %s); the sweep keeps them for the agent",
			unread, c.opt.UnreadAfter, oldest.UTC().Format(time.RFC3339)))
	}
}

// duplicates reports every id seen in more than one folder. Ids are unique
// by construction (a send never reuses one, copies get their own), so a
// second place is a move cut short: on a file system without renameat2's
// flags a move is a link and an unlink, and a crash between the two leaves
// one file under two names. Repair finishes such a move, keeping one name:
// an agent's archive over its mailbox (a sweep was archiving it), an agent
// over a queue (the claim completes, or the release is undone), and of two
// agents the one the claim record names. Two different files, or a case
// those rules do not decide, are reported for a person.
func (c *checker) duplicates() {
	for _, id := range slices.Sorted(maps.Keys(c.places)) {
		ps := c.places[id]
		if len(ps) < 2 {
			continue
		}
		paths := make([]string, len(ps))
		same := true
		for i, p := range ps {
			paths[i] = p.dir + "/" + id + ".json"
			same = same && p.st.Dev == ps[0].st.Dev && p.st.Ino == ps[0].st.Ino
		}
		if !c.stillDuplicated(id, ps) {
			continue // a message that moved while the scan listed its folders
		}
		f := c.report(Duplicate, paths[0], "the same id is also in "+strings.Join(paths[1:], ", "))
		if !c.opt.Repair {
			continue
		}
		if !same {
			f.Action = "not repaired: different files; decide which to keep"
			continue
		}
		keep := keeper(ps)
		if keep < 0 {
			f.Action = "not repaired: one file under two names, and nothing says which move it was"
			continue
		}
		c.fix(f, "finished the interrupted move: kept "+paths[keep], func() error {
			return c.dropSecondNames(id, ps, keep)
		})
	}
}

// stillDuplicated reports whether the id the scan saw in every place of ps
// is still there, each place the file the scan saw, once fsck holds the
// locks a repair would take (the folders', and the queues' for a queue
// item): the scan lists folders one after another, so a message moved
// from one to the other between the two listings (an archive, a claim, a
// release) is seen in both; that is a move, not a finding (Why 8). Under
// the locks a fallback move in progress, which holds its folder's lock
// from its link to its unlink, is waited for; a cut one stays a duplicate.
func (c *checker) stillDuplicated(id string, ps []place) bool {
	paths := queueLock(ps)
	for _, p := range ps {
		paths = append(paths, p.dir)
	}
	err := c.underLocks(paths, func(open map[string]*durable.Dir) error {
		for _, p := range ps {
			if err := still(open[p.dir], id+".json", p.st); err != nil {
				return err
			}
		}
		return nil
	})
	return !errors.Is(err, ErrChanged)
}

// keeper picks which of the places of one file to keep, or -1.
func keeper(ps []place) int {
	var agents []int
	for i, p := range ps {
		if p.box.Kind == maildir.KindAgent {
			agents = append(agents, i)
		}
	}
	if len(agents) == 0 {
		return -1
	}
	pick := func(name string) int {
		best := -1
		for _, i := range agents {
			if ps[i].box.Name == name && (best < 0 || ps[i].archived) {
				best = i
			}
		}
		return best
	}
	owner := ps[agents[0]].box.Name
	for _, i := range agents {
		if ps[i].box.Name != owner {
			return pick(ps[i].claimer) // -1 when no claim record names one of them
		}
	}
	return pick(owner)
}

// validMessage parses message name of box b, or says why it is not a
// valid message. A valid message whose "to" does not match is reported here
// too.
func (c *checker) validMessage(b maildir.Address, d *durable.Dir, name string) (*maildir.Message, []byte, string) {
	if class, why := maildir.Classify(name, 0, false); class == maildir.NotMessage {
		return nil, nil, why.Error()
	}
	data, _, err := d.ReadFile(name, maildir.MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, movedAway
	}
	if err != nil {
		return nil, nil, maildir.Reason(err).Error()
	}
	if len(data) == 0 {
		return nil, nil, "empty file"
	}
	m, err := maildir.Parse(data)
	if err != nil {
		return nil, nil, err.Error()
	}
	if why := misdirected(b, m); why != "" {
		c.report(Misdirected, d.Join(name), why)
	}
	return m, data, ""
}

// movedAway is validMessage's "why" for a file gone since it was listed.
const movedAway = "moved away"

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
		dest, err := c.quarantineJudged(d, name, why, st)
		f.Action = "moved to " + dest
		return err
	})
}

// quarantine moves name into d's quarantine/ folder, never replacing a
// file, with the reason beside it. It returns where the file went.
func (c *checker) quarantine(d *durable.Dir, name, why string) (string, error) {
	q, err := d.MkSub(maildir.QuarantineDir)
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
		// Cut between the link and the unlink that set the file aside (a
		// file system without renameat2's flags): the rewrite had not
		// begun, and the file is still whole under its own name.
		if o, err := d.Lstat(orig); err == nil && st.Nlink > 1 && o.Dev == st.Dev && o.Ino == st.Ino {
			f := c.report(Swap, d.Join(name), "a second name of "+orig+", left by a rewrite cut short before it began (claims pass over a file with two names)")
			c.fix(f, "removed the second name", func() error { return c.removeSecond(d, name, orig, st) })
			return
		}
		// An older copy: the rewrite had put the newer content under the
		// name when it was cut, and the message may have moved or gone
		// since. The fallback rewrite never leaves a name missing, so
		// putting this back could only resurrect what a verb removed:
		// it is quarantined, whatever holds the name now.
		f := c.report(Swap, d.Join(name), "an older copy of "+orig+", set aside by a rewrite that was cut after the newer content took its name")
		c.fix(f, "", func() error {
			dest, err := c.quarantineJudged(d, name, "an older copy of "+orig+", set aside by a rewrite that did not finish (its newer content took the name; the message may have moved or gone since)", st)
			f.Action = "moved to " + dest
			return err
		})
		return
	}
	// A temp that is also a message: a write cut between the link that
	// put the message in place and the unlink of its temp (the fallback
	// rename). The message is whole and durable; its second name makes
	// claims pass it over, so it goes at once, whatever its age.
	if st.Nlink > 1 && st.Mode.IsRegular() {
		if other := sameFile(d, name, st); other != "" {
			f := c.report(Temp, d.Join(name), "a temp that is also "+d.Join(other)+": a write cut between its link and its unlink (claims pass over a file with two names)")
			c.fix(f, "removed the temp's name", func() error { return c.removeSecond(d, name, other, st) })
			return
		}
		// Its other name is in another folder (the message moved on
		// since the cut): judged once the scan has seen every message.
		c.linkedTemps = append(c.linkedTemps, linkedTemp{dir: d.Path(), name: name, st: st})
		return
	}
	if c.now.Sub(st.ModTime) < c.opt.TempAge || d.Path() == "" && name == ".gitignore" {
		return
	}
	if !st.Mode.IsRegular() {
		c.report(NotRegular, d.Join(name), "a hidden "+maildir.TypeName(st.Mode.Type()))
		return
	}
	f := c.report(Temp, d.Join(name), fmt.Sprintf("a temp file %v old", c.now.Sub(st.ModTime).Round(time.Minute)))
	c.fix(f, "removed", func() error { return c.removeTemp(d, name, st) })
}

// sameFile returns the name of a message file in d that is the same file
// as name (whose stat is st), or "".
func sameFile(d *durable.Dir, name string, st durable.Stat) string {
	found := ""
	d.Scan(func(n []byte, ino uint64, typ fs.FileMode) {
		if found == "" && ino == st.Ino && typ.IsRegular() && string(n) != name && !strings.HasPrefix(string(n), ".") {
			found = string(n)
		}
	})
	return found
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
		shared := e.Type()&fs.ModeSymlink != 0 && maildir.ValidAgent(e.Name())
		if !shared && (!e.IsDir() || !maildir.ValidAgent(e.Name())) {
			if !strings.HasPrefix(e.Name(), ".") {
				c.report(NotRegular, parent.Join(e.Name()), "not a queue named by an agent id")
			}
			return
		}
		var q *durable.Dir
		if shared {
			// A queue shared with Gas Town: a link to its folder, the one
			// link mailfs follows; its nudges are checked where it leads.
			q = c.linked(parent.Join(e.Name()))
		} else {
			q = c.open(parent.Join(e.Name()))
		}
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
	sub := func(name string) bool { return name == "refused" || name == maildir.QuarantineDir }
	c.sideFiles(d, "a nudge", "", sub, func(name string, st durable.Stat) {
		if orig, _, ok := nudgeq.ParseClaim(name); ok {
			at, _ := nudgeq.ClaimedAt(name, st)
			if c.now.Sub(at) >= c.opt.OrphanAfter {
				f := c.report(Orphan, d.Join(name), fmt.Sprintf("claimed %v ago by a drainer that did not finish", c.now.Sub(at).Round(time.Second)))
				c.fix(f, "returned to the queue as "+d.Join(orig), func() error { return c.moveBack(d, name, orig, st) })
			}
			return
		}
		if !nudges {
			return // refusal notes: small JSON the drain reads leniently
		}
		data, _, err := d.ReadFile(name, 1<<20)
		if errors.Is(err, fs.ErrNotExist) {
			return // drained or claimed since it was listed
		}
		if err == nil {
			_, err = nudgeq.Parse(data)
		}
		if err != nil {
			c.invalid(d, name, st, maildir.Reason(err).Error())
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
	c.sideFiles(d, "a group", "", nil, func(name string, st durable.Stat) {
		if group, ok := strings.CutSuffix(name, ".json"); !ok || !maildir.ValidAgent(group) {
			c.report(Invalid, d.Join(name), "not a group: groups are <name>.json")
		} else if _, err := c.store.Group(group); err != nil {
			c.report(Invalid, d.Join(name), err.Error())
		}
	})
	dangling, err := c.store.Dangling()
	if err != nil {
		c.report(Invalid, maildir.GroupDir, err.Error())
	}
	for _, g := range slices.Sorted(maps.Keys(dangling)) {
		c.report(Dangling, d.Join(g+".json"), fmt.Sprintf("names %s, which does not exist: every send to @%s fails",
			strings.Join(dangling[g], ", "), g))
	}
}

func (c *checker) channelConfig(d *durable.Dir, name string) {
	st, err := d.Lstat(name)
	if err != nil {
		return
	}
	c.fileMode(d, name, st)
	if channel := strings.TrimSuffix(name, ".json"); maildir.ValidAgent(channel) {
		if _, err := c.store.Channel(channel); err != nil {
			// Reported, not quarantined: the channel's posts depend on it.
			c.report(Invalid, d.Join(name), maildir.Reason(err).Error()+"; posts to the channel are refused until it is fixed")
		}
	} else {
		c.report(Invalid, d.Join(name), "not a channel configuration: channels are <name>.json")
	}
}

// channelFolder reports a channel folder without its configuration, which
// every post to it and every read of it refuses (maildir.ErrMalformed).
func (c *checker) channelFolder(name string) {
	if _, err := c.store.Channel(name); errors.Is(err, maildir.ErrMalformed) {
		c.report(Invalid, maildir.ChannelDir+"/"+name, maildir.Reason(err).Error())
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
	rel := d.Path()
	c.fix(f, "set to "+durable.DirPerm.String(), func() error {
		d, err := c.reopen(rel)
		if err != nil {
			return err
		}
		defer d.Close()
		return d.SetMode(durable.DirPerm)
	})
}

// fileMode reports (and repairs) a file mode wider than 0600.
func (c *checker) fileMode(d *durable.Dir, name string, st durable.Stat) {
	if st.Mode.Perm()&^durable.Perm == 0 {
		return
	}
	f := c.report(Permissions, d.Join(name), fmt.Sprintf("mode %v, wider than %v", st.Mode.Perm(), durable.Perm))
	rel := d.Path()
	c.fix(f, "set to "+durable.Perm.String(), func() error {
		d, err := c.reopen(rel)
		if err != nil {
			return err
		}
		defer d.Close()
		if err := still(d, name, st); err != nil {
			return err
		}
		return d.Chmod(name, durable.Perm)
	})
}
