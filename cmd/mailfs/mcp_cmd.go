package main

type mcpCmd struct {
	Agent string `required:"" env:"MAILFS_AGENT" placeholder:"NAME" help:"The agent whose mail the tools read and send as."`
}

func (c *mcpCmd) Help() string {
	return `Serves the agent's mail over the Model Context Protocol, on stdin and
stdout, for an agent's MCP client to start (no daemon). Tools: send, inbox,
read, reply, thread, claim, check. "mailfs setup" registers it in the
project for Gemini CLI, Codex, Qwen Code, Copilot CLI and OpenCode; by hand,
once per agent, for example:

  claude mcp add mailfs -- mailfs mcp --agent gastown/toast

The root is found as for every command (--root, $MAILFS_ROOT, the nearest
.chipset). docs/agents.md ("The MCP server") has Cursor's configuration, and
why "codex mcp add" is best left to setup (it reaches every project).

The server is the mailfs-mcp binary, which this command runs in its place:
it is installed beside mailfs ("go install ./cmd/..." from a clone installs
both) so that the MCP SDK's weight is not on every other command's start.`
}

// mcpBinary is the server's binary: mailfs-mcp beside the running mailfs,
// else on $PATH.
func mcpBinary() (string, error) { return helperBinary("mailfs-mcp", "the MCP server") }

func (c *mcpCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	bin, err := mcpBinary()
	if err != nil {
		return err
	}
	s, err := a.open() // the root as every command finds it, passed on as found
	if err != nil {
		return err
	}
	args := []string{bin, "--agent", agent, "--root", s.Dir()}
	if a.hostFlag != "" {
		args = append(args, "--host", a.hostFlag)
	}
	return runHelper(a, bin, args)
}
