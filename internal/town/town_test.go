package town

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

func touch(t *testing.T, path string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

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

// Every program finds the root the same way: the flag, else $MAILFS_ROOT
// (empty is unset), else (for the Gas City provider) the city's, else the
// nearest .chipset above the working directory; a bad host name or index
// setting is said, not silently used.
func TestOpenIsTheOnePath(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	touch(t, filepath.Join(city, "city.toml"))
	wd := filepath.Join(city, "rigs", "a")
	os.MkdirAll(filepath.Join(base, "work", ".chipset"), 0o700)
	os.MkdirAll(wd, 0o755)
	t.Chdir(wd)
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	root := func(flag string, city bool) string {
		t.Helper()
		r, err := Root(flag, city, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if got := root("/x/.chipset", true); got != "/x/.chipset" {
		t.Fatalf("the flag: %s", got)
	}
	env["MAILFS_ROOT"] = "/env/.chipset"
	if got := root("", true); got != "/env/.chipset" {
		t.Fatalf("$MAILFS_ROOT: %s", got)
	}
	env["MAILFS_ROOT"] = ""
	if got := root("", true); got != filepath.Join(city, ".chipset") {
		t.Fatalf("the city: %s", got)
	}
	if got := root("", false); got != filepath.Join(wd, ".chipset") {
		t.Fatalf("no city, no .chipset above: %s", got)
	}
	var warned []error
	env["MAILFS_INDEX"] = "maybe"
	s, q, err := Open(Config{Root: filepath.Join(base, "work", ".chipset"), Getenv: getenv, Warn: func(err error) { warned = append(warned, err) }})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	q.Close()
	if len(warned) != 1 || s.NoIndex {
		t.Fatalf("an unknown $MAILFS_INDEX: warned %v, index off %v", warned, s.NoIndex)
	}
	env["MAILFS_HOST"] = "../x"
	if _, _, err := Open(Config{Getenv: getenv}); !errors.Is(err, maildir.ErrInvalidHost) {
		t.Fatalf("a bad $MAILFS_HOST: %v", err)
	}
}

// Gas City's rig registry, its --city and --rig, and the bounds of its walk
// up, each as cmd/gc's resolveContext takes them (its cases, in its order).
func TestCityRootFollowsGasCityRigsAndFlags(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	gcHome := filepath.Join(home, ".gc") // the supervisor's home: looks like an older city
	os.MkdirAll(gcHome, 0o755)
	city := filepath.Join(home, "cities", "town")
	touch(t, filepath.Join(city, "city.toml"))
	other := filepath.Join(home, "cities", "other")
	touch(t, filepath.Join(other, "city.toml"))
	rig := filepath.Join(home, "code", "frontend") // a rig outside its city
	work := filepath.Join(rig, "src", "ui")
	os.MkdirAll(work, 0o755)
	shared := filepath.Join(home, "code", "shared") // a rig in two cities
	os.MkdirAll(shared, 0o755)
	lone := filepath.Join(home, "code", "lone") // a rig in one city, no default
	os.MkdirAll(lone, 0o755)
	elsewhere := filepath.Join(home, "elsewhere")
	os.MkdirAll(elsewhere, 0o755)
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(gcHome, "cities.toml"), `
[[cities]]
path = "`+city+`"
name = "town"

[[cities]]
path = "`+other+`"
name = "other"

[[rigs]]
path = "`+rig+`"
name = "frontend"
default_city = "`+city+`"

[[rigs]]
path = "`+shared+`"
name = "shared"

[[rigs]]
path = "`+lone+`"
name = "lone"
`)
	write(filepath.Join(city, "city.toml"), "[[rigs]]\nname = \"shared\"\npath = \""+shared+"\"\n\n[[rigs]]\nname = \"lone\"\npath = \"../../code/lone\"\n")
	write(filepath.Join(other, "city.toml"), "[[rigs]]\nname = \"shared\"\npath = \""+shared+"\"\n")
	town, oth := filepath.Join(city, ".chipset"), filepath.Join(other, ".chipset")
	for _, tc := range []struct {
		name   string
		env    map[string]string
		wd     string
		parent *GC
		want   string
	}{
		{"a registered rig outside its city: its default city, not ~/.gc as an older city", nil, work, nil, town},
		{"GC_RIG by name", map[string]string{"GC_RIG": "frontend"}, elsewhere, nil, town},
		{"GC_RIG by path", map[string]string{"GC_RIG": work}, elsewhere, nil, town},
		{"GC_RIG with no default: the one city that lists it (relative path)", map[string]string{"GC_RIG": "lone"}, elsewhere, nil, town},
		{"GC_RIG in two cities and no default: not a guess; GC_DIR decides", map[string]string{"GC_RIG": "shared", "GC_DIR": other}, elsewhere, nil, oth},
		{"GC_CITY before GC_RIG", map[string]string{"GC_CITY": other, "GC_RIG": "frontend"}, work, nil, oth},
		{"gc --city before GC_CITY", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, City: "cities/town"}, town},
		{"gc --rig before GC_CITY", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, Rig: "frontend"}, town},
		{"gc --city that is no city: the rest of the chain", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, City: "nowhere"}, oth},
		{"the walk up stops below $HOME", nil, elsewhere, nil, ""},
		{"GC_CEILING_DIRECTORIES sets the ceilings", map[string]string{"GC_CEILING_DIRECTORIES": filepath.Join(home, "cities", "town")}, filepath.Join(city, "sub"), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"HOME": home}
			for k, v := range tc.env {
				env[k] = v
			}
			os.MkdirAll(tc.wd, 0o755)
			if got := CityRoot(func(k string) string { return env[k] }, tc.wd, tc.parent); got != tc.want {
				t.Fatalf("CityRoot = %q, want %q", got, tc.want)
			}
		})
	}
	// A city.toml above $HOME is past the ceiling: gc stops its walk there.
	touch(t, filepath.Join(base, "city.toml"))
	if got := CityRoot(func(k string) string { return map[string]string{"HOME": home}[k] }, elsewhere, nil); got != "" {
		t.Fatalf("a city above $HOME was found: %q", got)
	}
	// $GC_HOME moves the registry and the ignored runtime root.
	moved := filepath.Join(base, "gchome")
	os.MkdirAll(moved, 0o755)
	os.Rename(filepath.Join(gcHome, "cities.toml"), filepath.Join(moved, "cities.toml"))
	if got := CityRoot(func(k string) string { return map[string]string{"HOME": home, "GC_HOME": moved}[k] }, work, nil); got != town {
		t.Fatalf("with $GC_HOME: %q, want %q", got, town)
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
