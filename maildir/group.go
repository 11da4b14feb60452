package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/mailfs/mailfs/internal/durable"
)

// AllGroup is the built-in group of every existing mailbox: "@all".
const AllGroup = "all"

var (
	// ErrNoGroup is returned for a group that does not exist.
	ErrNoGroup = errors.New("maildir: no such group")

	// ErrGroupCycle is returned when a group includes itself, directly or
	// through other groups.
	ErrGroupCycle = errors.New("maildir: group includes itself")

	// ErrGroupInUse is returned by [Store.DeleteGroup] for a group that
	// another group names as a member: deleting it would break sends to
	// the other.
	ErrGroupInUse = errors.New("maildir: group in use")
)

// A Group is a named list of members (SPEC §8), stored as
// state/groups/<name>.json, {"members": [...]}. A member is an agent
// address, a pattern with "*" matched against the existing mailboxes
// ("gastown.*"), or another group ("@other").
type Group struct {
	Name    string
	Members []string // canonical: agent ids, lowercase patterns, "@group"

	// BuiltIn marks one of Gas Town's built-in groups (@town,
	// @rig/<rig>, …; see [Store.BuiltinGroups]), with no group file: its
	// members are the agents it reaches now, its Name is as Gas Town
	// spells it ("rig/gastown"), and, as in Gas Town, a send
	// to it reaches the sender too when the sender is one of them.
	BuiltIn bool
}

func groupFile(name string) string { return name + ".json" }

// parseMember returns the canonical form of a group member.
func parseMember(m string) (string, error) {
	if strings.ContainsAny(m, "*?[") {
		// A pattern: the characters around the wildcards follow the rules
		// of agent ids; "[" is not supported.
		if strings.Contains(m, "[") {
			return "", fmt.Errorf("%w %q: a pattern may use * and ?, not [", ErrInvalidAddress, m)
		}
		probe, why := canonical(strings.NewReplacer("*", "x", "?", "x").Replace(m))
		if why != "" {
			return "", fmt.Errorf("%w %q: %s", ErrInvalidAddress, m, why)
		}
		// canonical keeps the length and the positions: put the wildcards back.
		out := []byte(probe)
		for i := 0; i < len(m) && i < len(out); i++ {
			if m[i] == '*' || m[i] == '?' {
				out[i] = m[i]
			}
		}
		return string(out), nil
	}
	a, err := ParseAddress(m)
	if err != nil {
		return "", err
	}
	if a.Kind != KindAgent && a.Kind != KindGroup {
		return "", fmt.Errorf("%w: %q: a group member is an agent, a pattern or a group, not %s", ErrWrongKind, m, article(a.Kind))
	}
	return a.String(), nil
}

// Group reads the group name (without "@"). @all is built in: every
// existing mailbox; so are Gas Town's groups (@town, @witnesses,
// @rig/<rig>, …: see [Store.BuiltinGroups]) where no group file of that
// name exists.
func (s *Store) Group(name string) (*Group, error) {
	name, err := parseName(KindGroup, name)
	if err != nil {
		return nil, err
	}
	if name == AllGroup {
		return &Group{Name: AllGroup, Members: []string{"*"}}, nil
	}
	d, err := s.root.Dir(GroupDir)
	if d == nil {
		if err == nil {
			err = fmt.Errorf("%w: @%s", ErrNoGroup, name)
		}
	} else {
		defer d.Close()
		var g *Group
		if g, _, err = readGroup(d, name); err == nil {
			return g, nil
		}
	}
	if errors.Is(err, ErrNoGroup) {
		if g, ok, berr := s.builtin(name); ok {
			return g, berr
		}
	}
	return nil, err
}

// readGroup reads and checks one group file, returning its members and
// the file's fields (to keep unknown keys on rewrite).
func readGroup(d *durable.Dir, name string) (*Group, []field, error) {
	data, _, err := d.ReadFile(groupFile(name), MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%w: @%s", ErrNoGroup, name)
	}
	if err != nil {
		return nil, nil, err
	}
	bad := func(why string) (*Group, []field, error) {
		return nil, nil, fmt.Errorf("%w: %s: %s", ErrInvalidMessage, d.Join(groupFile(name)), why)
	}
	fields, err := parseObject(data)
	if err != nil {
		return bad(err.Error())
	}
	g := &Group{Name: name}
	for _, f := range fields {
		if f.Key != "members" {
			continue
		}
		members, ok := decodeStrings(f.Raw)
		if !ok {
			return bad(`"members" is not an array of strings`)
		}
		for _, member := range members {
			canon, err := parseMember(member)
			if err != nil {
				return bad(err.Error())
			}
			g.Members = append(g.Members, canon)
		}
	}
	return g, fields, nil
}

// Groups returns the names of the groups defined under the root, sorted
// (@all, built in, is not among them).
func (s *Store) Groups() ([]string, error) { return s.jsonNames(GroupDir) }

// jsonNames lists the names of the regular <name>.json files in folder
// (names that are valid ids), sorted, without opening any.
func (s *Store) jsonNames(folder string) ([]string, error) {
	return s.listNames(folder, func(e fs.DirEntry) (string, bool) {
		n, ok := strings.CutSuffix(e.Name(), ".json")
		return n, ok && e.Type().IsRegular() && ValidAgent(n)
	})
}

// listNames returns, sorted, the names keep gives for the entries of
// folder it keeps; a folder that does not exist has none.
func (s *Store) listNames(folder string, keep func(fs.DirEntry) (string, bool)) ([]string, error) {
	d, err := s.root.Dir(folder)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var names []string
	err = d.Each(func(e fs.DirEntry) {
		if n, ok := keep(e); ok {
			names = append(names, n)
		}
	})
	slices.Sort(names)
	return names, err
}

// CreateGroup creates the group name with members. It fails if the group
// exists, and for @all.
func (s *Store) CreateGroup(name string, members []string) (*Group, error) {
	return s.editGroup(name, true, func(g *Group) error {
		return addMembers(g, members)
	})
}

// AddMembers adds members to group name, each once.
func (s *Store) AddMembers(name string, members []string) (*Group, error) {
	return s.editGroup(name, false, func(g *Group) error { return addMembers(g, members) })
}

// RemoveMembers removes members from group name; naming one that is not a
// member is an error.
func (s *Store) RemoveMembers(name string, members []string) (*Group, error) {
	return s.editGroup(name, false, func(g *Group) error {
		for _, m := range members {
			canon, err := parseMember(m)
			if err != nil {
				return err
			}
			i := slices.Index(g.Members, canon)
			if i < 0 {
				return fmt.Errorf("%s is not a member of @%s", canon, g.Name)
			}
			g.Members = slices.Delete(g.Members, i, i+1)
		}
		return nil
	})
}

func addMembers(g *Group, members []string) error {
	for _, m := range members {
		canon, err := parseMember(m)
		if err != nil {
			return err
		}
		if canon == "@"+g.Name {
			return fmt.Errorf("%w: @%s cannot be a member of itself", ErrGroupCycle, g.Name)
		}
		if !slices.Contains(g.Members, canon) {
			g.Members = append(g.Members, canon)
		}
	}
	return nil
}

// DeleteGroup removes group name.
func (s *Store) DeleteGroup(name string) error {
	_, err := s.editGroup(name, false, nil)
	return err
}

// editGroup reads, changes (or, with edit nil, deletes) and writes a group
// file, holding the groups folder's lock so that concurrent edits are not
// lost. Cycles through other groups are refused before writing.
func (s *Store) editGroup(name string, create bool, edit func(*Group) error) (*Group, error) {
	name, err := parseName(KindGroup, name)
	if err != nil {
		return nil, err
	}
	if name == AllGroup {
		return nil, fmt.Errorf("@%s is built in: every mailbox", AllGroup)
	}
	d, err := s.mkdir(GroupDir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	g, fields, err := readGroup(d, name)
	switch {
	case create && err == nil:
		return nil, fmt.Errorf("group @%s exists already: %w", name, fs.ErrExist)
	case create && errors.Is(err, ErrNoGroup):
		if err := s.taken(KindGroup, name); err != nil {
			return nil, err
		}
		g = &Group{Name: name}
	case err != nil:
		return nil, err
	default:
		if err := s.MayChange(Address{Kind: KindGroup, Name: name}); err != nil {
			return nil, err
		}
	}
	if edit == nil {
		if by := includedBy(d, name); len(by) > 0 {
			return nil, fmt.Errorf("%w: @%s is a member of %s; remove it there first", ErrGroupInUse, name, strings.Join(by, ", "))
		}
		if err := d.Remove(groupFile(name)); err != nil {
			return nil, err
		}
		return g, d.Sync()
	}
	if err := edit(g); err != nil {
		return nil, err
	}
	// The group as it would be must expand: no cycle, no unknown group.
	if _, err := s.expandWith(g, nil, map[string]*Group{name: g}); err != nil {
		return nil, err
	}
	if g.Members == nil {
		g.Members = []string{}
	}
	data := encodeObject(setField(fields, "members", marshalValue(g.Members)))
	if err := d.Replace(groupFile(name), data); err != nil || !create {
		return g, err
	}
	return g, s.homeHere(Address{Kind: KindGroup, Name: name})
}

// includedBy returns the groups in the groups folder d that name group
// name as a member, as "@other". Groups that cannot be read are passed over:
// fsck reports them.
func includedBy(d *durable.Dir, name string) []string {
	var others []string
	d.Each(func(e fs.DirEntry) {
		n, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || n == name || !e.Type().IsRegular() || !ValidAgent(n) {
			return
		}
		if g, _, err := readGroup(d, n); err == nil && slices.Contains(g.Members, "@"+name) {
			others = append(others, "@"+n)
		}
	})
	slices.Sort(others)
	return others
}

// Dangling returns, for each group, the groups it names that do not exist,
// as "@name"; groups that cannot be read are left out (see [Store.Group]).
// fsck reports what it returns: a send to such a group fails.
func (s *Store) Dangling() (map[string][]string, error) {
	names, err := s.Groups()
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, n := range names {
		g, err := s.Group(n)
		if err != nil {
			continue
		}
		for _, m := range g.Members {
			if sub, ok := strings.CutPrefix(m, "@"); ok && sub != AllGroup && !slices.Contains(names, sub) && !isBuiltin(sub) {
				out[n] = append(out[n], m)
			}
		}
	}
	return out, nil
}

// Expand returns the agents that mail to group name reaches, sorted, each
// once: members, the mailboxes that patterns match, and the members of the
// groups it includes. A cycle or an unknown group is an error.
func (s *Store) Expand(name string) ([]string, error) {
	boxes, err := s.expand(name, "")
	if err != nil {
		return nil, err
	}
	out := make([]string, len(boxes))
	for i, b := range boxes {
		out[i] = b.Name
	}
	slices.Sort(out)
	return out, nil
}

// expand returns the agents of group name, without the sender (if any).
func (s *Store) expand(name, sender string) ([]Address, error) {
	g, err := s.Group(name)
	if err != nil {
		return nil, err
	}
	boxes, err := s.expandWith(g, nil, nil)
	if err != nil || g.BuiltIn {
		return boxes, err
	}
	return slices.DeleteFunc(boxes, func(b Address) bool { return b.Name == sender }), nil
}

// expandWith expands g; stack holds the groups being expanded, and
// override stands in for groups not yet written.
func (s *Store) expandWith(g *Group, stack []string, override map[string]*Group) ([]Address, error) {
	if i := slices.Index(stack, g.Name); i >= 0 {
		path := append(slices.Clone(stack[i:]), g.Name)
		return nil, fmt.Errorf("%w: @%s", ErrGroupCycle, strings.Join(path, " → @"))
	}
	stack = append(stack, g.Name)
	var out []Address
	add := func(a Address) {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	var agents []string
	for _, m := range g.Members {
		switch {
		case strings.HasPrefix(m, "@"):
			sub, ok := override[m[1:]]
			if !ok {
				var err error
				if sub, err = s.Group(m[1:]); err != nil {
					return nil, fmt.Errorf("in @%s: %w", g.Name, err)
				}
			}
			more, err := s.expandWith(sub, stack, override)
			if err != nil {
				return nil, err
			}
			for _, a := range more {
				add(a)
			}
		case strings.ContainsAny(m, "*?"):
			if agents == nil {
				var err error
				if agents, err = s.Agents(); err != nil {
					return nil, err
				}
			}
			for _, a := range agents {
				if ok, _ := path.Match(m, a); ok {
					add(Address{Kind: KindAgent, Name: a})
				}
			}
		default:
			add(Address{Kind: KindAgent, Name: m})
		}
	}
	return out, nil
}
