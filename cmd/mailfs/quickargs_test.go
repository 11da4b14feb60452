package main

import (
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/internal/quickargs"
)

// quickEnv are the environment variables the brief commands' grammar
// reads.
var quickEnv = []string{"MAILFS_ROOT", "MAILFS_HOST", "MAILFS_AGENT"}

// TestQuickArgsAgreeWithKong holds quickargs to its promise on the brief
// commands' real grammar: for generated calls (flags of each command in
// every form, positional words, globals before and after the command,
// values that are empty, start with a dash, hold commas, name enums or
// not, unknown flags, help, and the environment set, empty or unset),
// wherever quickargs accepts a call, kong accepts it too, repeatedFlag
// has nothing to say, and every field holds the same value. It also
// shows the quick path is taken: each command has calls it accepts.
func TestQuickArgsAgreeWithKong(t *testing.T) {
	for _, k := range quickEnv {
		t.Setenv(k, "") // restored after the test; each call sets its own
	}
	for _, name := range briefCommands() {
		t.Run(name, func(t *testing.T) {
			voc := vocabularyOf(t, name)
			rng := rand.New(rand.NewPCG(7, uint64(len(name))))
			accepted, calls := 0, 3000
			for range calls {
				args, env := voc.call(rng)
				if agree(t, args, env) {
					accepted++
				}
			}
			t.Logf("%s: quickargs read %d of %d calls", name, accepted, calls)
			if accepted < calls/20 {
				t.Errorf("quickargs read only %d of %d generated %s calls: the quick path is not being taken", accepted, calls, name)
			}
		})
	}
}

// TestQuickArgsReadsTheHotCalls: the calls agents and their hooks make on
// every turn take the quick path (a change to the grammar that sends
// them back through kong shows here, not only in the benchmark).
func TestQuickArgsReadsTheHotCalls(t *testing.T) {
	for _, k := range quickEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for _, call := range [][]string{
		{"send", "sink", "--from", "mayor", "-s", "hi", "-m", "there"},
		{"send", "witness", "nux", "--from", "mayor", "-s", "MERGE_READY nux", "--type", "merge_notification", "--priority", "high", "--field", "Branch=b,c", "--cc", "a,b"},
		{"inbox", "mayor"},
		{"inbox", "mayor", "--json", "--limit", "5"},
		{"read", "mayor", "20260101T000000.000000000Z-mayor-0001"},
		{"check", "mayor", "--inject"},
		{"hook", "prompt-submit", "mayor", "--runtime", "codex"},
		{"--root", "/tmp/x/.chipset", "count", "mayor"},
		{"drain", "mayor"},
	} {
		if !agree(t, call, map[string]string{}) {
			t.Errorf("quickargs declined %q", call)
		}
	}
}

// FuzzQuickArgs is the agreement with kong on any words: the input's
// first byte says which environment variables are set (and to what), the
// rest is the call, its words split at NUL.
func FuzzQuickArgs(f *testing.F) {
	for _, seed := range []string{
		"\x00send\x00sink\x00--from\x00mayor\x00-s\x00hi\x00-m\x00there",
		"\x07inbox\x00--by=priority",
		"\x02check\x00--inject\x00--budget\x001s",
		"\x01read\x00a\x00b\x00--json",
		"\x00hook\x00stop\x00--max-bytes\x0010000",
	} {
		f.Add(seed)
	}
	for _, k := range quickEnv {
		f.Setenv(k, "")
	}
	f.Fuzz(func(t *testing.T, in string) {
		if in == "" {
			return
		}
		env := map[string]string{}
		for i, k := range quickEnv {
			switch (in[0] >> (2 * i)) & 3 {
			case 1:
				env[k] = ""
			case 2:
				env[k] = "nux"
			case 3:
				env[k] = "/tmp/q/.chipset"
			}
		}
		args := strings.Split(in[1:], "\x00")
		if slices.ContainsFunc(args, func(a string) bool { return !utf8Valid(a) }) {
			return // run refuses these before any parse
		}
		agree(t, args, env)
	})
}

// agree parses args with the environment env (missing keys unset) by
// quickargs and, if it accepts, by kong as run would, failing t where
// they differ; it reports whether quickargs accepted.
func agree(t *testing.T, args []string, env map[string]string) bool {
	t.Helper()
	for _, k := range quickEnv {
		if v, ok := env[k]; ok {
			os.Setenv(k, v)
		} else {
			os.Unsetenv(k)
		}
	}
	var q cli
	cmd, ok := quickargs.Parse(&q, args, quickOptions(os.LookupEnv))
	if !ok {
		return false
	}
	grammar := any(&cli{})
	if one, ok := onlyCommand(args); ok {
		grammar = one.Interface()
	}
	var trap exitTrap
	parser := newParser(grammar, args, &trap, stdio{out: io.Discard, err: io.Discard})
	var kctx *kong.Context
	var err error
	if trap.do(func() { kctx, err = parser.Parse(args) }) || err != nil {
		t.Fatalf("quickargs read %q (env %v), kong refused it: %v", args, env, err)
	}
	if err := repeatedFlag(kctx, args); err != nil {
		t.Fatalf("quickargs read %q, run refuses it: %v", args, err)
	}
	kv, qv := reflect.ValueOf(grammar).Elem(), reflect.ValueOf(&q).Elem()
	for i := range kv.NumField() {
		name := kv.Type().Field(i).Name
		if got, want := qv.FieldByName(name).Interface(), kv.Field(i).Interface(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q (env %v): quickargs filled %s with %#v, kong with %#v", args, env, name, got, want)
		}
	}
	selected := kctx.Selected().Name
	for i := range qv.NumField() {
		sf := qv.Type().Field(i)
		if _, isCmd := sf.Tag.Lookup("cmd"); isCmd && commandName(sf) == selected && reflect.ValueOf(cmd).Pointer() != qv.Field(i).Addr().Pointer() {
			t.Fatalf("%q: quickargs chose a command other than kong's %s", args, selected)
		}
	}
	return true
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// vocabulary is what calls of one command are made of: its flags and
// positional arguments as kong's model has them, and the globals.
type vocabulary struct {
	name       string
	flags      []*kong.Flag
	positional []*kong.Positional
}

func vocabularyOf(t *testing.T, name string) vocabulary {
	one, ok := onlyCommand([]string{name})
	if !ok {
		t.Fatalf("no grammar for %s", name)
	}
	var trap exitTrap
	parser := newParser(one.Interface(), nil, &trap, stdio{out: io.Discard, err: io.Discard})
	v := vocabulary{name: name, flags: parser.Model.Flags}
	for _, node := range parser.Model.Children {
		if node.Name == name {
			v.flags = append(v.flags, node.Flags...)
			v.positional = node.Positional
		}
	}
	return v
}

// words any value may be given: plain, empty, dashed, with commas, with a
// backslash, relative, home-relative, numbers in kong's other bases,
// durations good and bad.
var words = []string{"nux", "a b", "", "-v", "x,y", `a\,b`, "rel/dir", "/abs/dir", "~/d", "5", "010", "0x10", "-3", "1s", "0", "2m", "-1s", "é", "x,", "true"}

func (v vocabulary) call(rng *rand.Rand) ([]string, map[string]string) {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	value := func(f *kong.Flag) string {
		if f.Enum != "" && rng.IntN(3) > 0 {
			return pick(strings.Split(f.Enum, ","))
		}
		return pick(words)
	}
	flag := func(f *kong.Flag) []string {
		if f.IsBool() {
			switch rng.IntN(6) {
			case 0:
				return []string{"--" + f.Name + "=" + pick([]string{"true", "false"})}
			case 1:
				if f.Short != 0 {
					return []string{"-" + string(f.Short)}
				}
			}
			return []string{"--" + f.Name}
		}
		switch rng.IntN(4) {
		case 0:
			return []string{"--" + f.Name + "=" + value(f)}
		case 1:
			if f.Short != 0 {
				return []string{"-" + string(f.Short), value(f)}
			}
		}
		return []string{"--" + f.Name, value(f)}
	}
	var args []string
	if rng.IntN(4) == 0 {
		args = append(args, pick([]string{"--root", "--host"}), pick(words))
	}
	args = append(args, v.name)
	n := len(v.positional)
	if rng.IntN(4) == 0 {
		n += rng.IntN(3) - 1
	}
	for i := range n {
		if i < len(v.positional) && v.positional[i].Enum != "" && rng.IntN(4) > 0 {
			args = append(args, pick(strings.Split(v.positional[i].Enum, ",")))
		} else {
			args = append(args, pick(words[:9]))
		}
	}
	for _, f := range v.flags {
		if f.Required && rng.IntN(5) > 0 {
			args = append(args, "--"+f.Name, pick(words[:2]))
		}
	}
	for range rng.IntN(5) {
		switch rng.IntN(12) {
		case 0:
			args = append(args, pick([]string{"--bogus", "-h", "--help", "--", "-", "-Z", "--version", "--man"}))
		case 1, 2:
			args = append(args, pick(words[:3]))
		default:
			args = append(args, flag(v.flags[rng.IntN(len(v.flags))])...)
		}
	}
	env := map[string]string{}
	for _, k := range quickEnv {
		switch rng.IntN(5) {
		case 0:
			env[k] = ""
		case 1, 2:
			env[k] = pick([]string{"nux", "/tmp/q/.chipset", "rel", "~/h", "h1"})
		}
	}
	return args, env
}

// briefCommands are the names of the commands tagged brief.
func briefCommands() []string {
	var names []string
	t := reflect.TypeFor[cli]()
	for i := range t.NumField() {
		if _, brief := t.Field(i).Tag.Lookup("brief"); brief {
			names = append(names, commandName(t.Field(i)))
		}
	}
	return names
}
