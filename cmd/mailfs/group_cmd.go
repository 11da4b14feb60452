package main

import (
	"fmt"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

type groupCmd struct {
	Create groupCreateCmd `cmd:"" help:"Create a group."`
	Add    groupAddCmd    `cmd:"" help:"Add members to a group."`
	Remove groupRemoveCmd `cmd:"" help:"Remove members from a group."`
	Show   groupShowCmd   `cmd:"" help:"Print a group's members and the agents they reach."`
	List   groupListCmd   `cmd:"" help:"List the groups."`
	Delete groupDeleteCmd `cmd:"" help:"Delete a group."`
}

func (c *groupCmd) Help() string {
	return `A group is a named list in state/groups/<name>.json, {"members": [...]}.
A member is an agent (toast, gastown/witness), a pattern matched against the
existing mailboxes when mail is sent (gastown.*), or another group (@other).
"mailfs send @name" delivers one copy to each agent the group reaches, once
each, the sender left out. @all is built in: every mailbox. A group that
includes itself, directly or not, or names an unknown group, is refused.

Gas Town's group addresses are built in too, resolved at each send from
the town's own agents and rigs, as Gas Town resolves them: @town (mayor,
deacon), @overseer, @witnesses, @refineries, @deacons, @dogs, and for
each rig @rig/<rig> (all its agents), @polecats/<rig> and @crew/<rig>.
The town is the Gas Town town above the root (mayor/town.json: its
mayor/rigs.json, <rig>/polecats/*, <rig>/crew/*, deacon/dogs/*); with
none, the mailboxes (gastown.witness is a witness of rig gastown), which
cannot tell polecats, crew or dogs. As in Gas Town, a send to one of them
reaches the sender too if it is a member. A group file of the same name
wins; "group list" shows, after the files, the built-in groups that reach
someone.`
}

type groupMembersArgs struct {
	Name    string   `arg:"" help:"The group (with or without @)."`
	Members []string `arg:"" name:"member" help:"Agents, patterns such as gastown.*, or @groups."`
}

type groupCreateCmd struct {
	Name    string   `arg:"" help:"The group (with or without @)."`
	Members []string `arg:"" optional:"" name:"member" help:"Agents, patterns such as gastown.*, or @groups."`
}

func (c *groupCreateCmd) Run(a *app) error {
	return editGroup(a, func(s *maildir.Store) (*maildir.Group, error) { return s.CreateGroup(c.Name, c.Members) })
}

type groupAddCmd struct{ groupMembersArgs }

func (c *groupAddCmd) Run(a *app) error {
	return editGroup(a, func(s *maildir.Store) (*maildir.Group, error) { return s.AddMembers(c.Name, c.Members) })
}

type groupRemoveCmd struct{ groupMembersArgs }

func (c *groupRemoveCmd) Run(a *app) error {
	return editGroup(a, func(s *maildir.Store) (*maildir.Group, error) { return s.RemoveMembers(c.Name, c.Members) })
}

func editGroup(a *app, edit func(*maildir.Store) (*maildir.Group, error)) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	_, err = edit(s)
	return err
}

type groupShowCmd struct {
	Name string `arg:"" help:"The group (with or without @)."`
	jsonRows
}

func (c *groupShowCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	g, err := s.Group(c.Name)
	if err != nil {
		return err
	}
	agents, err := s.Expand(c.Name)
	if err != nil {
		return err
	}
	if c.JSON {
		return printValue(a.out, struct {
			Group   string   `json:"group"`
			Members []string `json:"members"`
			Reaches []string `json:"reaches"`
		}{"@" + g.Name, nonNil(g.Members), nonNil(agents)})
	}
	_, err = fmt.Fprintf(a.out, "@%s\nmembers: %s\nreaches: %s\n", g.Name, strings.Join(g.Members, " "), strings.Join(agents, " "))
	return err
}

type groupListCmd struct {
	jsonRows
}

func (c *groupListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	names, err := s.Groups()
	if err != nil {
		return err
	}
	for _, n := range names {
		g, err := s.Group(n)
		if err != nil {
			a.exit(err)
			continue
		}
		if err := c.print(a, n, g.Members, false); err != nil {
			return err
		}
	}
	builtin, err := s.BuiltinGroups()
	if err != nil {
		return err
	}
	for _, n := range builtin {
		g, err := s.Group(n)
		if err != nil {
			continue // it reaches nobody here, or cannot be told without the town
		}
		if err := c.print(a, n, g.Members, true); err != nil {
			return err
		}
	}
	return nil
}

// print writes one group of the list.
func (c *groupListCmd) print(a *app, name string, members []string, builtin bool) error {
	if c.JSON {
		return printValue(a.out, struct {
			Group   string   `json:"group"`
			Members []string `json:"members"`
			BuiltIn bool     `json:"built_in,omitempty"`
		}{"@" + name, nonNil(members), builtin})
	}
	note := ""
	if builtin {
		note = " (built in)"
	}
	_, err := fmt.Fprintf(a.out, "@%s%s: %s\n", name, note, strings.Join(members, " "))
	return err
}

type groupDeleteCmd struct {
	Name string `arg:"" help:"The group (with or without @)."`
}

func (c *groupDeleteCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.DeleteGroup(c.Name)
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
