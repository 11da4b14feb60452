package maildir

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/internal/folderindex"
)

// IndexDir holds the folder index: one file per folder of messages
// recording what the folder held when it was last listed, so that a reader
// of unread mail reads only the files it must. (The thread index and the
// claim cursor live beside it: see threadNames and folderindex.ClaimWindow.) It is a
// cache: per host (under runtime/, never committed), rebuilt from the
// folder whenever it cannot be trusted, and safe to delete at any time.
//
// The rule that keeps it from ever showing a stale folder: an index is
// used as it stands only while the folder's own stat — device, inode,
// mtime and ctime — is the one read before the listing it was built from,
// and that stat was not racy (see [RacyWindow] and [folderindex.Clock]). Every change
// made through the directory moves its ctime, and the kernel sets ctime
// (no caller can put it back): a message sent, marked read or unread (a
// rewrite is a new file renamed over the old), a script's mv, cp to a new
// name or rename-over, rm, git checkout, reset or pull (git unlinks and
// recreates what it writes), a restore from the archive, a whole folder
// replaced. When the stamp differs the folder is listed again — names and
// inode numbers, one getdents pass, no file opened — and a file is taken as
// still read only if its name, inode and ctime are those the index
// recorded (see [folderindex.Relist]: an inode number alone is reused); everything else
// is read.
//
// What the folder's stamp does not show is a file truncated and rewritten
// in place under its own name (a shell's "> file" onto an existing
// message, an editor that saves in place): it is seen when the folder next
// changes, when the listing checks each file's ctime — but for a send,
// whose note (see "The adds log" in the folder index's documentation)
// tells readers what it added without a listing, however long after the
// last one: while only sends come, it is seen when their chain of notes
// ends (at most 512 sends). SPEC §4 has writers
// write a new file and rename it, and a reader can see such a write half
// done anyway; to make mailfs look at once, delete runtime/index or run
// with $MAILFS_INDEX=off.
const IndexDir = "runtime/index"

// IndexEnv is the environment variable with which a user turns the
// indexes off in mailfs's programs (the command, the Gas City provider, the
// MCP server, the web view): see [IndexSetting].
const IndexEnv = "MAILFS_INDEX"

// IndexSetting reads v, a value of [IndexEnv]: off for "off", "0", "false"
// or "no", in any case, and whether v was a value it knows ("", "on", "1",
// "true", "yes" keep the indexes on), so that a program can warn about a
// mistyped one. A program sets [Store.NoIndex] from it.
func IndexSetting(v string) (off, known bool) {
	switch strings.ToLower(v) {
	case "off", "0", "false", "no":
		return true, true
	case "", "on", "1", "true", "yes":
		return false, true
	}
	return false, false
}

// RacyWindow is how old a folder's ctime must be for its index to be
// trusted on the stamp alone. A file system's clock moves in ticks (a few
// milliseconds on Linux before 6.13's fine-grained timestamps), so a change
// made in the same tick as the listing could leave the stamp as it was;
// a folder changed less than RacyWindow before it was listed is listed
// again at the next call, as git treats a "racily clean" index entry.
const RacyWindow = time.Second

// indexOn reports whether s keeps folder indexes.
func (s *Store) indexOn() bool { return !s.NoIndex }

// An unreadScan says what [Store.readUnread] does with what it finds.
type unreadScan struct {
	keep  func(*Message) bool // called with each unread message; nil keeps them all
	read  func(name string)   // if not nil, called with each read message's file name
	quiet bool                // report nothing to Warn

	// ctx, if not nil, is checked before each file is read: once it is
	// done, readUnread stops, keeps no index, and returns its error.
	ctx context.Context
	// fromIndex asks for an answer from the folder's index and at most
	// most files read: if that cannot be had, readUnread returns
	// ErrNeedsListing having read only the index.
	fromIndex bool
	most      int
}

func (u *unreadScan) kept(m *Message) bool { return u.keep == nil || u.keep(m) }

// readUnread parses every message file of b's folder (not its archive)
// except those the folder's index knows to be read, and returns the unread
// messages u keeps (in file-name order, called from the calling goroutine)
// and the number of read messages, most of them known from the index
// without being read. Files that vanish meanwhile are skipped silently;
// files that are not messages are reported to Warn, at every call, as a
// full read would, unless u.quiet.
func (s *Store) readUnread(b Address, u unreadScan) ([]*Message, int, error) {
	warn := s.warn
	if u.quiet {
		warn = func(string, error) {}
	}
	d, err := s.openFolder(b, false)
	if d == nil {
		return nil, 0, err
	}
	defer d.Close()
	var names []string
	known := 0
	var plan *folderindex.Plan
	if !s.indexOn() {
		if u.fromIndex {
			return nil, 0, ErrNeedsListing
		}
		if err := s.eachName(d, !u.quiet, func(name string) { names = append(names, name) }); err != nil {
			return nil, 0, err
		}
		slices.Sort(names)
	} else {
		st, err := d.Stat()
		if err != nil {
			return nil, 0, err
		}
		planner := folderindex.PlanUnread
		if u.fromIndex {
			planner = folderindex.PlanFromIndex
		}
		plan, err = planner(d, st, s.rules(false), u.read != nil, func(name string, _ fs.FileMode, why error) {
			warn(d.Join(name), why)
		})
		switch {
		case errors.Is(err, folderindex.ErrNeedsListing):
			return nil, 0, ErrNeedsListing
		case err != nil:
			return nil, 0, err
		case u.fromIndex && len(plan.Read) > u.most:
			return nil, 0, ErrNeedsListing
		}
		if u.read != nil {
			for _, k := range plan.Known {
				u.read(k.Name)
			}
		}
		names, known = plan.Read, plan.Count-len(plan.Read)
	}
	ctx := u.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	var kept []*Message
	s.loadNames(ctx, d, b, false, names, nil, func(name string, m *Message, fst durable.Stat, err error) {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return // gone since the listing: the folder's stamp moved too
		case err != nil:
			warn(d.Join(name), Reason(err))
		case m.Read:
			known++
			if u.read != nil {
				u.read(name)
			}
		case u.kept(m):
			kept = append(kept, m)
		}
		if plan != nil {
			plan.Record(name, fst, err == nil && m.Read)
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, 0, err // a part read: no answer, and no index made of it
	}
	if plan != nil {
		plan.Save()
	}
	return kept, known, nil
}

// countNames counts the message-file names in d (an archive folder), from
// its index when the folder has not changed since, and keeps the count in
// the index for the next call.
func (s *Store) countNames(d *durable.Dir) (int, error) {
	count := func() (int, error) {
		n := 0
		err := s.eachName(d, false, func(string) { n++ })
		return n, err
	}
	if !s.indexOn() {
		return count()
	}
	st, err := d.Stat()
	if err != nil {
		return 0, err
	}
	return folderindex.Count(d, st, s.rules(true), count)
}

// rules are the folder index's rules for this store: where the index
// folder is, the racy window, the file system's clock, and what a folder
// of messages (an archive when archived) holds.
func (s *Store) rules(archived bool) *folderindex.Rules {
	w := s.racy
	w = cmp.Or(w, RacyWindow)
	return &folderindex.Rules{
		Open:   s.indexDir,
		Window: w,
		Fine:   s.fineClock,
		Notes:  !s.noNotes,
		Classify: func(name string, typ fs.FileMode) (bool, error) {
			class, why := Classify(name, typ, archived)
			if class == NotMessage {
				return false, why
			}
			return class == Candidate, nil
		},
	}
}
