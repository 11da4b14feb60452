package gascity

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// Today's gc finds its city (cmd/gc/main.go resolveContextAllowRemote,
// city_discovery.go findCityWithOptions; read at zookanalytics/gascity
// 9e89da7c7, which carries upstream to ed267ad66): one layout a case,
// each named for the rule of gc's that decides it. Rig bindings live in
// each registered city's .gc/site.toml; April's ~/.gc/cities.toml rigs
// and city.toml rig paths no longer bind.
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
	town := filepath.Join(home, "cities", "town")
	other := filepath.Join(home, "cities", "other")
	rig := filepath.Join(home, "code", "frontend")  // bound to town, outside it
	shared := filepath.Join(home, "code", "shared") // bound in both cities
	stray := filepath.Join(home, "code", "api")     // bound to town, with a leftover .gc/ of its own
	oldRig := filepath.Join(home, "code", "legacy") // April: only in cities.toml's [[rigs]]
	pathRig := filepath.Join(home, "code", "pathrig")
	for _, d := range []string{filepath.Join(rig, "src", "ui"), shared, filepath.Join(stray, ".gc"), oldRig, pathRig, filepath.Join(home, "elsewhere")} {
		os.MkdirAll(d, 0o755)
	}
	write(filepath.Join(gcHome, "cities.toml"), `
[[cities]]
path = "`+town+`"
name = "town"

[[cities]]
path = "`+other+`"
name = "other"

[[rigs]]
path = "`+oldRig+`"
name = "legacy"
default_city = "`+town+`"
`)
	write(filepath.Join(town, "city.toml"), "[[rigs]]\nname = \"frontend\"\n\n[[rigs]]\nname = \"shared\"\n\n[[rigs]]\nname = \"api\"\n\n[[rigs]]\nname = \"pathrig\"\npath = \""+pathRig+"\"\n")
	write(filepath.Join(town, ".gc", "site.toml"), "[[rigs]]\nname = \"frontend\"\npath = \"../../code/frontend\"\n\n[[rigs]]\nname = \"shared\"\npath = \""+shared+"\"\n\n[[rigs]]\nname = \"api\"\npath = \""+stray+"\"\n")
	write(filepath.Join(other, "city.toml"), "[[rigs]]\nname = \"shared\"\n")
	write(filepath.Join(other, ".gc", "site.toml"), "[[rigs]]\nname = \"shared\"\npath = \""+shared+"\"\n")
	tw, oth := filepath.Join(town, ".chipset"), filepath.Join(other, ".chipset")
	work, elsewhere := filepath.Join(rig, "src", "ui"), filepath.Join(home, "elsewhere")
	for _, tc := range []struct {
		rule   string
		env    map[string]string
		wd     string
		parent *GC
		want   string
	}{
		{"step 9: a rig bound in its city's .gc/site.toml, worked in from outside the city", nil, work, nil, tw},
		{"step 6: GC_RIG by name, through site.toml", map[string]string{"GC_RIG": "frontend"}, elsewhere, nil, tw},
		{"step 6: GC_RIG by path, the deepest binding at or above it", map[string]string{"GC_RIG": work}, elsewhere, nil, tw},
		{"step 6: a rig bound in two cities decides nothing; GC_DIR does (step 8)", map[string]string{"GC_RIG": "shared", "GC_DIR": other}, elsewhere, nil, oth},
		{"step 5 before step 6: GC_CITY before GC_RIG", map[string]string{"GC_CITY": other, "GC_RIG": "frontend"}, work, nil, oth},
		{"step 5: GC_CITY a registered city's name", map[string]string{"GC_CITY": "other"}, elsewhere, nil, oth},
		{"step 2: gc --city DIR, before GC_CITY", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, City: "cities/town"}, tw},
		{"step 2: gc --city NAME, a registered city", nil, elsewhere, &GC{Dir: home, City: "town"}, tw},
		{"step 3: gc --rig NAME, before GC_CITY", map[string]string{"GC_CITY": other}, elsewhere, &GC{Dir: home, Rig: "frontend"}, tw},
		{"step 7 before step 8: GC_DIR a bound rig with a stray .gc/ is its city's, not an older city", map[string]string{"GC_DIR": stray}, elsewhere, nil, tw},
		{"step 10: the walk up stops at $HOME; ~/.gc is the supervisor's, no city", nil, elsewhere, nil, ""},
		{"April's layout: a rig only in cities.toml's [[rigs]] binds nothing now", map[string]string{"GC_RIG": "legacy"}, oldRig, nil, ""},
		{"April's layout: a rig path only in city.toml binds nothing now", map[string]string{"GC_RIG": "pathrig"}, pathRig, nil, ""},
		{"step 10: GC_CEILING_DIRECTORIES adds ceilings, $HOME stays one", map[string]string{"GC_CEILING_DIRECTORIES": filepath.Join(town, "sub")}, filepath.Join(town, "sub", "deep"), nil, ""},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			env := map[string]string{"HOME": home, "TMPDIR": tmp}
			for k, v := range tc.env {
				env[k] = v
			}
			os.MkdirAll(tc.wd, 0o755)
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
	if got := CityRoot(env("GC_HOME", moved), work, nil); got != tw {
		t.Fatalf("with $GC_HOME: %q, want %q", got, tw)
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
