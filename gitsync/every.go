package gitsync

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// requestPoll is how often Every looks for a claim request made on this
// host since its last sync.
const requestPoll = time.Second

// Every syncs now, then every d until ctx ends, handing each sync's
// report and error to report (once ctx ended, only a sync that finished).
// Claim requests go faster than d, because an agent waits on each (see
// maildir.RequestClaim):
//
//   - a request made on this host starts a sync within requestPoll, so it
//     reaches the queue's home without waiting for the next tick;
//   - while this host has requests of its own in its tree (not yet served,
//     or served and not yet brought back), it syncs every d/4, so the item
//     the home served comes back sooner.
//
// The home serves at its own ticks; with every host on the same d, the
// item reaches the agent in about d/2 + d/8 on average instead of 3d/2.
func (s *Syncer) Every(ctx context.Context, d time.Duration, report func(*Report, error)) {
	poll := time.NewTicker(requestPoll)
	defer poll.Stop()
	for {
		rep, err := s.Sync(ctx)
		if ctx.Err() != nil {
			if err == nil {
				report(rep, nil) // it finished: say so
			}
			return
		}
		report(rep, err)
		own, _ := s.Store.OwnRequests()
		seen := s.requestNames()
		timer := time.NewTimer(waitFor(d, len(own)))
	wait:
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
				break wait
			case <-poll.C:
				if s.newRequest(seen) {
					timer.Stop()
					break wait
				}
			}
		}
	}
}

// waitFor is the wait before the next sync of Every: d, or d/4 while this
// host has own requests waiting.
func waitFor(d time.Duration, own int) time.Duration {
	if own > 0 {
		return d / 4
	}
	return d
}

// requestNames returns the names of the claim request files in the tree,
// without reading them.
func (s *Syncer) requestNames() map[string]bool {
	names := map[string]bool{}
	root := filepath.Join(s.Store.Dir(), filepath.FromSlash(maildir.RequestDir))
	queues, _ := os.ReadDir(root)
	for _, q := range queues {
		files, _ := os.ReadDir(filepath.Join(root, q.Name()))
		for _, f := range files {
			names[q.Name()+"/"+f.Name()] = true
		}
	}
	return names
}

// newRequest reports whether a request file is in the tree that was not
// when seen was taken (requests from other hosts arrive only by a sync,
// so a new one was made here).
func (s *Syncer) newRequest(seen map[string]bool) bool {
	for n := range s.requestNames() {
		if !seen[n] {
			return true
		}
	}
	return false
}
