package gascity

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// Agents working in different rigs of one city share one root: mail sent
// from one rig is in the inbox read from another.
func TestOneCityOneRoot(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	touch(t, filepath.Join(city, "city.toml"))
	t.Setenv("MAILFS_ROOT", "")
	call := func(wd, stdin string, args ...string) string {
		t.Helper()
		os.MkdirAll(wd, 0o755)
		t.Chdir(wd)
		var out, errb bytes.Buffer
		if code := Run(args, strings.NewReader(stdin), &out, &errb); code != 0 {
			t.Fatalf("%v in %s: %d %s", args, wd, code, errb.String())
		}
		return out.String()
	}
	call(filepath.Join(city, "rigs", "frontend"), `{"from":"frontend/polecat","subject":"done","body":"x"}`, "send", "mayor")
	call(filepath.Join(city, "rigs", "backend", "deep"), `{"from":"backend/witness","subject":"ok","body":"y"}`, "send", "mayor")
	if out := call(city, "", "inbox", "mayor"); strings.Count(out, `"id"`) != 2 {
		t.Fatalf("the mayor's inbox, read in the city, does not hold both rigs' mail: %s", out)
	}
	if entries, _ := os.ReadDir(filepath.Join(city, "rigs", "frontend")); len(entries) != 0 {
		t.Fatalf("a root was made in the rig: %v", entries)
	}
}
