// Package buildinfo says which build of mailfs is running.
package buildinfo

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

// stamp is the release's version, stamped by the release build
// (.goreleaser.yaml: -ldflags "-X …/internal/buildinfo.stamp=1.2.3"); ""
// in any other build. It is the one variable a linker sets: a build can
// say its version no other way.
var stamp string

// Version is the release's version where the release build stamped one,
// else the module version; then, for a build from a clone, the VCS
// revision, its time, and whether the tree was modified.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	v = cmp.Or(v, "(devel)")
	if stamp != "" {
		v = stamp
	}
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		v += " " + set["vcs"] + " " + rev
		if t := set["vcs.time"]; t != "" {
			v += " " + t
		}
		if set["vcs.modified"] == "true" {
			v += " (modified)"
		}
	}
	return v + " " + bi.GoVersion
}

// Describe gives a helper program's flag set a usage that says what the
// program is above its flags: the helpers are run by mailfs's commands,
// and a person who runs one by hand learns which, and where the help is.
func Describe(fs *flag.FlagSet, synopsis, about string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n\nFlags:\n", synopsis, about)
		fs.PrintDefaults()
	}
}

// ParseFlags parses a helper program's flags, with -version added: done
// is true when the program should exit now with code — 0 after -h (the
// usage, printed, was what was asked for) or -version (printed to
// stdout), 80 for a usage error (flag has said it on the flag set's
// output).
func ParseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (done bool, code int) {
	version := fs.Bool("version", false, "print the version and exit")
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return true, 0
	case err != nil:
		return true, 80
	case *version:
		fmt.Fprintln(stdout, Version())
		return true, 0
	}
	return false, 0
}
