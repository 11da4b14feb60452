package main

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/cmd/internal/grammar"
	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/live"
)

// isBrief reports whether args run a command that finishes in moments
// (its field in cli is tagged brief), which needs no signal handling:
// killed, it leaves what the store's guarantees leave (a dot-temp at
// worst, which fsck removes). A command that can wait (send --wait-for)
// or loops is not brief.
func isBrief(args []string) bool {
	f, _ := grammar.Field(reflect.TypeFor[cli](), grammar.Command((*cli)(nil), args)) // none: no tags
	_, brief := f.Tag.Lookup("brief")
	return brief && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--wait") })
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
		parser := newParser(call, args, trap, io)
		if os.Getenv("COMP_LINE") != "" { // a shell asking for completions
			completeFromModel(parser)
		}
		kctx, err = parser.Parse(args)
		if !call.Full() && (err != nil || !call.Valid(kctx)) { // said as the whole grammar says it
			call = grammar.Whole(c)
			kctx, err = newParser(call, args, trap, io).Parse(args)
		}
	})
	return call, kctx, err
}

// grammarVars are the variables cli's tags use: the runtimes' names,
// from agentrt.
func grammarVars() kong.Vars {
	vars := hookcmd.Vars()
	vars["setupTargets"] = setupTargets()
	vars["setupRuntimes"] = runtimeNames()
	var tmux []string
	for _, rt := range live.TmuxRuntimes() {
		tmux = append(tmux, string(rt))
	}
	vars["tmuxRuntimes"] = strings.Join(tmux, ",")
	vars["codexCommand"] = string(agentrt.Codex) // the runtime's command is named as it is
	return vars
}

// newParser is kong, set up for the call's grammar.
func newParser(call *grammar.Call, args []string, trap *exitTrap, io stdio) *kong.Kong {
	vars := call.Vars(grammarVars()) // only those it uses: kong interpolates each into every flag
	if v := version(args); v != "" {
		vars["version"] = v
	}
	parser, err := kong.New(call.Grammar(),
		kong.Name("mailfs"),
		kong.Description("Filesystem mail for coding agents: one JSON file per message, no database, no server."),
		kong.Writers(io.out, io.err),
		trap.option(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Help(printHelp),
		kong.TypeMapper(reflect.TypeFor[time.Duration](), durationMapper()),
		vars,
	)
	if err != nil {
		panic(err) // the cli struct is wrong: a programming error
	}
	return parser
}
