// Package citytown opens the town of the Gas City city the process runs
// in, for the Gas City provider (gascity.Run): package town's one way,
// with the root found as Gas City finds its city (gascity.CityRoot). It
// is a package of its own so that the programs that serve no city do not
// link the city's configuration readers.
package citytown

import (
	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/gascity"
	"github.com/mailfs/mailfs/maildir"
)

// Open opens the city's town: $MAILFS_ROOT, else the city's root, else the
// nearest .chipset above the working directory; warn receives what
// readers skip.
func Open(warn func(error)) (*maildir.Store, error) {
	s, q, err := town.Open(town.Config{Near: Root, Warn: warn})
	if err == nil {
		q.Close() // the provider reads no nudges
	}
	return s, err
}

// Root is the root of the city around wd, as Gas City finds it, or "".
func Root(getenv func(string) string, wd string) string {
	return gascity.CityRoot(getenv, wd, gascity.ParentGC())
}
