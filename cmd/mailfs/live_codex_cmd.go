package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"

	"github.com/mailfs/mailfs/live"
)

type liveCodexCmd struct {
	liveFlags
	Codex string   `default:"codex" placeholder:"CMD" help:"The codex command."`
	Args  []string `arg:"" optional:"" passthrough:"" placeholder:"-- CODEX_ARGS" help:"Arguments for Codex's TUI, after --."`
}

func (c *liveCodexCmd) Help() string {
	return `Runs Codex with live delivery and nothing typed into a terminal: it starts
"codex app-server" on a private Unix socket, Codex's TUI on this terminal
connected to it ("codex --remote"), and a deliverer that speaks the app
server's protocol beside the TUI: an idle session gets the doorbell as a
new turn, a busy one has it steered into the running turn (the model gets
it at its next request). A doorbell is delivered when Codex's rollout of
the session shows the model answered it. It ends, with the server, when
the TUI does, with the TUI's exit status; the deliverer's warnings are
dropped, as they would draw over the TUI. Use it in place of "codex":
mailfs live codex toast -- --model o3.`
}

func (c *liveCodexCmd) Run(a *app) error {
	args := c.Args
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	// The TUI takes the terminal itself, not this command's buffered
	// streams.
	l := live.CodexLaunch{Codex: c.Codex, Args: args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Deliver: func(ctx context.Context, door *live.CodexDoor) error {
			if liveOff() {
				<-ctx.Done()
				return nil
			}
			sub := *a
			sub.ctx, sub.err = ctx, io.Discard
			return c.deliver(&sub, door)
		}}
	err := live.RunCodex(a.ctx, l)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &exitStatus{code: ee.ExitCode()}
	}
	return err
}
