package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/mailfs/mailfs/gitsync"
)

type syncCmd struct {
	Remote     string        `placeholder:"R" help:"The git remote: a remote's name, or a URL, which becomes \"origin\" the first time. Default origin."`
	Branch     string        `placeholder:"B" help:"The branch on the remote. Default: the repository's branch, else main."`
	Every      time.Duration `placeholder:"D" help:"Sync again every D until interrupted, a line per sync (a failed sync is reported and the next one tries again). A claim request made on this host syncs within a second; the home of a queue looks at the remote every max(1s, D/8) and syncs at once for a claim request to serve; and while this host's requests wait it looks as often and syncs when the remote moved (and every D/4)."`
	PruneAfter time.Duration `name:"prune-after" default:"720h" placeholder:"AGE" help:"Archived mail of this host's homes older than AGE leaves the working tree (git history keeps it; \"mailfs recall\" brings it back). 0: never."`
	Adopt      bool          `help:"Take a rewritten remote branch as meant, where a sync refuses it: build on the new history, with this host's changes since its last sync on top, and what the rewrite lost of what this host saw (a remote wound back, then squashed) and its homes' files as this host has them put back. Only when a person knows the rewrite was meant (a squash made while this host was behind)."`
	Compact    bool          `help:"After the sync, replace the remote's history by one commit of its tree (every host takes it at its next sync, as a push; git history before it is gone from the remote once it frees it). Not with --every."`
	Held       bool          `help:"List the mail a first sync set aside under runtime/held (an older copy's mail of other hosts' objects that no host can vouch for), and do nothing else. To send one, --restore-held it; to drop it, remove it."`
	Restore    []string      `name:"restore-held" placeholder:"ID|PATH|all" help:"Put the held messages named (by id, or by the path --held lists; all: every one) back into the state tree, and do nothing else: the next sync sends them. Nothing moves if a name is not held or the message is in the tree already. Prints each path put back."`
	TakeOver   bool          `name:"take-over" help:"Make this machine the holder of its host name where another machine holds it (the sync refuses, naming it): only when that machine is gone for good."`
	JSON       bool          `help:"Print each sync's report as one JSON object."`
}

func (c *syncCmd) Help() string {
	return `Keeps this host's state tree and the other hosts' alike through git, with
no server: the repository is the root itself (created by the first sync),
the remote any ordinary git remote — a bare repository, a forge.

Git never writes the tree, so a write an agent or a script makes during a
sync is never undone. One sync, under a lock per host: recover what a
stopped sync left; fetch; snapshot the tree (git add, write-tree); merge
this host's changes and the remote's path by path; write what arrived
through mailfs's own durable writes (whole files, fsynced, private, never
over a local file); move the branch and index; push (again from the fetch
if another host pushed first). Claim requests for this host's queues are
served along the way.

It cannot conflict, because of homes ("mailfs home"): only an object's home
host changes its files, any host only adds. A message name added here and
on another host is kept twice, this host's renamed to carry its name; a
home claimed on two hosts goes to the one pushed first, and what this host
changed under it is undone. A group or channel created on two hosts at
once, or a change made by hand to another host's object, ends the sync
with exit status 2, the paths and what to do; nothing was changed. So
does a change that would drop a message file no home removed (the no-loss
gate), and a push the remote refuses (a non-bare repository, a hook), with
git's own message; only another host's push first is tried again. A remote
with no branch (new, deleted, re-created) gets this host's whole tree.

A sync killed at any point is finished or undone by the next one, which
says so on stderr. A remote wound back by force-push gets this host's copy
back; one squashed to the same files is adopted; any other rewrite is
refused with the command that puts it back — or, if a person says the
rewrite was meant, taken with --adopt.

Needs a named host (mailfs host NAME) and the git command. To start a town
on several machines, see docs/machines.md ("A town on several machines").`
}

// syncJSON is the --json form of a sync's report.
type syncJSON struct {
	Host       string      `json:"host"`
	Remote     string      `json:"remote"`
	Branch     string      `json:"branch"`
	Committed  int         `json:"committed"`
	Pulled     int         `json:"pulled"`
	Pruned     []string    `json:"pruned"`
	Renamed    [][2]string `json:"renamed"`
	Yielded    []string    `json:"yielded"`
	Duplicates []string    `json:"duplicates"`
	Served     []string    `json:"served"`
	Reverted   []string    `json:"reverted"`
	Recovered  []string    `json:"recovered"`
	Held       []string    `json:"held"`
	Compacted  int         `json:"compacted,omitempty"`
	Pushed     bool        `json:"pushed"`
	Tries      int         `json:"tries"`
	Seconds    float64     `json:"seconds"`
	Error      string      `json:"error,omitempty"`
	Conflicts  []string    `json:"conflicts,omitempty"`
}

func (c *syncCmd) Run(a *app) error {
	if c.Adopt && c.Every != 0 {
		return usage("run mailfs sync --adopt once, then sync --every as before", "--adopt is for one sync a person asked for, not for --every")
	}
	if c.Compact && c.Every != 0 {
		return usage("run mailfs sync --compact once, then sync --every as before", "--compact is for one sync a person asked for, not for --every")
	}
	if c.TakeOver && c.Every != 0 {
		return usage("run mailfs sync --take-over once, then sync --every as before", "--take-over is for one sync a person asked for, not for --every")
	}
	if c.Every < 0 {
		return usage("give a duration such as 5m", "--every must be positive, not %v", c.Every)
	}
	if c.PruneAfter < 0 {
		return usage("give an age such as 720h, or 0 for never", "--prune-after must not be negative, not %v", c.PruneAfter)
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	if len(c.Restore) > 0 {
		which := c.Restore
		if slices.Contains(which, "all") {
			which = nil
		}
		back, err := (&gitsync.Syncer{Store: s}).RestoreHeld(which)
		for _, p := range back {
			fmt.Fprintln(a.out, p)
		}
		if errors.Is(err, gitsync.ErrNotHeld) {
			return withHint(err, "mailfs sync --held lists what is held")
		}
		return err
	}
	if c.Held {
		held, err := gitsync.Held(s)
		if err != nil {
			return err
		}
		for _, p := range held {
			fmt.Fprintf(a.out, "%s/%s\t%s\n", gitsync.HeldDir, p, p)
		}
		return nil
	}
	sy := &gitsync.Syncer{Store: s, Remote: c.Remote, Branch: c.Branch, PruneAfter: c.PruneAfter,
		Adopt: c.Adopt, TakeOver: c.TakeOver, Compact: c.Compact, Warn: func(msg string) { a.warn(errors.New(msg)) }}
	if c.PruneAfter == 0 {
		sy.PruneAfter = -1
	}
	if f, ok := a.err.(*os.File); ok && isTerminal(f) {
		sy.Progress = func(step string) { fmt.Fprintf(a.err, "mailfs: %s\n", step) }
	}
	if c.Every == 0 {
		rep, err := sy.Sync(a.ctx)
		c.print(a, rep, err)
		return syncErr(err)
	}
	sy.Every(a.ctx, c.Every, func(rep *gitsync.Report, err error) {
		c.print(a, rep, err)
		if err != nil && !errors.Is(err, gitsync.ErrConflict) && !errors.Is(err, gitsync.ErrBusy) {
			a.exit(syncErr(err)) // reported; the next sync tries again
		}
	})
	return nil // interrupted: a clean stop
}

// syncErr gives a conflict its hint.
func syncErr(err error) error {
	var ce *gitsync.ConflictError
	switch {
	case errors.As(err, &ce):
		if ce.Fix != "" {
			return withHint(err, ce.Fix)
		}
		return withHint(err, "every local change is still in the tree; settle the paths named, then sync again")
	case errors.Is(err, gitsync.ErrWouldLose):
		return withHint(err, "nothing was landed or pushed, and every file is still here; if their homes deleted them more than 90 days ago (their tombstones are forgotten), remove them here and sync again — else report it: a sync must never drop them")
	case errors.Is(err, gitsync.ErrPushRefused):
		return withHint(err, "this host kept everything; make the remote take pushes (a bare repository: git init --bare; or its hook, branch protection, access), then sync again")
	case errors.Is(err, gitsync.ErrHostTaken):
		return withHint(err, "give this machine another name (mailfs host NAME, then mailfs home claim AGENT… for its agents); or, if the machine that held the name is gone for good, take it over here: mailfs sync --take-over")
	case errors.Is(err, gitsync.ErrNoHost):
		return withHint(err, "mailfs host NAME, then mailfs home claim AGENT… for the agents that run here")
	case errors.Is(err, gitsync.ErrNoRemote):
		return withHint(err, "mailfs sync --remote git@forge:town/mail.git (or a path to a bare repository)")
	}
	return err
}

func (c *syncCmd) print(a *app, rep *gitsync.Report, err error) {
	if rep == nil {
		return
	}
	if c.JSON {
		out := syncJSON{Host: rep.Host, Remote: rep.Remote, Branch: rep.Branch, Committed: len(rep.Committed),
			Pulled: len(rep.Pulled), Pruned: nonNil(rep.Pruned), Renamed: rep.Renamed, Yielded: nonNil(rep.Yielded),
			Duplicates: nonNil(rep.Duplicates), Reverted: nonNil(rep.Reverted), Served: nonNil(rep.Served), Recovered: nonNil(rep.Recovered), Held: nonNil(rep.Held), Compacted: rep.Compacted, Pushed: rep.Pushed, Tries: rep.Tries, Seconds: rep.Took.Seconds()}
		if out.Renamed == nil {
			out.Renamed = [][2]string{}
		}
		if err != nil {
			out.Error = err.Error()
			var ce *gitsync.ConflictError
			if errors.As(err, &ce) {
				out.Conflicts = ce.Paths
			}
		}
		printValue(a.out, out)
		return
	}
	for _, r := range rep.Renamed {
		a.warn(fmt.Errorf("renamed %s to %s: another host had added that name", r[0], r[1]))
	}
	for _, y := range rep.Yielded {
		a.warn(fmt.Errorf("dropped %s: another host claimed that home first", y))
	}
	for _, r := range rep.Reverted {
		a.warn(fmt.Errorf("undid %s: changed here under a home another host claimed first", r))
	}
	for _, d := range rep.Duplicates {
		a.warn(fmt.Errorf("a message in two places after the pull: %s (mailfs fsck)", d))
	}
	if err != nil {
		return
	}
	extra := ""
	if len(rep.Pruned) > 0 {
		extra = fmt.Sprintf(", pruned %d archived", len(rep.Pruned))
	}
	if len(rep.Served) > 0 {
		extra += fmt.Sprintf(", served %d claim request", len(rep.Served))
		if len(rep.Served) > 1 {
			extra += "s"
		}
	}
	if rep.Compacted > 0 {
		extra += fmt.Sprintf(", compacted %d commits into one", rep.Compacted)
	}
	state := "pushed"
	if len(rep.Committed) == 0 {
		state = "nothing to push"
	}
	fmt.Fprintf(a.out, "%s synced %s with %s/%s: committed %d, pulled %d%s, %s (%.2fs)\n",
		time.Now().UTC().Format(time.RFC3339), rep.Host, rep.Remote, rep.Branch, len(rep.Committed), len(rep.Pulled), extra,
		state, rep.Took.Seconds())
}

type recallCmd struct {
	IDs []string `arg:"" name:"id" help:"Ids of archived messages that sync pruned from the working tree."`
}

func (c *recallCmd) Help() string {
	return `"mailfs sync" prunes archived mail older than --prune-after from the working
tree; git history keeps it. recall finds the commit that removed each id
and puts the file back into the archive it left, by a write that never
replaces a file, and prints its path. Any host may recall (it is an add);
"mailfs show" and "thread" see it again, and the next sync commits it.`
}

func (c *recallCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	sy := &gitsync.Syncer{Store: s}
	for _, id := range c.IDs {
		p, err := sy.Recall(a.ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.out, p)
	}
	return nil
}
