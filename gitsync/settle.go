package gitsync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// settle deals with the names this host added that the remote added too,
// since head: identical files merge by themselves; a message added here is
// renamed to a free name carrying the host; a home record yields to the
// one already pushed; anything else stops the sync before any commit.
func (s *Syncer) settle(ctx context.Context, g *git, rep *Report, head, upstream string) error {
	if upstream == "" {
		return nil
	}
	var theirs []string
	var err error
	if head == "" {
		theirs, err = g.paths(ctx, "ls-tree", "-r", "-z", "--name-only", upstream, "--", "state")
	} else {
		theirs, err = g.paths(ctx, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", head, upstream, "--", "state")
	}
	if err != nil || len(theirs) == 0 {
		return err
	}
	mine, err := g.paths(ctx, "ls-files", "-z", "--others", "--exclude-standard", "--", "state")
	if err != nil {
		return err
	}
	if head == "" {
		// Nothing is tracked yet: every file here is this host's add.
		if mine, err = g.paths(ctx, "ls-files", "-z", "--others", "--cached", "--exclude-standard", "--", "state"); err != nil {
			return err
		}
	}
	added := map[string]bool{}
	for _, p := range mine {
		added[p] = true
	}
	// Decide everything first: a sync that stops changes nothing.
	var stuck, rename, yield []string
	for _, p := range theirs {
		if !added[p] {
			continue
		}
		local, err := g.run(ctx, "hash-object", "--", p)
		if err != nil {
			return err
		}
		remote, err := g.run(ctx, "rev-parse", upstream+":"+p)
		if err != nil {
			return err
		}
		switch {
		case strings.TrimSpace(local) == strings.TrimSpace(remote):
			// the same file: nothing to settle
		case isMessage(p):
			rename = append(rename, p)
		case strings.HasPrefix(p, maildir.HomeDir+"/"):
			yield = append(yield, p)
		default:
			stuck = append(stuck, p)
		}
	}
	if len(stuck) > 0 {
		return &ConflictError{Paths: stuck, Why: "created on this host and on another at once; keep one (delete this host's copy, then sync)"}
	}
	for _, p := range rename {
		to, err := s.rename(p, rep.Host)
		if err != nil {
			return err
		}
		s.step("renamed %s to %s: another host added that name first", p, to)
		rep.Renamed = append(rep.Renamed, [2]string{p, to})
	}
	for _, p := range yield {
		if err := os.Remove(filepath.Join(g.dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		s.step("dropped %s: another host claimed that home first", p)
		rep.Yielded = append(rep.Yielded, p)
	}
	return nil
}

// isMessage reports whether p is a message file's path: in a mailbox,
// queue or channel, or one of their archives.
func isMessage(p string) bool {
	dir, name := path.Split(p)
	if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
		return false
	}
	parts := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	if len(parts) == 4 && parts[3] == maildir.ArchiveDir {
		parts = parts[:3]
	}
	return len(parts) == 3 && parts[0] == "state" && (parts[1] == "mail" || parts[1] == "queue" || parts[1] == "channel")
}

// rename gives the local message file p a free name carrying host: the
// id with "-<host>" (then "-2", …) appended, by a rename that never
// replaces a file.
func (s *Syncer) rename(p, host string) (string, error) {
	dir, name := path.Split(p)
	d, done, err := s.folder(strings.TrimSuffix(dir, "/"), false)
	if err != nil {
		return "", err
	}
	defer done()
	id := strings.TrimSuffix(name, ".json")
	for n := 1; n < 1000; n++ {
		to := id + "-" + host
		if n > 1 {
			to += fmt.Sprintf("-%d", n)
		}
		err := d.Move(name, d, to+".json")
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return dir + to + ".json", d.Sync()
	}
	return "", fmt.Errorf("gitsync: no free name for %s", p)
}
