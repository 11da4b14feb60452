package main

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
)

// onlyCommand returns, for a call that names its command, a new value of
// a struct type holding cli's global flags and that one command's field,
// tags and all, so that kong builds (and interpolates) the model of one
// command instead of all of them: the same definition, less of it. It
// reports false, and the full grammar should be used, for a call without a
// command, with an unknown one, with a flag before it other than --root,
// for --man, or from a shell asking for completions.
func onlyCommand(args []string) (reflect.Value, bool) {
	if os.Getenv("COMP_LINE") != "" || slices.Contains(args, "--man") { // both need every command
		return reflect.Value{}, false
	}
	name := commandOf(args)
	if name == "" {
		return reflect.Value{}, false
	}
	t := reflect.TypeFor[cli]()
	var fields []reflect.StructField
	found := false
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isCmd := f.Tag.Lookup("cmd"); isCmd {
			if commandName(f) != name {
				continue
			}
			found = true
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
	}
	if !found {
		return reflect.Value{}, false
	}
	return reflect.New(reflect.StructOf(fields)), true
}

// commandName is the name kong gives a command field: its name tag, else
// the field's name in kebab case.
func commandName(f reflect.StructField) string {
	if name := f.Tag.Get("name"); name != "" {
		return name
	}
	var b strings.Builder
	for i, r := range f.Name {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('-')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// commandOf returns the command args name, or "" when a flag other than
// --root comes before it or there is none.
func commandOf(args []string) string {
	for i := 0; i < len(args); i++ {
		switch arg := args[i]; {
		case arg == "--root", arg == "--host":
			i++
		case strings.HasPrefix(arg, "--root="), strings.HasPrefix(arg, "--host="):
		case strings.HasPrefix(arg, "-"):
			return ""
		default:
			return arg
		}
	}
	return ""
}

// isBrief reports whether args run a command that finishes in moments
// (its field in cli is tagged brief), which needs no signal handling:
// killed, it leaves what the store's guarantees leave (a dot-temp at
// worst, which fsck removes). A command that can wait (send --wait-for)
// or loops is not brief.
func isBrief(args []string) bool {
	if f, ok := commandField(commandOf(args)); !ok || !hasTag(f, "brief") {
		return false
	}
	return !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--wait") })
}

// commandField is cli's field for the command name. The field whose name
// in kebab case is name is found without reading any tags (they are long:
// help text); only when that is not the command (a name tag, as host's) are
// all fields' tags read.
func commandField(name string) (reflect.StructField, bool) {
	if name == "" {
		return reflect.StructField{}, false
	}
	t := reflect.TypeFor[cli]()
	if f, ok := t.FieldByNameFunc(func(field string) bool { return kebabIs(field, name) }); ok && hasTag(f, "cmd") && commandName(f) == name {
		return f, true
	}
	for i := range t.NumField() {
		if f := t.Field(i); hasTag(f, "cmd") && commandName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// kebabIs reports whether name is field in kebab case as commandName
// spells it (MarkRead: mark-read), without building it.
func kebabIs(field, name string) bool {
	j := 0
	for i, r := range field {
		if unicode.IsUpper(r) {
			if i > 0 {
				if j >= len(name) || name[j] != '-' {
					return false
				}
				j++
			}
			r = unicode.ToLower(r)
		}
		if j+utf8.RuneLen(r) > len(name) || !strings.HasPrefix(name[j:], string(r)) {
			return false
		}
		j += utf8.RuneLen(r)
	}
	return j == len(name)
}

func hasTag(f reflect.StructField, key string) bool {
	_, ok := f.Tag.Lookup(key)
	return ok
}

// parse reads args into c and returns the grammar it filled (c, or kong's
// one-command copy of it, a pointer either way) and kong's context to run.
// When kong itself ends the call (help, version), trap says so.
func parse(c *cli, args []string, trap *exitTrap, io stdio) (grammar any, kctx *kong.Context, err error) {
	// Kong's model of all commands costs more to build than most commands
	// take to run; a call that names its command gets a model of just it.
	grammar = c
	if one, ok := onlyCommand(args); ok {
		grammar = one.Interface()
	}
	parser := newParser(grammar, args, trap, io)
	trap.do(func() {
		if os.Getenv("COMP_LINE") != "" { // a shell asking for completions
			completeFromModel(parser)
		}
		kctx, err = parser.Parse(args)
	})
	return grammar, kctx, err
}

// grammarVars are the variables cli's tags use: the runtimes' names,
// from agentrt.
func grammarVars() kong.Vars {
	vars := hookcmd.Vars()
	vars["setupTargets"] = setupTargets()
	vars["setupRuntimes"] = runtimeNames()
	return vars
}

// newParser is kong, set up for grammar (cli, or onlyCommand's copy).
func newParser(grammar any, args []string, trap *exitTrap, io stdio) *kong.Kong {
	parser, err := kong.New(grammar,
		kong.Name("mailfs"),
		kong.Description("Filesystem mail for coding agents: one JSON file per message, no database, no server."),
		kong.Writers(io.out, io.err),
		trap.option(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(printHelp),
		kong.TypeMapper(reflect.TypeFor[time.Duration](), durationMapper()),
		kong.Vars{"version": version(args)},
		grammarVars(),
	)
	if err != nil {
		panic(err) // the cli struct is wrong: a programming error
	}
	return parser
}
