// Package town opens a town's mail the one way every mailfs program does —
// the command line, the MCP server, the web view and the Gas City provider
// — so that they agree on where the root is, this host's name, whether the
// indexes are used, and where warnings go.
package town

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
		return flag, nil
	}
	if env := getenv("MAILFS_ROOT"); env != "" {
		return env, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	if city {
		if root := CityRoot(getenv, wd); root != "" {
			return root, nil
		}
	}
	return maildir.FindRoot(wd), nil
}

// CityRoot returns the mailfs root of the Gas City city the process runs
// in, found as Gas City's own gc finds its city, or "" outside any city:
// $GC_CITY, $GC_CITY_PATH or $GC_CITY_ROOT when it names a city directory
// (one holding city.toml or .gc/); else the city above $GC_DIR (an agent's
// working directory); else the city above wd. A city is the nearest
// directory holding city.toml, else the nearest holding .gc/. The root is
// the nearest .chipset in the city's directory or above it, else
// <city>/.chipset: every agent of a city, whatever rig it works in, shares
// one root.
func CityRoot(getenv func(string) string, wd string) string {
	for _, key := range []string{"GC_CITY", "GC_CITY_PATH", "GC_CITY_ROOT"} {
		if dir := strings.TrimSpace(getenv(key)); dir != "" && isCity(dir) {
			abs, err := filepath.Abs(dir)
			if err == nil {
				return maildir.FindRoot(abs)
			}
		}
	}
	for _, from := range []string{strings.TrimSpace(getenv("GC_DIR")), wd} {
		if from == "" {
			continue
		}
		if city := findCity(from); city != "" {
			return maildir.FindRoot(city)
		}
	}
	return ""
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
// else the nearest holding .gc/ (an older city), or "".
func findCity(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	legacy := ""
	for {
		if st, err := os.Stat(filepath.Join(dir, "city.toml")); err == nil && !st.IsDir() {
			return dir
		}
		if st, err := os.Stat(filepath.Join(dir, ".gc")); legacy == "" && err == nil && st.IsDir() {
			legacy = dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return legacy
		}
		dir = parent
	}
}
