package nudgeq_test

import "github.com/mailfs/mailfs/maildir"

// mbox parses a written address for a test, as the command line's edge
// does (a bare name is the agent); it panics on a bad one.
func mbox(s string) maildir.Address {
	a, err := maildir.ParseMailbox(s)
	if err != nil {
		panic(err)
	}
	return a
}
