// Package buildinfo says which build of mailfs is running.
package buildinfo

import "runtime/debug"

// Version is the module version and, for a build from a clone, the VCS
// revision, its time, and whether the tree was modified.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
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
