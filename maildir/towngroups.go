package maildir

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Gas Town's built-in group addresses (internal/mail/router.go,
// parseGroupAddress; gagecane/gastown 57bcb59d) need no group file: they
// are resolved, at each send, from the town's own agents and rigs. A group
// file of the same name, made by hand, wins over the built-in one.
//
//	@town               the town-level agents: mayor, deacon
//	@overseer           the human operator: overseer
//	@witnesses          every rig's witness
//	@refineries         every rig's refinery
//	@deacons            the deacon
//	@dogs               the deacon's dogs (deacon/dogs/<name>)
//	@rig/<rig>          every agent of the rig: witness, refinery, polecats, crew
//	@polecats/<rig>     the rig's polecats
//	@crew/<rig>         the rig's crew
var townGroups = []string{"town", "overseer", "witnesses", "refineries", "deacons", "dogs"}

// townRigGroups are the built-in groups of one rig: "@<prefix>/<rig>".
var townRigGroups = []string{"rig", "polecats", "crew"}

// A town is what the built-in groups are resolved from: the Gas Town town
// whose root holds this mail tree, else the mailboxes alone.
type town struct {
	found    bool                // a Gas Town town (mayor/town.json) holds the root
	overseer bool                // it has mayor/overseer.json
	deacon   bool                // it has deacon/
	rigs     []string            // mayor/rigs.json's rigs, canonical
	polecats map[string][]string // rig → <rig>/polecats/<name>, canonical agent ids
	crew     map[string][]string // rig → <rig>/crew/<name>
	dogs     []string            // deacon/dogs/<name>
	boxes    []string            // the existing mailboxes
}

// builtinGroup reports whether name (canonical, without "@") is one of Gas
// Town's built-in groups, and for a rig's group, its kind and rig.
func builtinGroup(name string) (kind, rig string, ok bool) {
	if slices.Contains(townGroups, name) {
		return name, "", true
	}
	for _, k := range townRigGroups {
		if r, ok := strings.CutPrefix(name, k+"."); ok && r != "" {
			return k, r, true
		}
	}
	return "", "", false
}

// members resolves a built-in group as Gas Town does, as mailbox names,
// sorted: from the town's layout when there is a town (its agent beads
// are made with these directories and its registered rigs), else from
// the mailboxes, whose names tell town-level agents, witnesses and
// refineries and the rig of each agent, but not a polecat from a crew
// member, nor a dog. Gas Town fails a send to a group that reaches
// nobody; so does the caller.
func (t *town) members(kind, rig string) ([]string, error) {
	var out []string
	add := func(names ...string) {
		for _, n := range names {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if !t.found {
		switch kind {
		case "polecats", "crew", "dogs":
			return nil, fmt.Errorf("@%s needs the Gas Town town's directories to tell its members (no mayor/town.json above the root): mailbox names do not say who is a polecat, a crew member or a dog", spelled(kind, rig))
		case "overseer":
			add("overseer")
		}
		for _, b := range t.boxes {
			switch r, role, _ := strings.Cut(b, "."); {
			case kind == "town" && (b == "mayor" || b == "deacon"),
				kind == "deacons" && b == "deacon",
				kind == "witnesses" && role == "witness",
				kind == "refineries" && role == "refinery",
				kind == "rig" && r == rig && role != "":
				add(b)
			}
		}
		slices.Sort(out)
		return out, nil
	}
	rigs := t.rigs
	if kind == "rig" && rig == "town" && !slices.Contains(t.rigs, rig) {
		// Gas Town's dog beads say "rig: town" (beads_dog.go), so its
		// @rig/town reaches the dogs.
		add(t.dogs...)
		return out, nil
	}
	if rig != "" {
		if !slices.Contains(t.rigs, rig) {
			return nil, fmt.Errorf("@%s: the town has no rig %q (mayor/rigs.json)", spelled(kind, rig), rig)
		}
		rigs = []string{rig}
	}
	switch kind {
	case "overseer":
		if !t.overseer {
			return nil, fmt.Errorf("@overseer: the town has no overseer (mayor/overseer.json)")
		}
		add("overseer")
	case "town":
		add("mayor")
		if t.deacon {
			add("deacon")
		}
	case "deacons":
		if t.deacon {
			add("deacon")
		}
	case "dogs":
		add(t.dogs...)
	}
	for _, r := range rigs {
		switch kind {
		case "witnesses":
			add(r + ".witness")
		case "refineries":
			add(r + ".refinery")
		case "rig":
			add(r+".witness", r+".refinery")
			add(t.polecats[r]...)
			add(t.crew[r]...)
		case "polecats":
			add(t.polecats[r]...)
		case "crew":
			add(t.crew[r]...)
		}
	}
	slices.Sort(out)
	return out, nil
}

// spelled is a built-in group's name as Gas Town spells it.
func spelled(kind, rig string) string {
	if rig == "" {
		return kind
	}
	return kind + "/" + rig
}

// readTown reads the town above dir, the root's directory, as Gas Town's
// workspace.Find finds it: the outermost directory holding
// mayor/town.json, else the outermost holding mayor/.
func readTown(dir string, boxes []string) *town {
	t := &town{boxes: boxes}
	primary, secondary := "", ""
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "mayor", "town.json")); err == nil && st.Mode().IsRegular() {
			primary = d
		}
		if st, err := os.Stat(filepath.Join(d, "mayor")); err == nil && st.IsDir() {
			secondary = d
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	root := primary
	root = cmp.Or(root, secondary)
	if root == "" {
		return t
	}
	t.found = true
	t.overseer = isFile(filepath.Join(root, "mayor", "overseer.json"))
	t.deacon = isDir(filepath.Join(root, "deacon"))
	var cfg struct {
		Rigs map[string]json.RawMessage `json:"rigs"`
	}
	if data, err := os.ReadFile(filepath.Join(root, "mayor", "rigs.json")); err == nil && json.Unmarshal(data, &cfg) == nil {
		for r := range cfg.Rigs {
			if c, why := canonical(r); why == "" && !strings.Contains(c, ".") {
				t.rigs = append(t.rigs, c)
			}
		}
		slices.Sort(t.rigs)
	}
	t.polecats, t.crew = map[string][]string{}, map[string][]string{}
	for _, r := range t.rigs {
		t.polecats[r] = agentDirs(filepath.Join(root, r, "polecats"), r+"/")
		t.crew[r] = agentDirs(filepath.Join(root, r, "crew"), r+"/")
	}
	t.dogs = agentDirs(filepath.Join(root, "deacon", "dogs"), "deacon/dogs/")
	return t
}

// agentDirs are the mailboxes of the agents whose directories are in dir,
// each addressed prefix+<name>.
func agentDirs(dir, prefix string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if name, err := ParseAgent(prefix + e.Name()); err == nil {
			out = append(out, name)
		}
	}
	return out
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// BuiltinGroups returns Gas Town's built-in groups of this town, as Gas
// Town spells them ("town", "rig/gastown"), sorted; those a group file
// stands in for are left out. A store that keeps Gas City's addresses
// ([Store.Verbatim]) has none.
func (s *Store) BuiltinGroups() ([]string, error) {
	if s.Verbatim {
		return nil, nil
	}
	files, err := s.Groups()
	if err != nil {
		return nil, err
	}
	t, err := s.town()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range townGroups {
		if !slices.Contains(files, g) {
			out = append(out, g)
		}
	}
	rigs := t.rigs
	if !t.found {
		rigs = nil
		for _, b := range t.boxes {
			if r, _, ok := strings.Cut(b, "."); ok && !slices.Contains(rigs, r) {
				rigs = append(rigs, r)
			}
		}
	}
	for _, r := range rigs {
		for _, k := range townRigGroups {
			if !slices.Contains(files, k+"."+r) {
				out = append(out, k+"/"+r)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// town reads the town the built-in groups are resolved from.
func (s *Store) town() (*town, error) {
	boxes, err := s.Agents()
	if err != nil {
		return nil, err
	}
	return readTown(filepath.Dir(s.Dir()), boxes), nil
}

// builtin returns the built-in group name, resolved now, or false when
// name is not one.
func (s *Store) builtin(name string) (*Group, bool, error) {
	kind, rig, ok := builtinGroup(name)
	if !ok || s.Verbatim {
		return nil, false, nil
	}
	t, err := s.town()
	if err != nil {
		return nil, true, err
	}
	members, err := t.members(kind, rig)
	if err != nil {
		return nil, true, fmt.Errorf("%w: %w", ErrNoGroup, err)
	}
	if len(members) == 0 {
		return nil, true, fmt.Errorf("%w: @%s reaches no agent of this town", ErrNoGroup, spelled(kind, rig))
	}
	return &Group{Name: spelled(kind, rig), Members: members, BuiltIn: true}, true, nil
}

func isBuiltin(name string) bool {
	_, _, ok := builtinGroup(name)
	return ok
}
