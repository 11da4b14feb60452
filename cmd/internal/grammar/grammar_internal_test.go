package grammar

import (
	"reflect"
	"testing"
)

func TestWithoutHelp(t *testing.T) {
	for tag, want := range map[reflect.StructTag]reflect.StructTag{
		`help:"x"`:                                  ``,
		`cmd:"" help:"Send it."`:                    `cmd:""`,
		`help:"Say \"hi\" \\ there" short:"s"`:      `short:"s"`,
		`arg:"" help:"a: b" optional:"" env:"X"`:    `arg:"" optional:"" env:"X"`,
		`default:"${d}" enum:"${e}"`:                `default:"${d}" enum:"${e}"`,
		`helpful:"yes" help:"no"`:                   `helpful:"yes"`,
		`name:"host" help:"x"   placeholder:"NAME"`: `name:"host" placeholder:"NAME"`,
		`help:"unterminated`:                        `help:"unterminated`,
	} {
		got := withoutHelp(tag)
		if got != want {
			t.Errorf("%s: %s, want %s", tag, got, want)
		}
		if _, ok := got.Lookup("help"); ok && want != tag {
			t.Errorf("%s: help left in %s", tag, got)
		}
		for _, key := range []string{"cmd", "short", "arg", "optional", "env", "default", "enum", "helpful", "name", "placeholder"} {
			if a, b := reflect.StructTag(tag).Get(key), got.Get(key); a != b && want != tag {
				t.Errorf("%s: %s is %q, was %q", tag, key, b, a)
			}
		}
	}
}

func TestAsksHelp(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"send", "--help"}, true},
		{[]string{"send", "-h"}, true},
		{[]string{"send", "-sh", "x"}, true}, // -s -h, or -s "h": either way kong may print help
		{[]string{"send", "--help=true"}, true},
		{[]string{"send", "-s", "hi"}, false},
		{[]string{"send", "--", "-h"}, false},
		{[]string{"send", "-m", "--", "--help"}, false},
		{[]string{"send", "-"}, false},
	} {
		if got := asksHelp(c.args); got != c.want {
			t.Errorf("%q: %v, want %v", c.args, got, c.want)
		}
	}
}
