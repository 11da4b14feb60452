package main

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

type setupCmd struct {
	Runtime string `arg:"" enum:"claude,gemini,codex" help:"claude (Claude Code), gemini (Gemini CLI) or codex (Codex)."`
	Agent   string `env:"MAILFS_AGENT" placeholder:"NAME" help:"The agent that works in this worktree (default $MAILFS_AGENT)."`
	Dir     string `default:"." type:"path" placeholder:"WORKTREE" help:"The agent's worktree, where the runtime's project settings live."`
	Command string `default:"mailfs" placeholder:"PATH" help:"How the hooks run mailfs (a path, if it is not on the agent's PATH)."`
	DryRun  bool   `name:"dry-run" help:"Print the change as a diff and write nothing."`
}

func (c *setupCmd) Help() string {
	return `Installs mailfs into the runtime's project settings in --dir:

  claude  .claude/settings.json: SessionStart, UserPromptSubmit, PostToolUse
          and Stop hooks running "mailfs hook EVENT AGENT"
  gemini  .gemini/settings.json: SessionStart, BeforeAgent, AfterTool and
          AfterAgent hooks running "mailfs hook EVENT AGENT --runtime gemini"
  codex   .codex/config.toml: the MCP server "mailfs mcp --agent AGENT"
          (Codex's notify program cannot add to the agent's context)

It merges with what is there (the user's own hooks and settings are kept),
replaces only mailfs's own entries, changes nothing when run twice, and
keeps the old file as <file>.mailfs-backup. "mailfs doctor" checks it.
On a named host (a town on several machines) it also makes this host the
agent's home, if the agent has none yet.`
}

func (c *setupCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err == nil {
		agent, err = maildir.ParseAgent(agent)
	}
	if err != nil {
		return err
	}
	rt := setup.Runtime(c.Runtime)
	path := filepath.Join(c.Dir, setup.File(rt))
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	data, err := setup.Apply(rt, old, c.Command, agent)
	if err != nil {
		return err
	}
	if c.DryRun {
		_, err := fmt.Fprint(a.out, setup.Diff(path, old, data))
		return err
	}
	c.home(a, agent)
	if bytes.Equal(old, data) {
		fmt.Fprintf(a.err, "mailfs: %s is already set up for %s in %s\n", rt, agent, path)
		return nil
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
		if err := renameio.WriteFile(path+".mailfs-backup", old, mode); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := renameio.WriteFile(path, data, mode); err != nil {
		return err
	}
	backup := ""
	if old != nil {
		backup = " (the old file is " + path + ".mailfs-backup)"
	}
	fmt.Fprintf(a.err, "mailfs: set up %s for %s in %s%s\n", rt, agent, path, backup)
	return nil
}

// home makes this host the agent's home when the host has a name and the
// agent has no home yet: an agent's home is where it is set up (SPEC §10).
// A home elsewhere is said, not changed.
func (c *setupCmd) home(a *app, agent string) {
	s, err := a.open()
	if err != nil {
		a.warn(err)
		return
	}
	host, err := s.LocalHost()
	if err != nil || host == "" {
		return
	}
	box := maildir.Address{Kind: maildir.KindAgent, Name: agent}
	h, err := s.HomeOf(box)
	switch {
	case err != nil:
		a.warn(err)
	case h.Host == "":
		if err := s.ClaimHome(box); err != nil {
			a.warn(err)
			return
		}
		fmt.Fprintf(a.err, "mailfs: %s is homed on this host, %s: its mail is marked and archived here\n", agent, host)
	case h.Host != host:
		a.warn(fmt.Errorf("%s is homed on host %s, not on this host (%s): its mail is marked and archived there (mailfs home move %s --to %s, on %s)", agent, h.Host, host, agent, host, h.Host))
	}
}

type doctorCmd struct {
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"The agent (default $MAILFS_AGENT)."`
	Dir   string `default:"." type:"path" placeholder:"WORKTREE" help:"The agent's worktree."`
}

func (c *doctorCmd) Help() string {
	return `Says, for one agent, where its root is, what waits in its mailbox, when
its hooks last ran, this host's name and the agent's home host, whether
the MCP server's and the web view's binaries (mailfs-mcp, mailfs-serve) are
installed, and which runtimes in --dir have mailfs set up. Exit status 0
when at least one runtime is set up for the agent (Codex only with
mailfs-mcp installed), 1 when none is.`
}

func (c *doctorCmd) Run(a *app) error {
	agent, err := needAgent(c.Agent)
	if err == nil {
		agent, err = maildir.ParseAgent(agent)
	}
	if err != nil {
		return err
	}
	s, err := a.read()
	if err != nil {
		return err
	}
	_, rootErr := os.Stat(s.Dir())
	fmt.Fprintf(a.out, "root:      %s%s\n", s.Dir(), map[bool]string{true: "", false: " (does not exist yet)"}[rootErr == nil])
	n, err := s.Count(maildir.Address{Kind: maildir.KindAgent, Name: agent})
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	nudges, _ := q.Len(agent)
	fmt.Fprintf(a.out, "mailbox:   %s: %d unread (%d older than 24h), %d nudges queued\n", agent, n.Unread, n.Neglected, nudges)
	seen, ev, err := (&hook.Handler{Collector: hook.Collector{Store: s, Nudges: q}}).Seen(agent)
	if err != nil {
		a.warn(err)
	}
	if seen.IsZero() {
		fmt.Fprintf(a.out, "hooks ran: never (no hook, check --inject or mcp check has run for %s here)\n", agent)
	} else {
		fmt.Fprintf(a.out, "hooks ran: %s at %s (%s ago)\n", ev, seen.UTC().Format(time.RFC3339), time.Since(seen).Round(time.Second))
	}
	host, err := s.LocalHost()
	if err != nil {
		return err
	}
	home, err := s.HomeOf(maildir.Address{Kind: maildir.KindAgent, Name: agent})
	if err != nil {
		return err
	}
	switch {
	case host == "" && home.Host == "":
		fmt.Fprintf(a.out, "host:      no name: a town on one machine (mailfs host NAME before mailfs sync)\n")
	case home.Host == host:
		fmt.Fprintf(a.out, "host:      %s, %s's home\n", host, agent)
	case home.Host == "":
		fmt.Fprintf(a.out, "host:      %s; %s has no home yet, so its mail cannot be marked or archived (mailfs home claim %s)\n", host, agent, agent)
	default:
		fmt.Fprintf(a.out, "host:      %s; %s's home is %s, where its mail is marked and archived\n", cmp.Or(host, "no name"), agent, home.Host)
	}
	mcpBin, mcpErr := mcpBinary()
	if mcpErr != nil {
		fmt.Fprintf(a.out, "mcp:       mailfs-mcp not found beside mailfs or on $PATH: \"mailfs mcp\" cannot serve (go install ./cmd/... from a clone)\n")
	} else {
		fmt.Fprintf(a.out, "mcp:       %s\n", mcpBin)
	}
	if serveBin, err := helperBinary("mailfs-serve", "the web view"); err != nil {
		fmt.Fprintf(a.out, "serve:     mailfs-serve not found beside mailfs or on $PATH: \"mailfs serve\" cannot serve (go install ./cmd/... from a clone)\n")
	} else {
		fmt.Fprintf(a.out, "serve:     %s\n", serveBin)
	}
	installed := 0
	for _, rt := range setup.Runtimes {
		path := filepath.Join(c.Dir, setup.File(rt))
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(a.out, "%-10s %s: none (mailfs setup %s)\n", rt+":", path, rt)
			continue
		}
		have, missing := setup.Installed(rt, data, agent)
		switch {
		case len(missing) == 0 && rt == setup.Codex && mcpErr != nil:
			fmt.Fprintf(a.out, "%-10s %s: set up (%s), but its MCP server, mailfs-mcp, is missing\n", rt+":", path, strings.Join(have, ", "))
		case len(missing) == 0:
			installed++
			fmt.Fprintf(a.out, "%-10s %s: set up (%s)\n", rt+":", path, strings.Join(have, ", "))
		case len(have) == 0:
			fmt.Fprintf(a.out, "%-10s %s: not set up for %s (mailfs setup %s)\n", rt+":", path, agent, rt)
		default:
			fmt.Fprintf(a.out, "%-10s %s: partly set up, missing %s (mailfs setup %s)\n", rt+":", path, strings.Join(missing, ", "), rt)
		}
	}
	if installed == 0 {
		return &exitStatus{code: exitNothing}
	}
	return nil
}
