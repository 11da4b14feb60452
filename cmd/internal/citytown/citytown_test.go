package citytown

import (
	"os"
	"path/filepath"
	"testing"
)

// The Gas City provider's root: $MAILFS_ROOT, else the city's around the
// working directory (a city.toml above it), else the nearest .chipset.
func TestOpensTheCitysTown(t *testing.T) {
	base := t.TempDir()
	city := filepath.Join(base, "city")
	wd := filepath.Join(city, "rigs", "a")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(city, "city.toml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd)
	for _, k := range []string{"GC_CITY", "GC_CITY_PATH", "GC_CITY_ROOT", "GC_RIG", "GC_DIR", "MAILFS_HOST"} {
		t.Setenv(k, "")
	}
	t.Setenv("MAILFS_ROOT", "")
	s, err := Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if want := filepath.Join(city, ".chipset"); s.Dir() != want {
		t.Fatalf("opened %s, want the city's %s", s.Dir(), want)
	}
	t.Setenv("MAILFS_ROOT", filepath.Join(base, "env", ".chipset"))
	if s, err = Open(nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if want := filepath.Join(base, "env", ".chipset"); s.Dir() != want {
		t.Fatalf("opened %s, want $MAILFS_ROOT's %s", s.Dir(), want)
	}
	if got := Root(os.Getenv, base); got != "" {
		t.Fatalf("outside the city: %q", got)
	}
}
