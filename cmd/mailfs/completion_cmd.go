package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
)

// Shell completion: the shell runs mailfs with $COMP_LINE set, and
// posener/complete answers from kong's model of every command
// (completeFromModel). This was kong-completion's glue, which parsed six
// text templates at start-up in every command; the few lines it takes
// are here instead.

type completionCmd struct {
	Shell string `arg:"" optional:"" enum:"bash,zsh,fish," default:"" help:"bash, zsh or fish (default: the one $SHELL names)."`
	Code  bool   `short:"c" help:"Print only the code, to source or to paste into the shell's init file."`
}

func (c *completionCmd) Help() string {
	return `Prints the command that turns tab completion on for the current shell
session, and the init file to paste it into to keep it. With --code, prints
the code itself: source <(mailfs completion bash --code).`
}

func (c *completionCmd) Run(a *app) error {
	shell := c.Shell
	if shell == "" {
		shell = filepath.Base(os.Getenv("SHELL"))
		if shell != "bash" && shell != "zsh" && shell != "fish" {
			return usage("name it: mailfs completion bash, zsh or fish", "cannot tell the shell from $SHELL (%q)", os.Getenv("SHELL"))
		}
	}
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err != nil {
		return fmt.Errorf("finding this mailfs binary: %w", err)
	}
	if c.Code {
		_, err := fmt.Fprintln(a.out, completionCode(shell, bin))
		return err
	}
	load := map[string]string{"bash": "source <(mailfs completion -c bash)", "zsh": "source <(mailfs completion -c zsh)", "fish": "mailfs completion -c fish | source"}[shell]
	rc := map[string]string{"bash": "~/.bashrc", "zsh": "~/.zshrc", "fish": "~/.config/fish/config.fish"}[shell]
	_, err = fmt.Fprintf(a.out, "Run this to turn on tab completion for mailfs in %s:\n\n    %s\n\nThat lasts for this shell session; to keep it, paste the line into %s.\n", shell, load, rc)
	return err
}

// completionCode is the shell code that makes the shell ask bin for
// completions of the command mailfs.
func completionCode(shell, bin string) string {
	switch shell {
	case "zsh":
		return "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -o bashdefault -C " + bin + " mailfs"
	case "fish":
		return `function __complete_mailfs
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    ` + bin + `
end
complete -f -c mailfs -a "(__complete_mailfs)"`
	}
	return "complete -o default -o bashdefault -C " + bin + " mailfs"
}

// completeFromModel answers the shell's request in $COMP_LINE from
// parser's model and ends the call (kong's Exit, status 0); it does
// nothing when the call is not such a request.
func completeFromModel(parser *kong.Kong) {
	c := complete.New(parser.Model.Name, nodeCompletion(parser.Model.Node))
	c.Out = parser.Stdout
	if c.Complete() {
		parser.Exit(0)
	}
}

// nodeCompletion is what completes node's words: its subcommands, its
// flags (an enum's values after it), and its positional arguments.
func nodeCompletion(node *kong.Node) complete.Command {
	cmd := complete.Command{Sub: complete.Commands{}, GlobalFlags: complete.Flags{}}
	for _, child := range node.Children {
		if !child.Hidden {
			cmd.Sub[child.Name] = nodeCompletion(child)
		}
	}
	args := positional{flags: map[string]bool{}}
	for _, f := range node.Flags {
		names := []string{"--" + f.Name}
		if f.Short != 0 {
			names = append(names, "-"+string(f.Short))
		}
		for _, n := range names {
			if !f.Hidden {
				cmd.GlobalFlags[n] = predictValue(f.Value)
			}
			args.flags[n] = f.IsBool()
		}
	}
	for _, p := range node.Positional {
		args.predictors = append(args.predictors, predictValue(p))
	}
	cmd.Args = args
	return cmd
}

// predictValue completes one value: nothing for a switch, an enum's
// values, else anything.
func predictValue(v *kong.Value) complete.Predictor {
	switch {
	case v.IsBool():
		return complete.PredictNothing
	case v.Enum != "":
		var values []string
		for _, e := range strings.Split(v.Enum, ",") {
			if e = strings.TrimSpace(e); e != "" {
				values = append(values, e)
			}
		}
		return complete.PredictSet(values...)
	}
	return complete.PredictAnything
}

// positional completes a command's positional arguments, each with its
// own predictor, counting the words already given that are not flags or
// a flag's value.
type positional struct {
	predictors []complete.Predictor
	flags      map[string]bool // flag -> it is a switch (takes no value)
}

func (p positional) Predict(a complete.Args) []string {
	n := 0
	for i, w := range a.Completed {
		name, _, _ := strings.Cut(w, "=")
		if _, isFlag := p.flags[name]; isFlag {
			continue
		}
		if i > 0 {
			prev := a.Completed[i-1]
			if switchFlag, isFlag := p.flags[prev]; isFlag && !switchFlag && !strings.Contains(prev, "=") {
				continue // the value of the flag before it
			}
		}
		n++
	}
	if n >= len(p.predictors) {
		return nil
	}
	return p.predictors[n].Predict(a)
}
