//go:build unix

package durable

// A Step is a point in a durable write, named for fault-injection tests.
type Step int

// The steps of a write, in order. A fault at a step acts as if the system
// call just before it had failed, or as if the process had died there.
const (
	StepCreateTemp Step = iota + 1 // the dot-temp exists, empty
	StepWrite                      // the temp holds the data, not yet fsynced
	StepSync                       // the temp is fsynced, not yet renamed
	StepRename                     // the rename is done, the directory not yet fsynced
	StepSyncDir                    // the directory is about to be fsynced
	StepDone                       // the directory is fsynced: the write is durable

	// StepLinked is reached only in the fallback rename (link, then
	// unlink): the file has its new name and still its old one.
	StepLinked
)

var stepNames = [...]string{"", "create-temp", "write", "fsync", "rename", "fsync-dir", "done", "linked"}

func (s Step) String() string {
	if s > 0 && int(s) < len(stepNames) {
		return stepNames[s]
	}
	return "step?"
}

// SetFault installs f, called at each step of every write under r with the
// root-relative path being written; an error it returns fails the write at
// that point. It exists for tests in this module (the package is internal)
// and must be called before r is used.
func SetFault(r *Root, f func(step Step, path string) error) { r.fault = f }

func (r *Root) step(s Step, path string) error {
	if r.fault == nil {
		return nil
	}
	return r.fault(s, path)
}
