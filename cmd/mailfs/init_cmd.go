package main

import (
	"fmt"
	"os"
	"path/filepath"
)

type initCmd struct{}

func (c *initCmd) Help() string {
	return `Creates <root>/state/mail/, <root>/.gitignore (which keeps runtime/ and
in-flight temp files out of git) and <root>/format, the record of the
on-disk format ("mailfs format 1"; a mailfs refuses to write to a root in a
newer format than its own, and reads what it can: see docs/upgrading.md).
Running it again changes nothing. Other commands create the root on their
first write, so init is optional. Below a town (a .chipset in a folder
above), the root is that town's, and init says so: "mailfs --root .chipset
init" makes a new town in the working directory.`
}

func (c *initCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	if err := s.Init(); err != nil {
		return err
	}
	// Neither --root nor $MAILFS_ROOT, and the root found is a town's
	// above the working directory: init made no new town here, so say
	// which one it touched (a person running init expects one here).
	if a.rootFlag == "" {
		if wd, err := os.Getwd(); err == nil && !sameDir(filepath.Dir(s.Dir()), wd) {
			fmt.Fprintf(a.err, "mailfs: hint: the root is %s, a town above the working directory; for a new one here: mailfs --root .chipset init\n", s.Dir())
		}
	}
	return nil
}

// sameDir reports whether a and b name one directory, through symbolic
// links (macOS's /tmp is /private/tmp).
func sameDir(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
