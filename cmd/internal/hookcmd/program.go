package hookcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/cmd/internal/grammar"
	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// cli is mailfs-hook's grammar: the per-turn commands, spelt as mailfs
// spells them.
type cli struct {
	Root    string           `help:"The mailfs root, the .chipset directory. Default: the nearest .chipset in the working directory or above it, else ./.chipset." env:"MAILFS_ROOT" placeholder:"DIR"`
	Host    string           `help:"This host's name, in a town that spans machines. Default: the name in the root's runtime/host." env:"MAILFS_HOST" placeholder:"NAME"`
	Version kong.VersionFlag `help:"Print the version (module version and VCS revision) and exit."`

	Hook  Hook     `cmd:"" help:"Answer an agent runtime's hook event (session-start, prompt-submit, post-tool, stop)."`
	Live  liveCmd  `cmd:"" help:"Live delivery's per-turn call: live seen."`
	Check checkCmd `cmd:"" help:"Print unread mail and nudges as <system-reminder> blocks for a prompt hook (check --inject)."`
}

type liveCmd struct {
	Seen Seen `cmd:"" help:"Record as taken in (submitted; with --answered, delivered) the doorbells whose ring marks standard input holds (what a runtime's plugin sent the model)."`
}

type checkCmd struct {
	Agent  string        `arg:"" optional:"" env:"MAILFS_AGENT" help:"Whose mail and nudges."`
	Inject bool          `required:"" help:"Print <system-reminder> blocks for an agent's prompt hook, draining the nudges; never fail (the summary is \"mailfs check\")."`
	Budget time.Duration `default:"3s" placeholder:"D" help:"Stop after this long and say so."`
}

func (c *checkCmd) Run(e *Env) error {
	Inject(e, c.Agent, c.Budget)
	return nil
}

// Main is the mailfs-hook program: it parses args and answers the call.
// The status is 0 for a hook and check --inject unless the command line is
// wrong (80), and 2 when live seen fails.
func Main(args []string, in io.Reader, out, errw io.Writer) int {
	var c cli
	// Kong is given the one command called, without help text unless
	// asked for (package grammar): building the model of the whole is
	// most of what a hook's start costs.
	call := grammar.For(&c, args)
	kctx, err := parse(call, args, out, errw)
	if err != nil && !call.Full() { // said as the whole grammar says it
		call = grammar.Whole(&c)
		kctx, err = parse(call, args, out, errw)
	}
	if err != nil {
		fmt.Fprintf(errw, "mailfs-hook: error: %v\n", err)
		return 80 // kong's usage status, as mailfs's
	}
	warn := func(err error) { fmt.Fprintf(errw, "mailfs: warning: %s\n", town.UserText(err)) }
	var s *maildir.Store
	var q *nudgeq.Queue
	defer func() {
		if s != nil {
			q.Close()
			s.Close()
		}
	}()
	env := &Env{Ctx: context.Background(), In: in, Out: out, Err: errw, Warn: warn,
		Open: func() (*maildir.Store, *nudgeq.Queue, error) {
			var err error
			s, q, err = town.Open(town.Config{Root: c.Root, Host: c.Host, Warn: warn})
			return s, q, err
		},
		Report: func(err error) {
			fmt.Fprintf(errw, "mailfs: error: %s\n", town.UserText(err))
			if errors.Is(err, ErrNoAgent) {
				fmt.Fprintf(errw, "mailfs: hint: %s\n", NoAgentHint)
			}
		}}
	if err := grammar.Run(call, kctx, env); err != nil { // live seen's: the hooks report their own
		env.Report(err)
		if errors.Is(err, ErrNoAgent) {
			return 80
		}
		return 2
	}
	return 0
}

// parse parses args with call's grammar.
func parse(call *grammar.Call, args []string, out, errw io.Writer) (*kong.Context, error) {
	version := ""
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--version") }) {
		version = buildinfo.Version() // read from the binary: only when asked
	}
	vars := call.Vars(Vars()) // only those the grammar uses: kong interpolates each into every flag
	if version != "" {
		vars["version"] = version
	}
	parser, err := kong.New(call.Grammar(), kong.Name("mailfs-hook"),
		kong.Description("The per-turn calls of mailfs (hooks, check --inject), in a smaller binary."),
		kong.Writers(out, errw), vars)
	if err != nil {
		panic(err) // the cli struct is wrong: a programming error
	}
	return parser.Parse(args)
}
