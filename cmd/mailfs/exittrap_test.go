package main

import (
	"bytes"
	"errors"
	"testing"

	"github.com/alecthomas/kong"
)

// kong's Exit, called from inside Parse (here by --help and --version),
// ends the parse with its status and nothing after it runs; a parse that
// does not exit is untouched; and any other panic is not swallowed.
func TestExitTrap(t *testing.T) {
	var grammar struct {
		Version kong.VersionFlag
		Go      struct{} `cmd:""`
	}
	for _, tc := range []struct {
		args   []string
		exited bool
	}{
		{[]string{"--help"}, true},
		{[]string{"--version"}, true},
		{[]string{"go"}, false},
	} {
		var trap exitTrap
		var out bytes.Buffer
		parser, err := kong.New(&grammar, trap.option(), kong.Writers(&out, &out), kong.Vars{"version": "v1"})
		if err != nil {
			t.Fatal(err)
		}
		after := false
		exited := trap.do(func() {
			_, err = parser.Parse(tc.args)
			after = true
		})
		if exited != tc.exited || trap.exited != tc.exited || after == tc.exited {
			t.Errorf("%q: exited %v (trap %v), ran on after Parse %v; want exited %v", tc.args, exited, trap.exited, after, tc.exited)
		}
		if tc.exited && (trap.code != 0 || out.Len() == 0) {
			t.Errorf("%q: status %d, output %q", tc.args, trap.code, out.String())
		}
		if !tc.exited && err != nil {
			t.Errorf("%q: %v", tc.args, err)
		}
	}
	// A command that ends with kong's Exit (as a completion request does).
	var trap exitTrap
	parser, err := kong.New(&grammar, trap.option())
	if err != nil {
		t.Fatal(err)
	}
	if !trap.do(func() { parser.Exit(3) }) || trap.code != 3 {
		t.Errorf("Exit(3) in a command: exited %v, status %d", trap.exited, trap.code)
	}
	boom := errors.New("boom")
	defer func() {
		if r := recover(); r != boom {
			t.Errorf("a panic that is not kong's Exit: recovered %v", r)
		}
	}()
	trap = exitTrap{}
	trap.do(func() { panic(boom) })
	t.Error("the panic was swallowed")
}
