package grammar_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/cmd/internal/grammar"
)

// A grammar with what the programs' grammars use: global flags that take
// values, switches, commands with subcommands, a parent command with a Run
// of its own, embedded flag groups (of an unexported and of an exported
// type), a flag type with methods kong calls, enums from variables, env.
type program struct {
	Root    string `help:"The root." env:"GRAMMAR_TEST_ROOT" placeholder:"DIR"`
	Verbose bool   `help:"Say more." short:"v"`

	Send  sendCmd  `cmd:"" help:"Send \"it\"."`
	Group groupCmd `cmd:"" help:"Groups."`
	Check checkCmd `cmd:"" name:"check-it" help:"Check."`
}

type shared struct {
	Budget time.Duration `default:"3s" help:"How long."`
}

type Exported struct {
	Tier string `enum:"${tiers}" default:"low" help:"Which tier."`
}

type sendCmd struct {
	shared
	To      string   `arg:"" help:"Whom."`
	Subject string   `short:"s" required:"" help:"The subject, \"quoted\"."`
	Meta    []string `help:"Repeatable."`
	Level   level    `help:"A flag whose type has a method kong calls."`
	secret  int
}

type groupCmd struct {
	Add addCmd `cmd:"" help:"Add to a group."`
}

type addCmd struct {
	Exported
	Name string `arg:""`
}

type checkCmd struct {
	Agent string `arg:"" optional:"" env:"GRAMMAR_TEST_AGENT"`
}

// level counts its flag's words; kong finds its Decode by its type.
type level int

func (l *level) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("level", &s); err != nil {
		return err
	}
	*l = level(len(strings.Fields(s)))
	return nil
}

// env is what a command's Run sees; every Run appends what it saw.
type env struct{ ran []string }

func (c *sendCmd) Run(e *env) error {
	e.ran = append(e.ran, fmt.Sprintf("send %+v", *c))
	return nil
}
func (c *groupCmd) Run(e *env) error { e.ran = append(e.ran, "group"); return nil }
func (c *addCmd) Run(e *env) error {
	e.ran = append(e.ran, fmt.Sprintf("add %+v", *c))
	return nil
}
func (c *checkCmd) Run(e *env) error {
	e.ran = append(e.ran, "check "+c.Agent)
	return nil
}

var vars = kong.Vars{"tiers": "low,high", "unused": "x"}

// parse parses args with the grammar For chose and runs the command, and
// returns what the full grammar's value holds after and what ran.
func parse(t *testing.T, full bool, args ...string) (program, []string) {
	t.Helper()
	var p program
	call := grammar.For(&p, args)
	if full {
		call = grammar.For(&p, nil)
	}
	k, err := kong.New(call.Grammar(), call.Vars(vars), kong.Exit(func(int) { t.Fatalf("%q: kong exited", args) }))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := k.Parse(args)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	var e env
	if err := grammar.Run(call, kctx, &e); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return p, e.ran
}

// Through the smaller grammar a call reads and runs as through the whole:
// the same values in the full grammar's struct (global flags, defaults,
// environment, enums, embedded groups, repeated flags, a type's own
// decoder), the same Run methods called, the parent's after the child's.
func TestSmallerGrammarRunsAsTheWhole(t *testing.T) {
	t.Setenv("GRAMMAR_TEST_ROOT", "/from/env")
	t.Setenv("GRAMMAR_TEST_AGENT", "toast")
	for _, args := range [][]string{
		{"send", "toast", "-s", "hi", "--meta", "a=1", "--meta", "b=2", "--level", "x y z", "--budget", "5s"},
		{"--root", "/r", "-v", "send", "toast", "--subject=hi"},
		{"--root=/r", "group", "add", "crew", "--tier", "high"},
		{"group", "add", "crew"},
		{"check-it"},
		{"--verbose", "check-it", "--", "-h"},
	} {
		// The whole grammar sets every command's defaults; nothing reads
		// those of a command not run.
		small, ranSmall := parse(t, false, args...)
		whole, ranWhole := parse(t, true, args...)
		if small.Root != whole.Root || small.Verbose != whole.Verbose || !reflect.DeepEqual(ranSmall, ranWhole) {
			t.Errorf("%q:\nsmaller grammar: %+v, ran %q\nwhole grammar:   %+v, ran %q", args, small, ranSmall, whole, ranWhole)
		}
		if len(ranWhole) == 0 {
			t.Errorf("%q: nothing ran", args)
		}
	}
	if _, ran := parse(t, false, "group", "add", "crew"); len(ran) != 2 || ran[1] != "group" {
		t.Errorf("group add ran %q, want add, then group", ran)
	}
}

// The grammar holds the named command only, and no help text unless the
// call asks for help; a call that names no command (or names it after a
// flag that is not global) gets the whole grammar.
func TestGrammarHoldsWhatTheCallNeeds(t *testing.T) {
	model := func(args ...string) (*kong.Node, bool) {
		var p program
		call := grammar.For(&p, args)
		k, err := kong.New(call.Grammar(), vars)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return k.Model.Node, call.Full()
	}
	for _, args := range [][]string{{"send", "x"}, {"--root", "/r", "group", "add", "crew"}, {"--verbose", "check-it"}} {
		n, full := model(args...)
		if full || len(n.Children) != 1 {
			t.Errorf("%q: %d commands, want the one named", args, len(n.Children))
		}
		if texts := helpsOf(n); len(texts) != 0 {
			t.Errorf("%q: help text in the model: %q", args, texts)
		}
	}
	if got := grammar.For(&program{}, []string{"group", "add", "x"}).Vars(vars); len(got) != 1 || got["tiers"] != "low,high" {
		t.Errorf("group add's variables: %v, want tiers only", got)
	}
	if got := grammar.For(&program{}, []string{"check-it"}).Vars(vars); len(got) != 0 {
		t.Errorf("check-it's variables: %v, want none", got)
	}
	if got := grammar.For(&program{}, []string{"check-it", "--help"}).Vars(vars); len(got) != len(vars) {
		t.Errorf("check-it --help's variables: %v, want all", got)
	}
	for _, args := range [][]string{{"send", "--help"}, {"send", "-h"}, {"--root=/r", "send", "-vh"}} {
		n, full := model(args...)
		if full || len(n.Children) != 1 || len(helpsOf(n)) == 0 {
			t.Errorf("%q: %d commands, help %q: want the one named, with its help", args, len(n.Children), helpsOf(n))
		}
	}
	for _, args := range [][]string{nil, {"--help"}, {"-h", "send"}, {"-v", "send"}, {"--root", "/r"}, {"sned"}, {"--budget", "3s", "send"}} {
		if n, full := model(args...); !full || len(n.Children) != 3 {
			t.Errorf("%q: %d commands, want the whole grammar", args, len(n.Children))
		}
	}
}

// helpsOf returns every help text in n and below it.
func helpsOf(n *kong.Node) []string {
	var texts []string
	add := func(s string) {
		if s != "" {
			texts = append(texts, s)
		}
	}
	add(n.Help)
	for _, f := range n.Flags {
		if f.Name != "help" {
			add(f.Help)
		}
	}
	for _, p := range n.Positional {
		add(p.Help)
	}
	for _, c := range n.Children {
		texts = append(texts, helpsOf(c)...)
	}
	return texts
}

// Validate is a check kong calls on the whole grammar's command before it
// runs; a bare copy has no methods, so Valid makes the call. It also
// tidies what it checks, as a Validate may: Run sees the tidied value.
func (c *checkCmd) Validate() error {
	c.Agent = strings.TrimSpace(c.Agent)
	if c.Agent == "invalid" {
		return fmt.Errorf("bad agent %q", c.Agent)
	}
	return nil
}

// A value a command's Validate refuses is not Valid in the bare grammar
// (which kong parsed without calling it), and the whole grammar refuses
// it as kong does; what Validate passes is Valid.
func TestValidCallsWhatKongWould(t *testing.T) {
	for _, c := range []struct {
		agent string
		valid bool
	}{{"toast", true}, {"invalid", false}} {
		var p program
		args := []string{"check-it", c.agent}
		call := grammar.For(&p, args)
		if call.Full() {
			t.Fatal("check-it got the whole grammar: nothing to test")
		}
		k, err := kong.New(call.Grammar(), call.Vars(vars))
		if err != nil {
			t.Fatal(err)
		}
		kctx, err := k.Parse(args)
		if err != nil {
			t.Fatalf("%q: the bare grammar refused: %v", args, err)
		}
		if got := call.Valid(kctx); got != c.valid {
			t.Errorf("%q: Valid %v, want %v", args, got, c.valid)
		}
		whole := grammar.Whole(&program{})
		wk, err := kong.New(whole.Grammar(), whole.Vars(vars))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wk.Parse(args); (err == nil) != c.valid {
			t.Errorf("%q: the whole grammar said %v", args, err)
		}
	}
}

// Valid copies the parsed values into the full grammar once, and Run
// runs on that copy: what Validate changed is what Run sees, as when kong
// validates and runs the whole grammar (a second copy would undo it).
func TestRunSeesWhatValidateChanged(t *testing.T) {
	args := []string{"check-it", " toast "}
	var p program
	call := grammar.For(&p, args)
	k, err := kong.New(call.Grammar(), call.Vars(vars))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := k.Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if !call.Valid(kctx) {
		t.Fatalf("%q: not Valid", args)
	}
	var e env
	if err := grammar.Run(call, kctx, &e); err != nil {
		t.Fatal(err)
	}
	var whole program
	wk, err := kong.New(&whole, kong.Vars(vars))
	if err != nil {
		t.Fatal(err)
	}
	wctx, err := wk.Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	var we env
	if err := wctx.Run(&we); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(e.ran) != fmt.Sprint(we.ran) || fmt.Sprint(e.ran) != "[check toast]" {
		t.Errorf("ran %q through the bare grammar, %q through the whole; want [check toast]", e.ran, we.ran)
	}
}
