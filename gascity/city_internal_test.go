package gascity

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// The root is found as Gas City's gc finds its city: explicit city
// variables naming a city directory, then the city above $GC_DIR, then the
// city above the working directory; city.toml before an older .gc/.
func TestCityRootFollowsGasCityDiscovery(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	touch(t, filepath.Join(city, "city.toml"))
	rig := filepath.Join(city, "rigs", "frontend", "src")
	os.MkdirAll(rig, 0o755)
	legacy := filepath.Join(base, "old")
	os.MkdirAll(filepath.Join(legacy, ".gc"), 0o755)
	os.MkdirAll(filepath.Join(legacy, "rig", ".gc"), 0o755) // a rig's runtime folder, below
	elsewhere := filepath.Join(base, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	want := filepath.Join(city, ".chipset")
	for _, tc := range []struct {
		name string
		env  map[string]string
		wd   string
		want string
	}{
		{"working in a rig", nil, rig, want},
		{"GC_CITY names the city", map[string]string{"GC_CITY": city}, elsewhere, want},
		{"GC_CITY_PATH", map[string]string{"GC_CITY_PATH": city}, elsewhere, want},
		{"GC_CITY_ROOT", map[string]string{"GC_CITY_ROOT": city}, elsewhere, want},
		{"GC_CITY a name, not a directory: GC_DIR decides", map[string]string{"GC_CITY": "mycity", "GC_DIR": rig}, elsewhere, want},
		{"GC_DIR before the working directory", map[string]string{"GC_DIR": rig}, elsewhere, want},
		{"an older city: the nearest .gc/", nil, filepath.Join(legacy, "rig"), filepath.Join(legacy, "rig", ".chipset")},
		{"no city", nil, elsewhere, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CityRoot(func(k string) string { return tc.env[k] }, tc.wd, nil)
			if got != tc.want {
				t.Fatalf("CityRoot = %q, want %q", got, tc.want)
			}
		})
	}
	// A .chipset above the city is the city's root.
	os.MkdirAll(filepath.Join(base, ".chipset"), 0o755)
	if got := CityRoot(func(string) string { return "" }, rig, nil); got != filepath.Join(base, ".chipset") {
		t.Fatalf("with a .chipset above the city: %q", got)
	}
}

// The files gc writes, byte for byte (gascity 9e89da7c7, BurntSushi toml
// v1.6.0; reproduced with gc's own structs and encoder settings):
// .gc/site.toml by persistSiteBinding (SiteBinding, Indent ""), the
// [[rigs]] block `gc rig add` appends to city.toml
// (AppendRigAndWriteSiteBindingsForEdit, path stripped, Indent ""), and
// the supervisor's cities.toml (Registry.Register, the default indent).

// gcSiteTOML is .gc/site.toml binding each name to its path, in gc's
// order (sorted by name).
func gcSiteTOML(rigs ...[2]string) string {
	slices.SortFunc(rigs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	var tables []string
	for _, r := range rigs {
		tables = append(tables, fmt.Sprintf("[[rig]]\nname = %q\npath = %q\n", r[0], r[1]))
	}
	return strings.Join(tables, "\n")
}

// gcRigBlock is what `gc rig add` appends to city.toml for one rig.
func gcRigBlock(name string) string { return fmt.Sprintf("\n[[rigs]]\nname = %q\n", name) }

// gcRegistry is the supervisor's cities.toml, cities as {path, name}.
func gcRegistry(cities ...[2]string) string {
	var tables []string
	for _, c := range cities {
		tables = append(tables, fmt.Sprintf("[[cities]]\n  path = %q\n  name = %q\n", c[0], c[1]))
	}
	return strings.Join(tables, "\n")
}

// The writers above give what gc's own encoder gives (checked against
// it once; pinned here so that a change shows).
func TestGCWriters(t *testing.T) {
	if got, want := gcSiteTOML([2]string{"frontend", "../../code/frontend"}, [2]string{"api", "/abs/api"}),
		"[[rig]]\nname = \"api\"\npath = \"/abs/api\"\n\n[[rig]]\nname = \"frontend\"\npath = \"../../code/frontend\"\n"; got != want {
		t.Errorf("site.toml:\n%s\nwant\n%s", got, want)
	}
	if got, want := gcRegistry([2]string{"/abs/town", "town"}, [2]string{"/abs/other", "other"}),
		"[[cities]]\n  path = \"/abs/town\"\n  name = \"town\"\n\n[[cities]]\n  path = \"/abs/other\"\n  name = \"other\"\n"; got != want {
		t.Errorf("cities.toml:\n%s\nwant\n%s", got, want)
	}
}

// Each discovery layout, in files gc writes, and the city gc chooses for
// it (cmd/gc/main.go resolveContextAllowRemote, city_discovery.go,
// internal/config/site_binding.go; zookanalytics/gascity 9e89da7c7): a
// case per layout, named for it. Where gc fails instead (a rig name bound
// in two cities, an unknown --rig), it never runs the provider; the cases
// here are those where gc goes on, to a city or to none.
func TestCityRootFollowsTodaysGC(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	tmp := filepath.Join(base, "tmp")
	gcHome := filepath.Join(home, ".gc") // the supervisor's: looks like an older city, never is one
	for _, d := range []string{gcHome, tmp} {
		os.MkdirAll(d, 0o755)
	}
	write := func(path, data string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code := func(p ...string) string { return filepath.Join(append([]string{home, "code"}, p...)...) }
	town := filepath.Join(home, "cities", "town")
	other := filepath.Join(home, "cities", "other")
	local := filepath.Join(home, "cities", "local")   // not registered
	oldfmt := filepath.Join(home, "cities", "oldfmt") // registered, site.toml in the [[rigs]] form gc never wrote
	for _, d := range []string{code("frontend", "src", "ui"), code("shared"), code("api", ".gc"), code("legacy"), code("pathrig"),
		code("mono", "sub", "x"), code("mono", "y"), code("tools"), code("solo"), code("legacyfmt"), code("unbound"),
		code("loose", ".gc"), filepath.Join(home, "old", ".gc"), filepath.Join(home, "elsewhere"), filepath.Join(town, "sub", "dir")} {
		os.MkdirAll(d, 0o755)
	}
	write(filepath.Join(gcHome, "cities.toml"), gcRegistry([2]string{town, "town"}, [2]string{other, "other"}, [2]string{oldfmt, "oldfmt"})+`
[[rigs]]
  path = "`+code("legacy")+`"
  name = "legacy"
  default_city = "`+town+`"
`)
	townTOML := "include = [\"rigs.toml\"]\n\n[workspace]\n"
	for _, r := range []string{"frontend", "shared", "api", "mono", "unbound"} {
		townTOML += gcRigBlock(r)
	}
	townTOML += "\n[[rigs]]\nname = \"pathrig\"\npath = \"" + code("pathrig") + "\"\n" // pre-1.0: a path in city.toml
	write(filepath.Join(town, "city.toml"), townTOML)
	write(filepath.Join(town, "rigs.toml"), gcRigBlock("tools"))
	write(filepath.Join(town, ".gc", "site.toml"), gcSiteTOML(
		[2]string{"frontend", "../../code/frontend"}, [2]string{"shared", code("shared")}, [2]string{"api", code("api")},
		[2]string{"mono", code("mono")}, [2]string{"tools", code("tools")}, [2]string{"ghost", code("unbound")}))
	write(filepath.Join(other, "city.toml"), "[workspace]\n"+gcRigBlock("shared")+gcRigBlock("sub"))
	write(filepath.Join(other, ".gc", "site.toml"), gcSiteTOML([2]string{"shared", code("shared")}, [2]string{"sub", code("mono", "sub")}))
	write(filepath.Join(local, "city.toml"), "[workspace]\n"+gcRigBlock("solo"))
	write(filepath.Join(local, ".gc", "site.toml"), gcSiteTOML([2]string{"solo", code("solo")}))
	write(filepath.Join(oldfmt, "city.toml"), "[workspace]\n"+gcRigBlock("legacyfmt"))
	write(filepath.Join(oldfmt, ".gc", "site.toml"), "[[rigs]]\nname = \"legacyfmt\"\npath = \""+code("legacyfmt")+"\"\n")
	root := func(city string) string { return filepath.Join(city, ".chipset") }
	elsewhere := filepath.Join(home, "elsewhere")
	for _, tc := range []struct {
		layout string
		env    map[string]string
		wd     string
		parent *GC
		want   string
	}{
		// gc finds a city
		{"working in the city", nil, filepath.Join(town, "sub", "dir"), nil, root(town)},
		{"working in a rig bound outside the city (a relative binding)", nil, code("frontend", "src", "ui"), nil, root(town)},
		{"GC_RIG a bound rig's name", map[string]string{"GC_RIG": "frontend"}, elsewhere, nil, root(town)},
		{"GC_RIG a path below a bound rig", map[string]string{"GC_RIG": code("frontend", "src")}, elsewhere, nil, root(town)},
		{"GC_DIR a bound rig with a stray .gc/", map[string]string{"GC_DIR": code("api")}, elsewhere, nil, root(town)},
		{"gc --rig NAME", nil, elsewhere, &GC{Dir: elsewhere, Rig: "frontend"}, root(town)},
		{"gc --city with --rig: the city", nil, elsewhere, &GC{Dir: elsewhere, City: "other", Rig: "frontend"}, root(other)},
		{"working in a bound rig with a stray .gc/", nil, code("api"), nil, root(town)},
		{"nested bindings: the deeper rig's city", nil, code("mono", "sub", "x"), nil, root(other)},
		{"nested bindings: the outer rig's city", nil, code("mono", "y"), nil, root(town)},
		{"a rig declared in an included fragment", nil, code("tools"), nil, root(town)},
		{"GC_CITY a city directory", map[string]string{"GC_CITY": other}, elsewhere, nil, root(other)},
		{"GC_CITY a registered name", map[string]string{"GC_CITY": "other"}, elsewhere, nil, root(other)},
		{"GC_CITY before GC_RIG", map[string]string{"GC_CITY": other, "GC_RIG": "frontend"}, code("frontend"), nil, root(other)},
		{"gc --city DIR before GC_CITY", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, City: "cities/town"}, root(town)},
		{"gc --city NAME", nil, elsewhere, &GC{Dir: elsewhere, City: "town"}, root(town)},
		{"GC_DIR in a city", map[string]string{"GC_DIR": other}, elsewhere, nil, root(other)},
		{"GC_RIG a rig of the unregistered city above GC_DIR", map[string]string{"GC_RIG": "solo", "GC_DIR": local}, elsewhere, nil, root(local)},
		{"an older city: the nearest .gc/", nil, filepath.Join(home, "old"), nil, root(filepath.Join(home, "old"))},
		{"an unbound rig's stray .gc/ is an older city", nil, code("loose"), nil, root(code("loose"))},
		// gc finds no city
		{"no city: elsewhere under $HOME (~/.gc is the supervisor's)", nil, elsewhere, nil, ""},
		{"no city: a rig bound in two cities", nil, code("shared"), nil, ""},
		{"no city: a rig only in April's cities.toml [[rigs]]", nil, code("legacy"), nil, ""},
		{"no city: a rig path only in city.toml (pre-1.0)", nil, code("pathrig"), nil, ""},
		{"no city: site.toml [[rigs]] tables, which gc never reads", nil, code("legacyfmt"), nil, ""},
		{"no city: a binding for a rig city.toml does not declare", nil, code("unbound"), nil, ""},
		{"no city: an unregistered city's rig, worked in", nil, code("solo"), nil, ""},
		{"no city: GC_CEILING_DIRECTORIES stops the walk", map[string]string{"GC_CEILING_DIRECTORIES": filepath.Join(town, "sub")}, filepath.Join(town, "sub", "dir"), nil, ""},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			env := map[string]string{"HOME": home, "TMPDIR": tmp}
			for k, v := range tc.env {
				env[k] = v
			}
			if got := CityRoot(func(k string) string { return env[k] }, tc.wd, tc.parent); got != tc.want {
				t.Fatalf("CityRoot = %q, want %q", got, tc.want)
			}
		})
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{"HOME": home, "TMPDIR": tmp}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	work := code("frontend", "src", "ui")
	// city_discovery.go: a city.toml in $HOME itself is a city (the walk
	// looks in a ceiling before it stops there).
	touch(t, filepath.Join(home, "city.toml"))
	if got := CityRoot(env(), elsewhere, nil); got != filepath.Join(home, ".chipset") {
		t.Fatalf("a city.toml in $HOME: %q", got)
	}
	os.Remove(filepath.Join(home, "city.toml"))
	// The temp dir is a ceiling too: a city above it is not found, and a
	// .gc/ in one of its ancestors is a running city's runtime, not a city.
	inTmp := filepath.Join(tmp, "job")
	os.MkdirAll(inTmp, 0o755)
	touch(t, filepath.Join(base, "city.toml"))
	if got := CityRoot(env(), inTmp, nil); got != "" {
		t.Fatalf("a city above the temp dir was found: %q", got)
	}
	os.Remove(filepath.Join(base, "city.toml"))
	os.MkdirAll(filepath.Join(base, ".gc"), 0o755)
	if got := CityRoot(env("HOME", ""), inTmp, nil); got != "" {
		t.Fatalf("a .gc/ above the temp dir was taken for a city: %q", got)
	}
	// $GC_HOME moves the registry (and the ignored runtime folder).
	moved := filepath.Join(base, "gchome")
	os.MkdirAll(moved, 0o755)
	os.Rename(filepath.Join(gcHome, "cities.toml"), filepath.Join(moved, "cities.toml"))
	if got := CityRoot(env("GC_HOME", moved), work, nil); got != root(town) {
		t.Fatalf("with $GC_HOME: %q, want %q", got, root(town))
	}
	if got := CityRoot(env(), work, nil); got != "" {
		t.Fatalf("without the registry the rig binds nothing: %q", got)
	}
}

// The gc command line a provider runs under: --city and --rig, joined or
// not, relative to gc's own working directory.
func TestParseGC(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want GC
	}{
		{[]string{"gc", "mail", "send", "x"}, GC{Dir: "/w"}},
		{[]string{"gc", "--city", "/c", "mail", "inbox"}, GC{Dir: "/w", City: "/c"}},
		{[]string{"gc", "--city=../c", "--rig=fe", "mail"}, GC{Dir: "/w", City: "../c", Rig: "fe"}},
		{[]string{"gc", "mail", "send", "--", "--city", "/c"}, GC{Dir: "/w"}},
	} {
		if got := parseGC(tc.args, "/w"); *got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.args, *got, tc.want)
		}
	}
}

// TestMain lets the test binary be the provider a fake gc runs.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_GC_PROVIDER") != "" {
		b, _ := json.Marshal(ParentGC())
		os.Stdout.Write(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A provider run by gc reads gc's --city and --rig from its command line,
// which gc does not pass on.
func TestParentGC(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ParentGC reads /proc")
	}
	gc := filepath.Join(t.TempDir(), "gc")
	if out, err := exec.Command("go", "build", "-o", gc, "./testdata/gc").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	self, _ := os.Executable()
	dir := t.TempDir()
	cmd := exec.Command(gc, "--city", "../town", "mail", "inbox", "--rig=frontend")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "FAKE_GC_PROVIDER="+self)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var got GC
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got.City != "../town" || got.Rig != "frontend" || got.Dir != real {
		t.Fatalf("ParentGC = %+v, want --city ../town, --rig frontend, in %s", got, real)
	}
	// Not under gc: nothing.
	if g := ParentGC(); g != nil {
		t.Fatalf("the test's own parent read as gc: %+v", g)
	}
}
