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

	"github.com/mailfs/mailfs/cmd/internal/grammar"
	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
)

// isBrief reports whether args run a command that finishes in moments
// (its field in cli is tagged brief), which needs no signal handling:
// killed, it leaves what the store's guarantees leave (a dot-temp at
// worst, which fsck removes). A command that can wait (send --wait-for)
// or loops is not brief.
func isBrief(args []string) bool {
	if f, ok := commandField(grammar.Command((*cli)(nil), args)); !ok || !hasTag(f, "brief") {
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
	if f, ok := t.FieldByNameFunc(func(field string) bool { return kebabIs(field, name) }); ok && hasTag(f, "cmd") && grammar.CommandName(f) == name {
		return f, true
	}
	for i := range t.NumField() {
		if f := t.Field(i); hasTag(f, "cmd") && grammar.CommandName(f) == name {
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

// parse reads args into c, or into the smaller grammar package grammar
// makes of it for the call, and returns that call and kong's context to
// run. When kong itself ends the call (help, version), trap says so.
func parse(c *cli, args []string, trap *exitTrap, io stdio) (call *grammar.Call, kctx *kong.Context, err error) {
	// Kong's model of all commands, with every help text parsed and
	// interpolated, costs more to build than most commands take to run:
	// a call that names its command gets a model of just it, and without
	// help text unless it asks for help. Completions and the man page
	// need every command.
	call = grammar.Whole(c)
	if os.Getenv("COMP_LINE") == "" && !slices.Contains(args, "--man") {
		call = grammar.For(c, args)
	}
	trap.do(func() {
		parser := newParser(call.Grammar(), args, trap, io)
		if os.Getenv("COMP_LINE") != "" { // a shell asking for completions
			completeFromModel(parser)
		}
		kctx, err = parser.Parse(args)
		if err != nil && !call.Full() { // said as the whole grammar says it
			call = grammar.Whole(c)
			kctx, err = newParser(call.Grammar(), args, trap, io).Parse(args)
		}
	})
	return call, kctx, err
}

// grammarVars are the variables cli's tags use: the runtimes' names,
// from agentrt.
func grammarVars() kong.Vars {
	vars := hookcmd.Vars()
	vars["setupTargets"] = setupTargets()
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
