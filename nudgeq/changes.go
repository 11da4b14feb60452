package nudgeq

import (
	"context"
	"os"
	"path/filepath"

	"github.com/fsnotify/fsnotify"

	"github.com/mailfs/mailfs/maildir"
)

// Changes tells, on the returned channel, each time a nudge may have been
// queued for agent: a name created in the agent's queue folder. Hints
// coalesce (the channel holds one) and are reasons to look (Peek, Claim),
// never nudges themselves. The folder need not exist: while it, or one on
// the way to it, is missing, the nearest that exists is watched, and when
// the queue's folder appears the watch moves down to it and a hint is sent
// (a nudge may be in it already). A queue folder that is a link to a
// directory (Gas Town's) is watched through the link. The channel is
// closed when ctx ends, and the watch with it.
//
// An error (no inotify instance or watch left) means no hints: the caller
// keeps looking on its own schedule, as it must anyway where the file
// system does not report other machines' writes (NFS).
func (q *Queue) Changes(ctx context.Context, agent string) (<-chan struct{}, error) {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return nil, err
	}
	root := q.root.Path()
	// The chain from the root's parent down to the queue's folder, each
	// watched while the next is missing or is the last.
	chain := []string{filepath.Dir(root), root}
	for _, part := range []string{"runtime", "nudge", agent} {
		chain = append(chain, filepath.Join(chain[len(chain)-1], part))
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	c := &changes{fsw: fsw, chain: chain, watched: map[string]bool{}, out: make(chan struct{}, 1)}
	if err := c.watchDown(); err != nil {
		fsw.Close()
		return nil, err
	}
	go c.run(ctx)
	return c.out, nil
}

type changes struct {
	fsw     *fsnotify.Watcher
	chain   []string
	watched map[string]bool
	out     chan struct{}
}

// watchDown watches, from the top, each folder of the chain that exists,
// skipping the root's parent once the root is there, each watch in place
// before the next level is looked at: a folder made meanwhile is either
// there when looked at or reported by its parent's watch.
func (c *changes) watchDown() error {
	for i, dir := range c.chain {
		if i == 0 && isDir(c.chain[1]) {
			if c.watched[dir] { // the root is there now: its parent is not ours
				c.fsw.Remove(dir)
				delete(c.watched, dir)
			}
			continue
		}
		if !isDir(dir) {
			return nil
		}
		if c.watched[dir] {
			continue
		}
		if err := c.fsw.Add(dir); err != nil {
			return err
		}
		c.watched[dir] = true
	}
	return nil
}

// isDir reports whether path is a directory, through a link.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func (c *changes) hint() {
	select {
	case c.out <- struct{}{}:
	default:
	}
}

func (c *changes) run(ctx context.Context) {
	defer close(c.out)
	defer c.fsw.Close()
	queue := c.chain[len(c.chain)-1]
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-c.fsw.Events:
			if !ok {
				return
			}
			switch dir := filepath.Dir(ev.Name); {
			case dir == queue:
				if ev.Has(fsnotify.Create) {
					c.hint()
				}
			case ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
				// A folder on the way appeared or went: a removed one lost
				// its watch with it, so it is watched afresh when it is back.
				if !ev.Has(fsnotify.Create) {
					gone := false
					for _, d := range c.chain {
						gone = gone || d == ev.Name
						if gone && c.watched[d] {
							c.fsw.Remove(d) // a renamed folder's watch would follow it
							delete(c.watched, d)
						}
					}
				}
				before := c.watched[queue]
				c.watchDown()
				if !before && c.watched[queue] {
					c.hint()
				}
			}
		case _, ok := <-c.fsw.Errors:
			if !ok {
				return
			}
			c.hint() // an overflow lost events: look
		}
	}
}
