package gascity

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mailfs/mailfs/maildir"
)

// CityRoot returns the mailfs root of the Gas City city the process runs
// in, or "" outside any city, found by Gas City's own resolution chain,
// as today's gc has it (cmd/gc/main.go resolveContextAllowRemote and
// city_discovery.go, read at zookanalytics/gascity 9e89da7c7, which
// carries upstream to ed267ad66), in its order:
//
//  1. gc's --city (parent holds the gc command line the provider runs
//     under, nil if not known): a city directory, else a registered
//     city's name;
//  2. gc's --rig NAME|PATH, through the registered cities' rig bindings,
//     then those of the city found without it (which need not be
//     registered: gc's lookupRigFromLocalCity);
//  3. $GC_CITY, $GC_CITY_PATH or $GC_CITY_ROOT naming a city directory
//     (city.toml or .gc/), and $GC_CITY a registered city's name;
//  4. $GC_RIG, as --rig;
//  5. when $GC_DIR holds a .gc/ but no city.toml (a rig with a leftover
//     runtime folder), the rig binding at $GC_DIR — before step 6, so the
//     stray .gc/ is not taken for an older city;
//  6. the city at or above $GC_DIR;
//  7. the rig binding at the working directory;
//  8. the city at or above the working directory.
//
// Registered cities are $GC_HOME/cities.toml's [[cities]] (default
// ~/.gc), named by the name gc recorded: each city's rigs are the
// [[rigs]] its city.toml declares that its own .gc/site.toml binds to a
// path in a [[rig]] table (the machine-local binding gc writes; rig
// paths in city.toml, rigs in cities.toml, and the [[rigs]] tables
// mailfs once read in site.toml bind nothing). A path matches
// the deepest binding at or above it; a name or path bound in more than
// one city decides nothing. The walk up takes a directory holding
// city.toml, else the nearest older city (a .gc/ runtime folder) that is
// not the supervisor's own ($GC_HOME, or ~/.gc) or one in an ancestor of
// the temp dir, and stops at a ceiling — $HOME, the temp dir, and each
// of $GC_CEILING_DIRECTORIES — after looking in it for a city.toml (a
// city at $HOME itself is found; an older city there is not). The root
// is the nearest .chipset in the city's directory or above it, else
// <city>/.chipset: every agent of a city shares one root.
func CityRoot(getenv func(string) string, wd string, parent *GC) string {
	if city := newDiscovery(getenv).resolve(wd, parent); city != "" {
		return maildir.FindRoot(city)
	}
	return ""
}

// A discovery is one resolution's view of the machine: the ceilings and
// ignored runtime folders of the walk up, and the registry.
type discovery struct {
	getenv   func(string) string
	ceilings []string
	ignored  []string // .gc folders that are never an older city
	registry string   // cities.toml
	cities   []cityEntry
	loaded   bool
}

type cityEntry struct {
	Path string `toml:"path"`
	Name string `toml:"name"`
}

func newDiscovery(getenv func(string) string) *discovery {
	d := &discovery{getenv: getenv}
	home := clean(getenv("HOME"))
	tmp := clean(getenv("TMPDIR"))
	if tmp == "" {
		tmp = clean(os.TempDir())
	}
	if raw := strings.TrimSpace(getenv("GC_CEILING_DIRECTORIES")); raw != "" {
		for _, c := range filepath.SplitList(raw) {
			if c = resolved(c); c != "" {
				d.ceilings = append(d.ceilings, c)
			}
		}
	}
	for _, c := range []string{home, tmp} {
		if c != "" {
			d.ceilings = append(d.ceilings, resolved(c))
		}
	}
	gcHome := clean(getenv("GC_HOME"))
	if gcHome == "" && home != "" {
		gcHome = filepath.Join(home, ".gc")
	}
	if gcHome != "" {
		d.ignored = append(d.ignored, resolved(gcHome))
		d.registry = filepath.Join(gcHome, "cities.toml")
	}
	for dir := resolved(tmp); dir != "" && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		d.ignored = append(d.ignored, filepath.Join(dir, ".gc"))
	}
	return d
}

// resolve is the chain of CityRoot, returning the city's directory.
func (d *discovery) resolve(wd string, parent *GC) string {
	if parent != nil {
		if parent.City != "" { // steps 1 and 2 of gc: --city, with or without --rig
			if city := d.cityRef(parent.Dir, parent.City); city != "" {
				return city
			}
		} else if parent.Rig != "" { // step 3 of gc: --rig alone
			if city := d.rigCity(parent.Dir, parent, parent.Rig); city != "" {
				return city
			}
		}
	}
	if city := d.cityEnv(); city != "" {
		return city
	}
	if rig := strings.TrimSpace(d.getenv("GC_RIG")); rig != "" {
		if city := d.rigCity(wd, parent, rig); city != "" {
			return city
		}
	}
	if gcDir := strings.TrimSpace(d.getenv("GC_DIR")); gcDir != "" {
		if hasRuntime(gcDir) && !hasCityConfig(gcDir) {
			if city := d.rigAt(gcDir); city != "" {
				return city
			}
		}
		if city := d.findCity(gcDir); city != "" {
			return city
		}
	}
	if city := d.rigAt(wd); city != "" {
		return city
	}
	return d.findCity(wd)
}

// cityEnv is the city $GC_CITY, $GC_CITY_PATH or $GC_CITY_ROOT names (a
// city directory; $GC_CITY also a registered city's name), as gc's
// resolveExplicitCityPathEnv reads them; else "".
func (d *discovery) cityEnv() string {
	for _, key := range []string{"GC_CITY", "GC_CITY_PATH", "GC_CITY_ROOT"} {
		raw := strings.TrimSpace(d.getenv(key))
		if raw == "" {
			continue
		}
		if isCity(raw) {
			return resolved(raw)
		}
		if key == "GC_CITY" {
			if city := d.cityNamed(raw); city != "" {
				return city
			}
		}
	}
	return ""
}

// cityRef resolves gc's --city: a city directory (relative to gc's own
// working directory), else a registered city's name.
func (d *discovery) cityRef(dir, ref string) string {
	if p := inDir(dir, ref); isCity(p) {
		return resolved(p)
	}
	if !strings.ContainsRune(ref, filepath.Separator) {
		return d.cityNamed(ref)
	}
	return ""
}

// findCity walks up from dir as gc's findCityWithOptions does.
func (d *discovery) findCity(dir string) string {
	dir = resolved(dir)
	legacy := ""
	for dir != "" {
		if hasCityConfig(dir) {
			return dir
		}
		ceiling := slices.Contains(d.ceilings, dir)
		if legacy == "" && !ceiling && hasRuntime(dir) && !slices.Contains(d.ignored, filepath.Join(dir, ".gc")) {
			legacy = dir
		}
		parent := filepath.Dir(dir)
		if ceiling || parent == dir {
			break
		}
		dir = parent
	}
	return legacy
}

// load reads the registered cities once.
func (d *discovery) load() []cityEntry {
	if !d.loaded {
		d.loaded = true
		var f struct {
			Cities []cityEntry `toml:"cities"`
		}
		if data, err := os.ReadFile(d.registry); d.registry != "" && err == nil && toml.Unmarshal(data, &f) == nil {
			d.cities = f.Cities
		}
	}
	return d.cities
}

// cityNamed is the registered city of that name, or "": the name gc
// recorded at registration (a city name is never a path, and an entry
// without one has no name), as gc's LookupCityByName has it.
func (d *discovery) cityNamed(name string) string {
	if !validCityName(name) {
		return ""
	}
	for _, c := range d.load() {
		if c.Name == name {
			return resolved(c.Path)
		}
	}
	return ""
}

// validCityName is gc's supervisor.IsValidCityName: a name that can never
// be a path.
func validCityName(s string) bool {
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return s != ""
}

// A binding is a rig a city declares and binds to a path.
type binding struct{ city, name, path string }

// bindings are every registered city's rig bindings (gc's
// registeredRigBindings); a registration whose city.toml is missing or
// broken binds nothing.
func (d *discovery) bindings() []binding {
	var out []binding
	for _, c := range d.load() {
		out = append(out, cityBindings(c.Path)...)
	}
	return out
}

// A siteBinding is .gc/site.toml as gc reads and writes it
// (internal/config/site_binding.go, SiteBinding): [[rig]] tables of name
// and path. The workspace_name and workspace_prefix beside them name the
// city, which resolution never needs.
type siteBinding struct {
	Rigs []struct {
		Name string `toml:"name"`
		Path string `toml:"path"`
	} `toml:"rig"`
}

// cityBindings are the rigs city's city.toml declares ([[rigs]]) that its
// .gc/site.toml binds to a path ([[rig]]), as gc's siteBoundRigBindings
// builds them: a relative path is the city's, a rig declared but not
// bound, or bound but not declared, binds nothing, and so does a rig path
// written in city.toml itself (pre-1.0).
func cityBindings(city string) []binding {
	declared, ok := declaredRigs(filepath.Join(city, "city.toml"), true)
	if !ok {
		return nil // a stale or broken city
	}
	var site siteBinding
	if data, err := os.ReadFile(filepath.Join(city, ".gc", "site.toml")); err == nil && toml.Unmarshal(data, &site) != nil {
		return nil // gc fails to load this city's bindings
	}
	paths := map[string]string{}
	for _, r := range site.Rigs {
		if n, p := strings.TrimSpace(r.Name), strings.TrimSpace(r.Path); n != "" && p != "" {
			paths[n] = p
		}
	}
	var out []binding
	for _, name := range declared {
		if p := paths[name]; strings.TrimSpace(name) != "" && p != "" {
			out = append(out, binding{city: resolved(city), name: name, path: resolved(inDir(city, p))})
		}
	}
	return out
}

// declaredRigs are the names of the [[rigs]] a city config file declares,
// with those of the fragments its top-level include lists (local files,
// relative to it), when top; false when the file cannot be read or parsed.
func declaredRigs(file string, top bool) ([]string, bool) {
	var cfg struct {
		Include []string `toml:"include"`
		Rigs    []struct {
			Name string `toml:"name"`
		} `toml:"rigs"`
	}
	data, err := os.ReadFile(file)
	if err != nil || toml.Unmarshal(data, &cfg) != nil {
		return nil, false
	}
	var names []string
	for _, r := range cfg.Rigs {
		names = append(names, r.Name)
	}
	for _, inc := range cfg.Include {
		if !top || strings.Contains(inc, "://") {
			continue
		}
		more, ok := declaredRigs(inDir(filepath.Dir(file), inc), false)
		if !ok {
			return nil, false // gc fails to load the city
		}
		names = append(names, more...)
	}
	return names, true
}

// rigAt is the city of the deepest rig binding at or above dir, when
// exactly one city binds it; else "".
func (d *discovery) rigAt(dir string) string { return deepest(d.bindings(), dir) }

// deepest is the city of the deepest of bs at or above dir, when exactly
// one city binds it; else "".
func deepest(bs []binding, dir string) string {
	dir = resolved(dir)
	var best []binding
	for _, b := range bs {
		if dir != b.path && !strings.HasPrefix(dir, b.path+string(filepath.Separator)) {
			continue
		}
		switch {
		case len(best) == 0 || len(b.path) > len(best[0].path):
			best = []binding{b}
		case len(b.path) == len(best[0].path):
			best = append(best, b)
		}
	}
	return oneCity(best)
}

// rigCity resolves a rig given by name, else by path (relative to dir),
// to its city, as gc's resolveRigToContext: the registered cities' bindings
// first, then those of the city found without the rig (gc's
// lookupRigFromLocalCity: --city, the city variables, the city above
// $GC_DIR, the city above dir), which need not be registered.
func (d *discovery) rigCity(dir string, parent *GC, rig string) string {
	if city := rigIn(d.bindings(), dir, rig); city != "" {
		return city
	}
	local := ""
	if parent != nil && parent.City != "" {
		local = d.cityRef(parent.Dir, parent.City)
	}
	if local == "" {
		local = d.cityEnv()
	}
	if gcDir := strings.TrimSpace(d.getenv("GC_DIR")); local == "" && gcDir != "" {
		local = d.findCity(gcDir)
	}
	if local == "" {
		local = d.findCity(dir)
	}
	if local == "" {
		return ""
	}
	return rigIn(cityBindings(local), dir, rig)
}

// rigIn is the city of the rig named rig among bs, else of the deepest
// binding at or above the path rig (relative to dir); else "".
func rigIn(bs []binding, dir, rig string) string {
	var named []binding
	for _, b := range bs {
		if b.name == rig {
			named = append(named, b)
		}
	}
	if len(named) > 0 {
		return oneCity(named)
	}
	return deepest(bs, inDir(dir, rig))
}

// oneCity is the city of bindings when they are all one city's, else "".
func oneCity(bs []binding) string {
	if len(bs) == 0 {
		return ""
	}
	for _, b := range bs[1:] {
		if b.city != bs[0].city {
			return "" // bound in several cities: not a guess
		}
	}
	return bs[0].city
}

// inDir is p, relative to dir when it is not absolute.
func inDir(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

// clean is p absolute and clean, "" for "".
func clean(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	return filepath.Clean(p)
}

// resolved is p absolute, clean, its symbolic links resolved, as gc
// compares paths.
func resolved(p string) string {
	p = clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

func hasCityConfig(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "city.toml"))
	return err == nil && !st.IsDir()
}

func hasRuntime(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ".gc"))
	return err == nil && st.IsDir()
}

// isCity reports whether dir is a Gas City city's directory.
func isCity(dir string) bool { return hasCityConfig(dir) || hasRuntime(dir) }

// GC is what the provider can learn of the gc command that runs it.
type GC struct {
	Dir  string // its working directory
	City string // --city, "" if not given
	Rig  string // --rig, "" if not given
}

// ParentGC reads the gc command line this process runs under, when its
// parent is gc (Linux: /proc), for the --city and --rig gc was given,
// which gc does not pass on to a mail provider; nil otherwise.
func ParentGC() *GC {
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "gc" {
		return nil
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", ppid))
	if err != nil {
		return nil
	}
	dir, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", ppid))
	return parseGC(strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00"), dir)
}

// parseGC reads gc's --city and --rig from its arguments (args[0] is gc).
func parseGC(args []string, dir string) *GC {
	g := &GC{Dir: dir}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, f := range []struct {
			name string
			to   *string
		}{{"--city", &g.City}, {"--rig", &g.Rig}} {
			switch {
			case a == f.name && i+1 < len(args):
				*f.to = args[i+1]
				i++
			case strings.HasPrefix(a, f.name+"="):
				*f.to = strings.TrimPrefix(a, f.name+"=")
			}
		}
	}
	return g
}
