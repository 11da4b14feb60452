package main

type liveCodexCmd struct {
	liveFlags
	Codex string   `default:"${codexCommand}" placeholder:"CMD" help:"The codex command."`
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
mailfs live codex toast -- --model o3.

On Linux the server and the TUI end with it however it ends, even
killed with SIGKILL (a parent-death signal); on macOS a SIGKILL leaves
them running. The launcher is the mailfs-codex binary, which this
command runs in its place: it is installed beside mailfs ("go install
./cmd/..." from a clone installs both) so that the WebSocket library's
weight (net/http) is not on every other command's start.`
}

func (c *liveCodexCmd) Run(a *app) error {
	agent, err := c.agent()
	if err != nil {
		return err
	}
	bin, err := helperBinary("mailfs-codex", "the Codex launcher")
	if err != nil {
		return err
	}
	s, err := a.open() // the root as every command finds it, passed on as found
	if err != nil {
		return err
	}
	args := []string{bin, "--root", s.Dir(), "--every", c.Every.String(), "--codex", c.Codex}
	if a.hostFlag != "" {
		args = append(args, "--host", a.hostFlag)
	}
	codexArgs := c.Args
	if len(codexArgs) > 0 && codexArgs[0] == "--" {
		codexArgs = codexArgs[1:]
	}
	args = append(append(args, agent, "--"), codexArgs...)
	return runHelper(a, bin, args)
}
