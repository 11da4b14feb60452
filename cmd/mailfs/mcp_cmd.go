package main

import "github.com/mailfs/mailfs/mcpserver"

type mcpCmd struct {
	Agent string `required:"" env:"MAILFS_AGENT" placeholder:"NAME" help:"The agent whose mail the tools read and send as."`
}

func (c *mcpCmd) Help() string {
	return `Serves the agent's mail over the Model Context Protocol, on stdin and
stdout, for an agent's MCP client to start (no daemon). Tools: send, inbox,
read, reply, thread, claim, check. Register it once per agent, for example:

  claude mcp add mailfs -- mailfs mcp --agent gastown/toast
  codex mcp add mailfs -- mailfs mcp --agent gastown/toast

The root is found as for every command (--root, $MAILFS_ROOT, the nearest
.chipset). The README has the configuration for Gemini CLI and Cursor.`
}

func (c *mcpCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err != nil {
		return err
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	err = (&mcpserver.Server{Store: s, Nudges: q, Agent: agent, Version: version()}).Run(a.ctx)
	if a.ctx.Err() != nil {
		return nil // interrupted: a clean stop
	}
	return err
}
