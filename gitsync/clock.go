package gitsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// MaxSkew is how far behind the town's clock this host's may be before
// a sync and mailfs doctor say so.
const MaxSkew = 10 * time.Minute

// ClockBehind returns how far this host's clock (local) is behind the
// town's (town: see [TownClock]) when that is more than MaxSkew, else 0.
// Only a clock behind shows: the town's newest commit is older than a
// right clock whenever the town is quiet. It is pure.
func ClockBehind(local, town time.Time) time.Duration {
	if d := town.Sub(local); d > MaxSkew {
		return d
	}
	return 0
}

// TownClock returns the town's clock as this host's last sync saw it:
// the newest commit time, among the last 50 commits of the remote
// branches it fetched, of a commit its own syncs did not make (another
// host's sync, a person's). ok is false when there is none: a root never
// synced, or a remote only this host pushed to. It does not fetch. Git
// is the git command; "" means "git" on $PATH.
func TownClock(ctx context.Context, s *maildir.Store, bin string) (town time.Time, ok bool, err error) {
	if _, err := os.Lstat(filepath.Join(s.Dir(), ".git")); errors.Is(err, os.ErrNotExist) {
		return time.Time{}, false, nil
	}
	host, err := s.LocalHost()
	if err != nil || host == "" {
		return time.Time{}, false, err
	}
	if bin == "" {
		bin = "git"
	}
	g := &git{dir: s.Dir(), bin: bin, env: environ(host, true)}
	out, err := g.run(ctx, "log", "--remotes", "-n", "50", "--format=%ct %s")
	if err != nil {
		return time.Time{}, false, err
	}
	return newestOther(out, host)
}
