package town

import (
	"errors"
	"os"
	"path/filepath"
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
			got := CityRoot(func(k string) string { return tc.env[k] }, tc.wd)
			if got != tc.want {
				t.Fatalf("CityRoot = %q, want %q", got, tc.want)
			}
		})
	}
	// A .chipset above the city is the city's root.
	os.MkdirAll(filepath.Join(base, ".chipset"), 0o755)
	if got := CityRoot(func(string) string { return "" }, rig); got != filepath.Join(base, ".chipset") {
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
