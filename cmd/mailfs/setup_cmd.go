package main

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/renameio/v2"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/setup"
)

// setupTargets is setup's enum: every runtime, plugin, and "" (all found).
func setupTargets() string {
	return strings.ReplaceAll(runtimeNames(), " ", "") + ",plugin,"
}

// runtimeNames names every runtime setup installs into, from agentrt's
// one list: "claude, gemini, …".
func runtimeNames() string {
	var names []string
	for _, rt := range agentrt.Installable() {
		names = append(names, string(rt))
	}
	return strings.Join(names, ", ")
}

type setupCmd struct {
	Runtime string `arg:"" optional:"" enum:"${setupTargets}" default:"" help:"claude (Claude Code), gemini (Gemini CLI), codex (Codex), qwen (Qwen Code), copilot (GitHub Copilot CLI), opencode (OpenCode), pi, or plugin (a Claude Code plugin folder). Default: every one of ${setupRuntimes} found on $PATH."`
	Agent   string `xor:"who" placeholder:"NAME" help:"The agent that works in this worktree (default: $$MAILFS_AGENT, unless --shared)."`
	Dir     string `default:"." type:"path" placeholder:"WORKTREE" help:"The agent's worktree, where the runtime's project settings live."`
	Command string `default:"mailfs" placeholder:"PATH" help:"How the hooks run mailfs (a path, if it is not on the agent's PATH); the per-turn hooks run mailfs-hook beside it."`
	Out     string `type:"path" placeholder:"DIR" help:"plugin: the folder to write the plugin into (default: mailfs-plugin)."`
	DryRun  bool   `name:"dry-run" help:"Print the change as a diff and write nothing."`
	Shared  bool   `xor:"who,how" help:"Hooks for several agents in this worktree: they name no agent, and each session's $MAILFS_AGENT says which it is (MAILFS_AGENT=bob claude)."`
	Replace bool   `xor:"how" help:"Hand a set-up that serves another agent (or is shared) to this one."`
}

func (c *setupCmd) Help() string {
	return `Installs mailfs into the runtime's project settings in --dir:

  claude  .claude/settings.json: SessionStart, UserPromptSubmit, PostToolUse
          and Stop hooks running "mailfs-hook hook EVENT AGENT";
          .claude/skills/mailfs/SKILL.md
  gemini  .gemini/settings.json: SessionStart, BeforeAgent, AfterTool and
          AfterAgent hooks running "mailfs-hook hook EVENT AGENT --runtime
          gemini", and the MCP server "mailfs mcp --agent AGENT" (mcpServers);
          .gemini/skills/mailfs/SKILL.md
  codex   .codex/config.toml: the MCP server "mailfs mcp --agent AGENT";
          .codex/hooks.json: SessionStart, UserPromptSubmit and Stop hooks
          running "mailfs-hook hook EVENT AGENT --runtime codex";
          .agents/skills/mailfs/SKILL.md
  qwen    .qwen/settings.json: SessionStart, UserPromptSubmit, PostToolUse
          and Stop hooks running "mailfs-hook hook EVENT AGENT --runtime
          qwen", and the MCP server "mailfs mcp --agent AGENT" (mcpServers);
          .qwen/skills/mailfs/SKILL.md
  copilot .github/hooks/mailfs.json: the agentStop hook running
          "mailfs-hook hook stop AGENT --runtime copilot" (the only hook whose
          answer Copilot CLI shows the model: a block's reason becomes the
          next prompt); .github/mcp.json: the MCP server;
          .github/skills/mailfs/SKILL.md
  opencode opencode.json: the MCP server (mcp.mailfs);
          .opencode/plugins/mailfs.js: mail at each prompt (the first one's
          with the session-start reminder), urgent news after tools, a new
          turn when the session goes idle with urgent mail waiting, and the
          session's live deliverer ("mailfs live opencode");
          .opencode/skill/mailfs/SKILL.md
  pi      .pi/extensions/mailfs.ts: as OpenCode's plugin (mail before each
          turn, urgent news after tools, a new turn at the end of one while
          urgent mail waits, the live deliverer "mailfs live pi");
          .pi/skills/mailfs/SKILL.md (pi has no MCP, by design)

With no runtime, it sets up each of ` + runtimeNames() + ` found on
$PATH. The skill (SKILL.md) teaches the agent the mailfs commands without
costing it a tool definition on every turn.

Files are edited in place, through parsers that keep what mailfs does not
own: comments, order, formatting, the user's own hooks and keys (in
Codex's [mcp_servers.mailfs] too, however it is written). Only mailfs's own
entries are replaced; a second run changes nothing. A file that does not
parse (Gemini CLI's comments are fine) is refused, and then no file is
written. A symbolic link is followed: the file it leads to is edited, the
link stays. Each changed file's old content is kept as <file>.mailfs-backup.

What each runtime still needs from you, which "mailfs doctor" checks:
  gemini  trust the folder (Gemini CLI loads no project hooks or MCP
          servers in an untrusted folder, the default)
  codex   trust the project, and approve the hooks with /hooks
  qwen    approve the project's MCP server when Qwen Code asks; trust the
          folder, if folder trust is on (it is off by default)
  copilot trust the folder (Copilot CLI loads no .github/hooks or
          .github/mcp.json in an untrusted one)

  plugin  writes a Claude Code plugin into --out: hooks, the MCP server and
          the skill, for the agent $MAILFS_AGENT names in the session
          (claude --plugin-dir DIR).

Claude Code and Qwen Code also get the live deliverer ("mailfs live claude
AGENT", "mailfs live qwen AGENT") as an async SessionStart hook: mail
reaches the running session (Claude Code: between two tool calls; Qwen
Code: at its next turn), and an idle session wakes (see "mailfs live").

Several agents in one worktree: "mailfs setup --shared" writes hooks that
name no agent, and each session says who it is by $MAILFS_AGENT. Setting up
one agent where any runtime's set-up (its hooks, MCP server or plugin)
serves another, or is shared, is refused (exit 2, nothing written), never a
silent replacement: --shared to serve both, --replace to hand it over.
Flags that do not go together are refused before anything is read:
--agent or --replace with --shared, --out with anything but plugin.

On a named host (a town on several machines) it also makes this host the
agent's home, if the agent has none yet.`
}

func (c *setupCmd) Run(a *app) error {
	if err := c.conflicts(); err != nil {
		return err
	}
	if c.Runtime == "plugin" {
		return c.plugin(a)
	}
	// --agent and --shared, --shared and --replace: kong refuses them
	// together (xor), before anything is read. $MAILFS_AGENT is --agent's
	// default only when the set-up is not --shared, so a session's own
	// environment does not turn --shared into a conflict.
	agent := ""
	if !c.Shared {
		var err error
		agent = cmp.Or(c.Agent, os.Getenv("MAILFS_AGENT"))
		if agent == "" {
			// setup takes the agent as a flag, not an argument.
			return usage("give --agent NAME (or set $MAILFS_AGENT); --shared sets up several agents", "no agent given")
		}
		if agent, err = maildir.ParseAgent(agent); err != nil {
			return err
		}
	}
	// A mistyped --dir must not grow a tree of its own.
	if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
		return withHint(fmt.Errorf("no worktree at %s", c.Dir), "--dir names the agent's worktree, which must exist")
	}
	runtimes, err := c.runtimes(a)
	if err != nil {
		return err
	}
	// Every file is planned before any is written: one that cannot be
	// parsed stops them all.
	var changes []setup.Change
	for _, rt := range runtimes {
		if err := setup.Guard(rt, c.Dir, agent); err != nil && !c.Replace {
			return withHint(err, "several agents in one worktree: mailfs setup --shared (each session's $MAILFS_AGENT says who it is); or --replace to hand the hooks over")
		}
		cs, err := setup.Plan(rt, c.Dir, c.Command, agent)
		if err != nil {
			return err
		}
		changes = append(changes, cs...)
	}
	if c.DryRun {
		for _, ch := range changes {
			if !bytes.Equal(ch.Old, ch.New) {
				fmt.Fprint(a.out, setup.Diff(ch.Path, ch.Old, ch.New))
			}
		}
		return nil
	}
	if agent != "" {
		c.home(a, agent)
	}
	for _, ch := range changes {
		if err := writeChange(a, ch); err != nil {
			return err
		}
	}
	who := agent
	if c.Shared {
		who = "every agent by $MAILFS_AGENT"
	}
	env := setup.Env{Getenv: os.Getenv, LookPath: exec.LookPath, Environ: os.Environ()}
	for _, rt := range runtimes {
		ready, findings := setup.Check(rt, c.Dir, agent, env)
		reportReady(a, rt, who, c.Dir, ready, findings)
	}
	return nil
}

// conflicts refuses the flags that do not go with the runtime named, which
// kong's xor groups cannot say (they pair flags, not a flag and an
// argument's value): --out is the plugin's folder alone, and the plugin
// serves whichever agent $MAILFS_AGENT names, so it takes no --agent,
// --shared or --replace. Nothing is read or written before it.
func (c *setupCmd) conflicts() error {
	if c.Runtime != "plugin" && c.Out != "" {
		return usage("mailfs setup plugin --out DIR writes the Claude Code plugin there; a runtime's files go into --dir", "--out is for setup plugin, not %s", cmp.Or(c.Runtime, "every runtime found"))
	}
	if c.Runtime == "plugin" && (c.Agent != "" || c.Shared || c.Replace) {
		return usage("the plugin serves the agent each session's $MAILFS_AGENT names: mailfs setup plugin --out DIR", "setup plugin takes no --agent, --shared or --replace")
	}
	return nil
}

// runtimes are the runtimes to set up: the one named, else every one on
// $PATH (said on stderr), else a usage error.
func (c *setupCmd) runtimes(a *app) ([]agentrt.Runtime, error) {
	if c.Runtime != "" {
		return []agentrt.Runtime{agentrt.Runtime(c.Runtime)}, nil
	}
	var runtimes []agentrt.Runtime
	var names []string
	for _, rt := range agentrt.Installable() {
		if _, err := exec.LookPath(setup.Binary(rt)); err == nil {
			runtimes = append(runtimes, rt)
			names = append(names, string(rt))
		}
	}
	if len(runtimes) == 0 {
		return nil, usage("mailfs setup RUNTIME sets one up before it is installed",
			"no agent runtime on $PATH (%s): name the one to set up", runtimeNames())
	}
	fmt.Fprintf(a.err, "mailfs: found %s on $PATH\n", strings.Join(names, ", "))
	return runtimes, nil
}

// writeChange writes one planned change, if it changes anything, and
// says so on stderr: through which link, and where the old file is kept.
func writeChange(a *app, ch setup.Change) error {
	if bytes.Equal(ch.Old, ch.New) {
		return nil
	}
	if err := write(ch); err != nil {
		return err
	}
	note := ""
	if ch.Target != ch.Path {
		note = " (through the link, to " + ch.Target + ")"
	}
	if ch.Old != nil {
		note += " (the old file is " + ch.Target + ".mailfs-backup)"
	}
	fmt.Fprintf(a.err, "mailfs: wrote %s%s\n", ch.Path, note)
	return nil
}

// reportReady says on stderr that rt is set up for who in dir, and, when
// it is not ready to run mailfs yet, what stands in the way.
func reportReady(a *app, rt agentrt.Runtime, who, dir string, ready bool, findings []setup.Finding) {
	if ready {
		fmt.Fprintf(a.err, "mailfs: %s is set up for %s in %s\n", rt, who, dir)
		return
	}
	fmt.Fprintf(a.err, "mailfs: %s is set up for %s in %s; before it runs mailfs:\n", rt, who, dir)
	for _, f := range findings {
		if !f.OK {
			fmt.Fprintf(a.err, "mailfs:   %s\n", f.Text)
		}
	}
}

// write puts a change in place: the old content kept beside the file,
// the new one written atomically, with the old file's mode.
func write(ch setup.Change) error {
	mode := fs.FileMode(0o644)
	if st, err := os.Stat(ch.Target); err == nil {
		mode = st.Mode().Perm()
		if err := renameio.WriteFile(ch.Target+".mailfs-backup", ch.Old, mode); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(ch.Target), 0o755); err != nil {
		return err
	}
	return renameio.WriteFile(ch.Target, ch.New, mode)
}

// plugin writes the Claude Code plugin folder.
func (c *setupCmd) plugin(a *app) error {
	out := cmp.Or(c.Out, "mailfs-plugin")
	files := setup.PluginFiles(c.Command, buildinfo.Version())
	for _, rel := range setup.PluginPaths(files) {
		path := filepath.Join(out, rel)
		if c.DryRun {
			fmt.Fprintln(a.out, path)
			continue
		}
		_, old, err := setup.ReadTarget(path)
		if err != nil {
			return err
		}
		if err := write(setup.Change{Path: path, Target: path, Old: old, New: files[rel]}); err != nil {
			return err
		}
	}
	if !c.DryRun {
		fmt.Fprintf(a.err, "mailfs: wrote the Claude Code plugin in %s: claude --plugin-dir %s (with $MAILFS_AGENT set)\n", out, out)
	}
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
	Agent string `arg:"" optional:"" env:"MAILFS_AGENT" help:"The agent."`
	Dir   string `default:"." type:"path" placeholder:"WORKTREE" help:"The agent's worktree."`
}

func (c *doctorCmd) Help() string {
	return `Says, for one agent, where its root is, what waits in its mailbox, when
its hooks and its MCP tools last ran, whether live delivery is on here
($MAILFS_LIVE), which deliverers run for it now and whether Claude Code's
crossSessionInbound setting (Qwen Code's agents.crossSessionInbound) holds
or refuses their doorbells, this host's name and the agent's home
host, whether this host's clock is behind the town's (the newest commit
another host pushed, as the last sync fetched it), whether the MCP server's and the web view's binaries (mailfs-mcp,
mailfs-serve) are installed, and for each runtime in --dir whether it will
run mailfs: its files parse and hold mailfs's entries, each hook command
runs as the runtime runs it (through sh -c in --dir, with --help added so
mailfs only prints its help), and the runtime's own switches let them run
(Claude Code's disableAllHooks; Gemini CLI's folder trust; Codex's project
trust, hooks switch and /hooks approval). Lines starting "!" say what
stands in the way. Exit status 0 when at least one runtime will run mailfs
for the agent, 1 when none will.`
}

// liveState says whether live delivery is on for agent here and which
// deliverers run for it now.
func liveState(s *maildir.Store, agent, dir string, warn func(error)) string {
	held := ""
	says := map[string]string{"hold": "held", "refuse": "refused"}
	if v, f := agentrt.ClaudeInbound(agentrt.ClaudeConfig(os.Getenv), dir); v == "hold" || v == "refuse" {
		held = fmt.Sprintf("; but Claude Code's crossSessionInbound is %q in %s, so no doorbell goes to its sessions here (receipts say %s; the hooks still show mail)", v, f, says[v])
	}
	if v, f := agentrt.QwenInbound(agentrt.QwenHome(os.Getenv), dir); v == "hold" || v == "refuse" {
		held += fmt.Sprintf("; but Qwen Code's agents.crossSessionInbound is %q in %s, so no doorbell goes to its sessions here (receipts say %s; the hooks still show mail)", v, f, says[v])
	}
	if liveOff() {
		return "off: $MAILFS_LIVE is " + os.Getenv("MAILFS_LIVE") + " here, so no deliverer starts from this environment (the hooks still show mail)"
	}
	recs, err := live.Records(s, agent)
	if err != nil {
		warn(err)
	}
	var running []string
	for _, r := range recs {
		if r.Live() {
			running = append(running, fmt.Sprintf("%s session %d (%s, %d doorbells)", r.Session.Runtime, r.Session.Process.PID, cmp.Or(r.Session.Status, "status unknown"), r.Rings))
		}
	}
	if len(running) == 0 {
		return "on; no deliverer runs for " + agent + " now (a Claude Code, Qwen Code or OpenCode session set up by mailfs setup starts one; mailfs live tmux for others)" + held
	}
	return fmt.Sprintf("on; %d deliverer(s) running: %s", len(running), strings.Join(running, "; ")) + held
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
	h := &hook.Handler{Collector: hook.Collector{Store: s, Nudges: q}}
	seen, ev, err := h.Seen(agent)
	if err != nil {
		a.warn(err)
	}
	if seen.IsZero() {
		fmt.Fprintf(a.out, "hooks ran: never (no hook or check --inject has run for %s as this user)\n", agent)
	} else {
		fmt.Fprintf(a.out, "hooks ran: %s at %s (%s ago)\n", ev, seen.UTC().Format(time.RFC3339), time.Since(seen).Round(time.Second))
	}
	if used, tool, err := h.MCPSeen(agent); err == nil && !used.IsZero() {
		fmt.Fprintf(a.out, "mcp used:  %s at %s (%s ago)\n", tool, used.UTC().Format(time.RFC3339), time.Since(used).Round(time.Second))
	} else {
		fmt.Fprintf(a.out, "mcp used:  never (no MCP tool call for %s as this user)\n", agent)
	}
	fmt.Fprintf(a.out, "live:      %s\n", liveState(s, agent, c.Dir, a.warn))
	host, err := s.LocalHost()
	if err != nil {
		return err
	}
	home, err := s.HomeOf(maildir.Address{Kind: maildir.KindAgent, Name: agent})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.out, "host:      %s\n", hostLine(host, home.Host, agent))
	town, ok, err := gitsync.TownClock(a.ctx, s, "")
	if line := clockLine(time.Now(), town, ok, err); line != "" {
		fmt.Fprintf(a.out, "clock:     %s\n", line)
	}
	mcpErr := printHelpers(a)
	if c.printRuntimes(a, agent, mcpErr) == 0 {
		return &exitStatus{code: exitNothing}
	}
	return nil
}

// hostLine says which host this is and whether it is agent's home, where
// its mail is marked and archived.
func hostLine(host, home, agent string) string {
	switch {
	case host == "" && home == "":
		return "no name: a town on one machine (mailfs host NAME before mailfs sync)"
	case home == host:
		return fmt.Sprintf("%s, %s's home", host, agent)
	case home == "":
		return fmt.Sprintf("%s; %s has no home yet, so its mail cannot be marked or archived (mailfs home claim %s)", host, agent, agent)
	}
	return fmt.Sprintf("%s; %s's home is %s, where its mail is marked and archived", cmp.Or(host, "no name"), agent, home)
}

// clockLine says whether this host's clock is behind the town's, as the
// last sync saw it (see gitsync.TownClock), or "" when no other host's
// commit was seen.
func clockLine(now, town time.Time, ok bool, err error) string {
	switch {
	case err != nil:
		return fmt.Sprintf("cannot tell: %v", err)
	case !ok:
		return ""
	}
	seen := fmt.Sprintf("the newest commit another host pushed, as of the last sync: %s", town.UTC().Format(time.RFC3339))
	if behind := gitsync.ClockBehind(now, town); behind > 0 {
		return fmt.Sprintf("! %s behind the town's (%s): set this host's clock right (NTP); queue order and tombstones go by the clocks (docs/routing.md, docs/machines.md)", behind.Round(time.Second), seen)
	}
	return fmt.Sprintf("not behind the town's by more than %s (%s)", gitsync.MaxSkew, seen)
}

// printHelpers says where the helper binaries are, or that they are
// missing and what then cannot run; it returns why mailfs-mcp cannot be
// found, if it cannot.
func printHelpers(a *app) (mcpErr error) {
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
	if codexBin, err := helperBinary("mailfs-codex", "the Codex launcher"); err != nil {
		fmt.Fprintf(a.out, "launcher:  mailfs-codex not found beside mailfs or on $PATH: \"mailfs live codex\" cannot start Codex (go install ./cmd/... from a clone)\n")
	} else {
		fmt.Fprintf(a.out, "launcher:  %s\n", codexBin)
	}
	return mcpErr
}

// printRuntimes prints what each runtime's set-up in the worktree lacks,
// and returns how many are ready to run mailfs. mcpErr is why mailfs-mcp
// cannot be found, if it cannot: Codex needs it.
func (c *doctorCmd) printRuntimes(a *app, agent string, mcpErr error) (ready int) {
	env := setup.Env{Getenv: os.Getenv, LookPath: exec.LookPath, Environ: os.Environ()}
	for _, rt := range agentrt.Installable() {
		ok, findings := setup.Check(rt, c.Dir, agent, env)
		if rt == agentrt.Codex && mcpErr != nil && len(findings) > 0 && strings.Contains(findings[0].Text, "mcp_servers.mailfs") {
			ok = false
			findings = append(findings, setup.Finding{Text: "its MCP server, mailfs-mcp, is missing"})
		}
		if ok {
			ready++
		}
		for i, f := range findings {
			label := ""
			if i == 0 {
				label = string(rt) + ":"
			}
			mark := ""
			if !f.OK && i > 0 {
				mark = "! "
			}
			fmt.Fprintf(a.out, "%-10s %s%s\n", label, mark, f.Text)
		}
	}
	return ready
}
