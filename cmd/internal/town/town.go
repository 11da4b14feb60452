// Package town opens a town's mail the one way every mailfs program does —
// the command line, the per-turn hooks, the MCP server, the web view and
// the Gas City provider (through package citytown) — so that they agree
// on where the root is, this host's name, whether the indexes are used,
// and where warnings go.
package town

import (
	"fmt"
	"os"
	"path/filepath"

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
	// Near, if set, finds the root from the working directory before the
	// nearest .chipset is looked for ("" when it finds none): the Gas City
	// provider's finds the city's (package citytown). It is a function,
	// not a switch, so that the programs that need none link none.
	Near func(getenv func(string) string, wd string) string
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
	root, err := Root(c.Root, c.Near, getenv)
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
	q := nudgeq.OfStore(s)
	q.Warn = warn
	return s, q, nil
}

// Root is the root a program uses: flag, else $MAILFS_ROOT (empty counts
// as unset, as shells mean it), else the one near finds (if set), else
// the nearest .chipset in the working directory or above it, else
// ./.chipset.
func Root(flag string, near func(getenv func(string) string, wd string) string, getenv func(string) string) (string, error) {
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
	if near != nil {
		if root := near(getenv, wd); root != "" {
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
