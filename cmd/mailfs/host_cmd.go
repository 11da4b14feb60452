package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

type hostCmd struct {
	Name string `arg:"" optional:"" help:"The name to give this host (a-z 0-9 . _ -). Without it, print the current name."`
}

func (c *hostCmd) Help() string {
	return `A town whose state tree spans machines (kept alike by "mailfs sync") gives
each machine a name. The name is this clone's alone: it is kept in the
root's runtime/host, which is never committed ($MAILFS_HOST or --host
override it). Without a name, a host acts as a town of one machine: every
object is its own, and "mailfs sync" refuses to run.

Naming a host also gives this machine a random identity (runtime/host-id).
The name's first sync records it in state/hosts/NAME.json; a second machine
given a name another machine holds is refused at its sync, before it
changes anything: pick another name, or, if the machine that held it is
gone for good, take the name over with "mailfs sync --take-over".

Prints the name; exit status 1, with nothing printed, when there is none.`
}

func (c *hostCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	if c.Name != "" {
		was, _ := s.LocalHost()
		if err := s.SetLocalHost(c.Name); err != nil {
			return err
		}
		if was != c.Name {
			// A new name, a new identity: the name's first sync records
			// it, or is refused if another machine holds the name.
			return gitsync.NewIdentity(s)
		}
		return nil
	}
	h, err := s.LocalHost()
	if err != nil {
		return err
	}
	if h == "" {
		return &exitStatus{code: exitNothing, msg: `this host has no name ("mailfs host NAME" gives it one)`}
	}
	fmt.Fprintln(a.out, h)
	return nil
}

type homeCmd struct {
	List  homeListCmd  `cmd:"" default:"withargs" help:"List the objects' homes (the default)."`
	Claim homeClaimCmd `cmd:"" help:"Make this host the home of objects that have none."`
	Move  homeMoveCmd  `cmd:"" help:"Hand objects homed here to another host."`
}

func (c *homeCmd) Help() string {
	return `Every mailbox, queue, channel and group of a town on several machines has a
home host, recorded in state/homes/<kind>/<name>.json (committed). Any host
may add files anywhere: a send, a post, a queued item. Only the home host
renames, rewrites or deletes an object's files: read, mark-read,
mark-unread, archive, restore, delete, clear, take, claim, release, channel
retention, group edits. Elsewhere those commands are refused, naming the
home host, and sweeps pass over objects homed elsewhere. Because no two
hosts ever change the same file, git merges their commits without conflict,
and no message is lost, resurrected or left in two places.

Creating a queue, channel or group on a named host homes it there. A
mailbox is homed by "mailfs home claim AGENT" on the host where the agent
runs; "mailfs home claim --all" homes everything that has no home yet (the
first step of the first host of a town). Only the home host moves a home.`
}

type homeListCmd struct {
	Objects []string `arg:"" optional:"" name:"object" help:"Agents, queue:NAME, channel:NAME or @group; default every homed object."`
	JSON    bool     `help:"Print one JSON object per line: object, kind, host, since."`
}

type homeJSON struct {
	Object string    `json:"object"`
	Kind   string    `json:"kind"`
	Host   string    `json:"host"`
	Since  time.Time `json:"since,omitzero"`
}

func (c *homeListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	var homes []maildir.Home
	if len(c.Objects) == 0 {
		if homes, err = s.Homes(); err != nil {
			return err
		}
	}
	for _, o := range c.Objects {
		obj, err := s.Resolve(o)
		if err != nil {
			return err
		}
		h, err := s.HomeOf(obj)
		if err != nil {
			return err
		}
		homes = append(homes, h)
	}
	rows := [][]string{}
	for _, h := range homes {
		if c.JSON {
			if err := printValue(a.out, homeJSON{h.Object.String(), h.Object.Kind.String(), h.Host, h.Since}); err != nil {
				return err
			}
			continue
		}
		host, since := h.Host, ""
		if host == "" {
			host = "-"
		} else {
			since = h.Since.UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{h.Object.String(), host, since})
	}
	if c.JSON {
		return nil
	}
	return table(a.out, []string{"OBJECT", "HOME", "SINCE"}, rows)
}

type homeClaimCmd struct {
	Objects []string `arg:"" optional:"" name:"object" help:"Agents, queue:NAME, channel:NAME or @group."`
	All     bool     `help:"Claim every mailbox, queue, channel and group that has no home."`
}

func (c *homeClaimCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	var objs []maildir.Address
	switch {
	case c.All && len(c.Objects) > 0:
		return usage("give objects or --all", "--all claims every homeless object; name none with it")
	case c.All:
		if objs, err = s.Homeless(); err != nil {
			return err
		}
	case len(c.Objects) == 0:
		return usage("mailfs home claim AGENT… (or --all)", "name the objects to home here")
	}
	for _, o := range c.Objects {
		obj, err := s.Resolve(o)
		if err != nil {
			return err
		}
		objs = append(objs, obj)
	}
	known, _ := s.Agents()
	for _, obj := range objs {
		if err := s.ClaimHome(obj); err != nil {
			return err
		}
		fmt.Fprintln(a.out, obj)
		if obj.Kind == maildir.KindAgent && !slices.Contains(known, obj.Name) {
			// Homed all the same (an agent set up before its first mail),
			// but a typo must not go unseen.
			hint := ""
			if similar := maildir.Similar(obj.Name, known); len(similar) > 0 {
				hint = "; did you mean " + strings.Join(similar, " or ") + "?"
			}
			a.warn(fmt.Errorf("no agent %s has a mailbox yet: homed here all the same%s", obj.Name, hint))
		}
	}
	return nil
}

type homeMoveCmd struct {
	Objects []string `arg:"" name:"object" help:"Agents, queue:NAME, channel:NAME or @group, homed on this host."`
	To      string   `required:"" placeholder:"HOST" help:"The host that becomes their home."`
}

func (c *homeMoveCmd) Help() string {
	return `Run it on the current home host, then "mailfs sync": from the sync on, only
the new host changes the objects' files. Sync the old host before the new
one starts changing them.`
}

func (c *homeMoveCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	for _, o := range c.Objects {
		obj, err := s.Resolve(o)
		if err != nil {
			return err
		}
		if err := s.MoveHome(obj, c.To); err != nil {
			return err
		}
	}
	return nil
}
