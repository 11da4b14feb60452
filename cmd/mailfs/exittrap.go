package main

import "github.com/alecthomas/kong"

// An exitTrap stands in for os.Exit where kong ends a call itself (after
// --help, --version, --man, or shell completions), so that run returns the
// status instead of ending the process: kong's Exit option is called from
// inside Parse, and returning from it would let Parse go on (and complain
// of the missing command), so the trap unwinds with a panic of its own,
// which its methods recover and nothing else sees.
type exitTrap struct {
	code   int
	exited bool
}

// option is the kong option that routes kong's Exit into t.
func (t *exitTrap) option() kong.Option {
	return kong.Exit(func(code int) {
		t.code, t.exited = code, true
		panic(t)
	})
}

// do runs f, and reports whether kong's Exit ended it; any other panic
// goes on up.
func (t *exitTrap) do(f func()) (exited bool) {
	defer func() {
		if r := recover(); r != nil {
			if r != any(t) {
				panic(r)
			}
			exited = true
		}
	}()
	f()
	return false
}
