package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

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
.chipset). The README has the configuration for Gemini CLI and Cursor.

The server is the mailfs-mcp binary, which this command runs in its place:
it is installed beside mailfs ("go install ./cmd/..." from a clone installs
both) so that the MCP SDK's weight is not on every other command's start.`
}

// mcpBinary is the server's binary: mailfs-mcp beside the running mailfs,
// else on $PATH.
func mcpBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		bin := filepath.Join(filepath.Dir(self), "mailfs-mcp")
		if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
			return bin, nil
		}
	}
	bin, err := exec.LookPath("mailfs-mcp")
	if err != nil {
		return "", fmt.Errorf("the MCP server, mailfs-mcp, is neither beside this mailfs nor on $PATH: install it with \"go install ./cmd/...\" from a clone of mailfs")
	}
	return bin, nil
}

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
	if a.out == os.Stdout && a.in == os.Stdin { // a real process: become the server
		return syscall.Exec(bin, args, os.Environ())
	}
	cmd := exec.Command(bin, args[1:]...) // in tests, run in-process: serve through a child
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.in, a.out, a.err
	err = cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return &exitStatus{code: ee.ExitCode()}
	}
	return err
}
