// Package town opens a town's mail the one way every mailfs program does —
// the command line, the MCP server, the web view and the Gas City provider
// — so that they agree on where the root is, this host's name, whether the
// indexes are used, and where warnings go.
package town

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// Config says how a program was asked to open its town.
type Config struct {
	// Root is the root given on the command line (--root); "" means
	// $MAILFS_ROOT, else the one found from the working directory.
	Root string
	// Host is this host's name given on the command line (--host); ""
	// means $MAILFS_HOST, else the root's runtime/host.
	Host string
	// City finds the root as Gas City finds its city (see CityRoot) before
	// looking up from the working directory: the Gas City provider.
	City bool
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Warn receives what readers skip and settings that are ignored; nil
	// drops them.
	Warn func(error)
}

// Open opens the town's store and its nudge queues, wired together (a drain
// drops nudges about mail already read). A host name that is not one is an
// error wrapping [maildir.ErrInvalidHost]; nothing is created.
func Open(c Config) (*maildir.Store, *nudgeq.Queue, error) {
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	warn := c.Warn
	if warn == nil {
		warn = func(error) {}
	}
	root, err := Root(c.Root, c.City, getenv)
	if err != nil {
		return nil, nil, err
	}
	host := c.Host
	if host == "" {
		host = getenv("MAILFS_HOST")
	}
	if host != "" {
		if _, err := maildir.ParseHost(host); err != nil {
			return nil, nil, err
		}
	}
	s, err := maildir.Open(root)
	if err != nil {
		return nil, nil, err
	}
	s.Host = host
	s.Warn = warn
	off, known := maildir.IndexSetting(getenv(maildir.IndexEnv))
	if !known {
		warn(fmt.Errorf("$%s=%q is neither off (off, 0, false, no) nor on (on, 1, true, yes): the indexes stay on", maildir.IndexEnv, getenv(maildir.IndexEnv)))
	}
	s.NoIndex = off
	q, err := nudgeq.Open(s.Dir())
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	q.Warn, q.Mail = warn, s
	return s, q, nil
}

// Root is the root a program uses: flag, else $MAILFS_ROOT (empty counts
// as unset, as shells mean it), else — with city — the Gas City city's,
// else the nearest .chipset in the working directory or above it, else
// ./.chipset.
func Root(flag string, city bool, getenv func(string) string) (string, error) {
	if flag != "" {
		return holder(flag), nil
	}
	if env := getenv("MAILFS_ROOT"); env != "" {
		return holder(env), nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if city {
		if root := CityRoot(getenv, wd, ParentGC()); root != "" {
			return root, nil
		}
	}
	return maildir.FindRoot(wd), nil
}

// holder returns the root a given path means: the path itself, unless it
// is the folder that holds a town — it has a .chipset folder and is no
// root itself (no state/) — then that town's .chipset. A root given as
// the town's folder (MAILFS_ROOT=/town for /town/.chipset) must never
// become a second, empty town beside the first.
func holder(dir string) string {
	if filepath.Base(filepath.Clean(dir)) == maildir.RootName {
		return dir
	}
	if st, err := os.Stat(filepath.Join(dir, "state")); err == nil && st.IsDir() {
		return dir
	}
	inner := filepath.Join(dir, maildir.RootName)
	if st, err := os.Lstat(inner); err == nil && st.IsDir() {
		return inner
	}
	return dir
}

// CityRoot returns the mailfs root of the Gas City city the process runs
// in, or "" outside any city, found by Gas City's own resolution chain
// (cmd/gc's resolveContext), in its order:
//
//  1. gc's --city DIR (parent holds the gc command line the provider runs
//     under, nil if it is not known), a city directory;
//  2. gc's --rig NAME|PATH, through the rig registry;
//  3. $GC_CITY, $GC_CITY_PATH or $GC_CITY_ROOT naming a city directory
//     (one holding city.toml or .gc/);
//  4. $GC_RIG, through the rig registry;
//  5. the city above $GC_DIR (an agent's working directory);
//  6. a rig registered at or above wd with a default city;
//  7. the city above wd.
//
// The rig registry is $GC_HOME/cities.toml (default ~/.gc/cities.toml): a
// rig's default_city, else the one registered city whose city.toml lists
// the rig's path. The walk up (5, 7) stops below $HOME (or each of
// $GC_CEILING_DIRECTORIES), takes the nearest city.toml, else the nearest
// .gc/, and never takes the supervisor's own home ($GC_HOME, ~/.gc) for an
// older city. The root is the nearest .chipset in the city's directory or
// above it, else <city>/.chipset: every agent of a city, whatever rig it
// works in, shares one root.
func CityRoot(getenv func(string) string, wd string, parent *GC) string {
	if city := resolveCity(getenv, wd, parent); city != "" {
		return maildir.FindRoot(city)
	}
	return ""
}

// GC is what the provider can learn of the gc command that runs it.
type GC struct {
	Dir  string // its working directory
	City string // --city, "" if not given
	Rig  string // --rig, "" if not given
}

func resolveCity(getenv func(string) string, wd string, parent *GC) string {
	home := getenv("HOME")
	gcHome := strings.TrimSpace(getenv("GC_HOME"))
	if gcHome == "" && home != "" {
		gcHome = filepath.Join(home, ".gc")
	}
	reg := &registry{}
	if gcHome != "" {
		reg.path = filepath.Join(gcHome, "cities.toml")
	}
	if parent != nil {
		if parent.City != "" {
			if dir := inDir(parent.Dir, parent.City); isCity(dir) {
				return dir
			}
		}
		if parent.Rig != "" {
			if city := reg.rigCity(inDir(parent.Dir, parent.Rig), parent.Rig); city != "" {
				return city
			}
		}
	}
	for _, key := range []string{"GC_CITY", "GC_CITY_PATH", "GC_CITY_ROOT"} {
		if dir := strings.TrimSpace(getenv(key)); dir != "" && isCity(dir) {
			if abs, err := filepath.Abs(dir); err == nil {
				return abs
			}
		}
	}
	if rig := strings.TrimSpace(getenv("GC_RIG")); rig != "" {
		if city := reg.rigCity(inDir(wd, rig), rig); city != "" {
			return city
		}
	}
	var ceilings []string
	if raw := strings.TrimSpace(getenv("GC_CEILING_DIRECTORIES")); raw != "" {
		for _, c := range filepath.SplitList(raw) {
			if c = clean(c); c != "" {
				ceilings = append(ceilings, c)
			}
		}
	} else if home != "" {
		ceilings = []string{clean(home)}
	}
	ignored := clean(gcHome)
	if dir := strings.TrimSpace(getenv("GC_DIR")); dir != "" {
		if city := findCity(dir, ceilings, ignored); city != "" {
			return city
		}
	}
	if e, ok := reg.rigAt(wd); ok && e.DefaultCity != "" {
		return e.DefaultCity
	}
	return findCity(wd, ceilings, ignored)
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

// samePath compares paths as Gas City does: absolute, clean, symbolic
// links resolved.
func samePath(a, b string) bool { return resolved(a) == resolved(b) }

func resolved(p string) string {
	p = clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// isCity reports whether dir is a Gas City city's directory.
func isCity(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "city.toml")); err == nil && !st.IsDir() {
		return true
	}
	st, err := os.Stat(filepath.Join(dir, ".gc"))
	return err == nil && st.IsDir()
}

// findCity walks up from dir to the nearest directory holding city.toml,
// else the nearest holding .gc/ (an older city) that is not the
// supervisor's home, stopping at a ceiling (not looked in), or "".
func findCity(dir string, ceilings []string, ignored string) string {
	dir = clean(dir)
	legacy := ""
	for dir != "" && !slices.Contains(ceilings, dir) {
		if st, err := os.Stat(filepath.Join(dir, "city.toml")); err == nil && !st.IsDir() {
			return dir
		}
		if st, err := os.Stat(filepath.Join(dir, ".gc")); legacy == "" && err == nil && st.IsDir() && filepath.Join(dir, ".gc") != ignored {
			legacy = dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return legacy
}

// registry reads Gas City's rig registry, cities.toml.
type registry struct {
	path string
	file *registryFile
}

type registryFile struct {
	Cities []struct {
		Path string `toml:"path"`
	} `toml:"cities"`
	Rigs []rigEntry `toml:"rigs"`
}

type rigEntry struct {
	Path        string `toml:"path"`
	Name        string `toml:"name"`
	DefaultCity string `toml:"default_city"`
}

func (r *registry) load() *registryFile {
	if r.file == nil {
		r.file = &registryFile{}
		if data, err := os.ReadFile(r.path); r.path != "" && err == nil {
			toml.Unmarshal(data, r.file)
		}
	}
	return r.file
}

// rigAt is the registered rig whose path is dir or above it, the longest.
func (r *registry) rigAt(dir string) (rigEntry, bool) {
	abs := resolved(dir)
	var best rigEntry
	for _, e := range r.load().Rigs {
		if (abs == e.Path || strings.HasPrefix(abs, e.Path+string(filepath.Separator))) && len(e.Path) > len(best.Path) {
			best = e
		}
	}
	return best, best.Path != ""
}

// rigCity is the city of the rig named name, else of the rig at path:
// its default city, else the one registered city whose city.toml lists
// the rig; "" if none or several.
func (r *registry) rigCity(path, name string) string {
	var e rigEntry
	ok := false
	for _, x := range r.load().Rigs {
		if x.Name == name {
			e, ok = x, true
			break
		}
	}
	if !ok {
		if e, ok = r.rigAt(path); !ok {
			return ""
		}
	}
	if e.DefaultCity != "" {
		return e.DefaultCity
	}
	var found []string
	for _, c := range r.load().Cities {
		var cfg struct {
			Rigs []struct {
				Path string `toml:"path"`
			} `toml:"rigs"`
		}
		data, err := os.ReadFile(filepath.Join(c.Path, "city.toml"))
		if err != nil || toml.Unmarshal(data, &cfg) != nil {
			continue
		}
		for _, rig := range cfg.Rigs {
			if samePath(inDir(c.Path, rig.Path), e.Path) {
				found = append(found, c.Path)
				break
			}
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
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
