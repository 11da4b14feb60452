package setup

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/mailfs/mailfs/agentrt"
)

// Binary is the command each runtime's CLI is installed as, which setup
// looks for on $PATH to detect it.
func Binary(rt agentrt.Runtime) string { return string(rt) }

// What a file does for a runtime.
const (
	KindHooks = "hooks" // the hook commands
	KindMCP   = "mcp"   // the MCP server
	KindSkill = "skill" // the Agent Skill
	// KindMCPJSON is an MCP server in a JSON file of its own kind
	// (mcpServers), Copilot CLI's workspace .github/mcp.json.
	KindMCPJSON = "mcp.json"
	// KindOpenCode is opencode.json's "mcp" entry, and KindPlugin a file
	// setup owns whole (OpenCode's plugin).
	KindOpenCode = "opencode.json"
	KindPlugin   = "plugin"
)

// A File is one file setup writes for a runtime, relative to the worktree.
type File struct {
	Path string
	Kind string // KindHooks, KindMCP or KindSkill
}

// Files lists the files setup writes for rt.
func Files(rt agentrt.Runtime) []File {
	switch rt {
	case agentrt.Claude:
		return []File{{filepath.Join(".claude", "settings.json"), KindHooks}, {filepath.Join(".claude", "skills", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.Gemini:
		return []File{{filepath.Join(".gemini", "settings.json"), KindHooks}, {filepath.Join(".gemini", "skills", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.Codex:
		return []File{{filepath.Join(".codex", "config.toml"), KindMCP}, {filepath.Join(".codex", "hooks.json"), KindHooks},
			{filepath.Join(".agents", "skills", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.Qwen:
		return []File{{filepath.Join(".qwen", "settings.json"), KindHooks}, {filepath.Join(".qwen", "skills", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.Copilot:
		return []File{{filepath.Join(".github", "hooks", "mailfs.json"), KindHooks}, {filepath.Join(".github", "mcp.json"), KindMCPJSON},
			{filepath.Join(".github", "skills", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.OpenCode:
		return []File{{"opencode.json", KindOpenCode}, {filepath.Join(".opencode", "plugins", "mailfs.js"), KindPlugin},
			{filepath.Join(".opencode", "skill", "mailfs", "SKILL.md"), KindSkill}}
	case agentrt.Pi:
		return []File{{filepath.Join(".pi", "extensions", "mailfs.ts"), KindPlugin}, {filepath.Join(".pi", "skills", "mailfs", "SKILL.md"), KindSkill}}
	}
	return nil
}

// copilotHooks is .github/hooks/mailfs.json, a file of mailfs's own
// (Copilot CLI reads every .github/hooks/*.json): only agentStop. Copilot
// CLI shows the model nothing its sessionStart, userPromptSubmitted or
// postToolUse hooks print (tried with 1.0.102), and a hook that speaks
// to no one must not record mail as shown; agentStop's block does reach
// it (its reason is the next prompt).
func copilotHooks(bin, agent string, keep prefixes) []byte {
	var entries []any
	for _, ev := range hookEvents(agentrt.Copilot) {
		entries = append(entries, ordered{[]string{"type", "bash", "timeoutSec"}, map[string]any{"type": "command", "bash": keep["hook "+ev.mailfs] + Command(bin, agentrt.Copilot, ev.mailfs, agent), "timeoutSec": 30}})
	}
	hooks := map[string]any{}
	for i, ev := range hookEvents(agentrt.Copilot) {
		hooks[ev.runtime] = []any{entries[i]}
	}
	return append(marshalIndent(ordered{[]string{"version", "hooks"}, map[string]any{"version": 1, "hooks": hooks}}, "", "  "), '\n')
}

// mcpArgs are the MCP server's arguments for agent; a shared set-up
// ("") names none, and the server serves $MAILFS_AGENT.
func mcpArgs(agent string) []string {
	if agent == "" {
		return []string{"mcp"}
	}
	return []string{"mcp", "--agent", agent}
}

// sharedEnv are the variables a shared set-up's MCP server needs from the
// session's environment: who it serves, and where the town is.
var sharedEnv = []string{"MAILFS_AGENT", "MAILFS_ROOT", "MAILFS_STATE_DIR"}

// hookEvents maps mailfs's hook events to each runtime's event names, with
// a tool matcher where the event takes one. Codex: the events its
// hooks.json runs in a real turn (SessionStart, UserPromptSubmit, Stop).
func hookEvents(rt agentrt.Runtime) []hookEvent {
	switch rt {
	case agentrt.Claude:
		return []hookEvent{{"session-start", "SessionStart", ""}, {"prompt-submit", "UserPromptSubmit", ""}, {"post-tool", "PostToolUse", "*"}, {"stop", "Stop", ""}}
	case agentrt.Gemini:
		return []hookEvent{{"session-start", "SessionStart", ""}, {"prompt-submit", "BeforeAgent", ""}, {"post-tool", "AfterTool", ".*"}, {"stop", "AfterAgent", ""}}
	case agentrt.Codex:
		return []hookEvent{{"session-start", "SessionStart", ""}, {"prompt-submit", "UserPromptSubmit", ""}, {"stop", "Stop", ""}}
	case agentrt.Qwen:
		return []hookEvent{{"session-start", "SessionStart", ""}, {"prompt-submit", "UserPromptSubmit", ""}, {"post-tool", "PostToolUse", "*"}, {"stop", "Stop", ""}}
	case agentrt.Copilot:
		return []hookEvent{{"stop", "agentStop", ""}}
	}
	return nil
}

// Command is the mailfs hook command for runtime rt's event, run by
// [HookBinary] of bin; agent "" leaves it to $MAILFS_AGENT.
func Command(bin string, rt agentrt.Runtime, event, agent string) string {
	cmd := shellQuote(HookBinary(bin)) + " hook " + event
	if agent != "" {
		cmd += " " + agent
	}
	if rt != agentrt.Claude {
		cmd += " --runtime " + string(rt)
	}
	return cmd
}

// HookBinary is the program the per-turn calls (hooks, live seen) run for
// bin, the mailfs setup was told to use: mailfs-hook beside it (mailfs
// gives mailfs-hook, /opt/bin/mailfs gives /opt/bin/mailfs-hook), which
// answers them as mailfs does and starts faster; any other program (a
// wrapper script) as it is.
func HookBinary(bin string) string {
	if filepath.Base(bin) == "mailfs" {
		return bin + "-hook"
	}
	return bin
}

// shellQuote quotes s for sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:@%=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// group is mailfs's hook group for rt's event.
func group(rt agentrt.Runtime, bin, agent string, keep prefixes) func(hookEvent) map[string]any {
	return func(ev hookEvent) map[string]any {
		entry := map[string]any{"type": "command", "command": keep["hook "+ev.mailfs] + Command(bin, rt, ev.mailfs, agent), "timeout": 10}
		if rt == agentrt.Gemini {
			entry["name"] = "mailfs-" + ev.mailfs
			entry["timeout"] = 10000 // milliseconds
		}
		hooks := []any{entry}
		if (rt == agentrt.Claude || rt == agentrt.Qwen) && ev.mailfs == "session-start" {
			live := liveEntry(rt, bin, agent)
			live["command"] = keep["live"] + live["command"].(string)
			hooks = append(hooks, live)
		}
		g := map[string]any{"hooks": hooks}
		if ev.matcher != "" {
			g["matcher"] = ev.matcher
		}
		return g
	}
}

// LiveCommand is the command of rt's async SessionStart hook that runs
// the session's live deliverer; agent "" leaves it to $MAILFS_AGENT.
func LiveCommand(rt agentrt.Runtime, bin, agent string) string {
	cmd := shellQuote(bin) + " live " + string(rt)
	if agent != "" {
		cmd += " " + agent
	}
	return cmd
}

// liveEntry is the hook that runs the live deliverer: async, so the
// session does not wait for it, with a timeout of a week. Claude Code
// stops an async hook when the session ends, not at its timeout (seconds);
// Qwen Code reclaims it when the session exits, and reads a timeout of
// 1000 or more as milliseconds.
func liveEntry(rt agentrt.Runtime, bin, agent string) map[string]any {
	timeout := 7 * 24 * 3600
	if rt == agentrt.Qwen {
		timeout *= 1000
	}
	return map[string]any{"type": "command", "command": LiveCommand(rt, bin, agent), "async": true, "timeout": timeout}
}

// prefixes are the variables a person set before mailfs in its hook
// commands ("MAILFS_LIVE=off " before "mailfs live claude toast", the
// documented way to turn live delivery off there), by what the command
// runs: "hook EVENT" or "live". setup writes them back before its own
// commands: they are the person's, not mailfs's.
type prefixes map[string]string

// assignment reports whether the word w is a shell variable assignment
// (NAME=value), as words before a command's program are.
func assignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" || name[0] >= '0' && name[0] <= '9' {
		return false
	}
	return strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == ""
}

// userPrefixes finds the prefixes in a hook file's mailfs commands.
func userPrefixes(data []byte) prefixes {
	v, err := hujson.Parse(data)
	if len(data) == 0 || err != nil {
		return nil
	}
	keep := prefixes{}
	for val := range v.All() {
		var s string
		if lit, ok := val.Value.(hujson.Literal); !ok || json.Unmarshal(lit, &s) != nil || !ours().MatchString(s) {
			continue
		}
		f := strings.Fields(s)
		n := 0
		for n < len(f) && assignment(f[n]) {
			n++
		}
		if n == 0 || n+2 >= len(f) || !isMailfs(strings.Trim(f[n], "'")) {
			continue
		}
		switch f[n+1] {
		case "hook":
			keep["hook "+f[n+2]] = strings.Join(f[:n], " ") + " "
		case "live":
			keep["live"] = strings.Join(f[:n], " ") + " "
		}
	}
	return keep
}

// ours matches a command mailfs installed, whatever the binary's path,
// the agent, and what the command says before it (MAILFS_LIVE=off ...).
var ours = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[\s/])mailfs(-[a-z]+)?'? (hook|mcp|live)\b`) })

//go:embed assets/SKILL.md
var skill string

//go:embed assets/opencode-plugin.js
var openCodePlugin string

//go:embed assets/pi-extension.ts
var piExtension string

// PiExtension is mailfs's pi extension for agent ("" reads $MAILFS_AGENT
// in each session), running bin.
func PiExtension(bin, agent string) []byte { return fill(piExtension, bin, agent) }

// OpenCodePlugin is mailfs's OpenCode plugin for agent ("" reads
// $MAILFS_AGENT in each session), running bin.
func OpenCodePlugin(bin, agent string) []byte { return fill(openCodePlugin, bin, agent) }

// fill puts bin, its HookBinary and agent, as JavaScript strings, into a
// plugin template.
func fill(template, bin, agent string) []byte {
	b, _ := json.Marshal(bin)
	h, _ := json.Marshal(HookBinary(bin))
	a, _ := json.Marshal(agent)
	return []byte(strings.NewReplacer("__BIN__", string(b), "__HOOKBIN__", string(h), "__AGENT__", string(a)).Replace(template))
}

// pluginAgent returns the agent a plugin file serves ("" when it names
// none: it serves $MAILFS_AGENT), and whether the file is mailfs's
// plugin at all.
func pluginAgent(data []byte) (agent string, ok bool) {
	s := string(data)
	if !strings.Contains(s, "mailfs for OpenCode") && !strings.Contains(s, "mailfs for pi") {
		return "", false
	}
	// const AGENT = "name" || process.env.MAILFS_AGENT (pi: AGENT: string).
	for line := range strings.Lines(s) {
		rest, ok := strings.CutPrefix(line, "const AGENT = ")
		if !ok {
			rest, ok = strings.CutPrefix(line, "const AGENT: string = ")
		}
		quoted, _, found := strings.Cut(rest, " || ")
		if ok && found {
			return agent, json.Unmarshal([]byte(quoted), &agent) == nil
		}
	}
	return "", false
}

// pluginServes reports whether a plugin file is mailfs's, for agent (or
// for whichever agent $MAILFS_AGENT names).
func pluginServes(data []byte, agent string) bool {
	a, ok := pluginAgent(data)
	return ok && (a == agent || a == "")
}

// Skill is the Agent Skill (SKILL.md) that teaches agent the mailfs
// commands; agent "" writes $MAILFS_AGENT.
func Skill(agent string) []byte {
	agent = cmp.Or(agent, "$MAILFS_AGENT")
	return []byte(strings.ReplaceAll(skill, "AGENT", agent))
}

// A Change is one file setup writes: Path as named, Target the file written
// (Path, or the file its symbolic links lead to), Old its content (nil when
// there is none) and New what setup writes.
type Change struct {
	Path, Target string
	Old, New     []byte
}

// Plan returns the changes that set up rt for agent in the worktree dir,
// bin being the command that runs mailfs. It reads and writes nothing
// else: a file that exists but cannot be parsed is an error naming it, and
// then nothing may be written.
func Plan(rt agentrt.Runtime, dir, bin, agent string) ([]Change, error) {
	if !slices.Contains(agentrt.Installable(), rt) {
		var known []string
		for _, k := range agentrt.Installable() {
			known = append(known, string(k))
		}
		return nil, fmt.Errorf("setup: unknown runtime %q (want one of %s)", rt, strings.Join(known, ", "))
	}
	var changes []Change
	for _, f := range Files(rt) {
		path := filepath.Join(dir, f.Path)
		target, old, err := ReadTarget(path)
		if err != nil {
			return nil, err
		}
		var data []byte
		switch f.Kind {
		case KindHooks:
			if rt == agentrt.Copilot {
				data = copilotHooks(bin, agent, userPrefixes(old))
				break
			}
			data, err = editHooks(old, hookEvents(rt), group(rt, bin, agent, userPrefixes(old)))
			if err == nil && (rt == agentrt.Gemini || rt == agentrt.Qwen) {
				// Both read MCP servers from the same settings file: set up
				// here, no "gemini mcp add" is needed (which rewrites the
				// file and drops the hooks).
				data, err = editMCPServers(data, bin, mcpArgs(agent))
			}
		case KindMCP:
			// A shared set-up names no agent: each session's server takes
			// it from $MAILFS_AGENT, which Codex passes on only when asked.
			var envVars []string
			if agent == "" {
				envVars = sharedEnv
			}
			data, err = editCodexMCP(old, bin, mcpArgs(agent), envVars)
		case KindMCPJSON:
			data, err = editMCPServers(old, bin, mcpArgs(agent))
		case KindOpenCode:
			data, err = editOpenCodeMCP(old, bin, mcpArgs(agent))
		case KindPlugin:
			data = OpenCodePlugin(bin, agent)
			if rt == agentrt.Pi {
				data = PiExtension(bin, agent)
			}
		case KindSkill:
			data = Skill(agent)
		}
		if err != nil {
			return nil, fmt.Errorf("setup: %s: %w: fix it or move it aside; nothing was changed", path, err)
		}
		changes = append(changes, Change{Path: path, Target: target, Old: old, New: data})
	}
	return changes, nil
}

// ReadTarget follows path's symbolic links and reads the file they lead
// to: its path, and its content (nil if there is no file yet). A link that
// leads nowhere is an error: writing would replace the link.
func ReadTarget(path string) (target string, data []byte, err error) {
	target = path
	if _, err := os.Lstat(path); err == nil {
		target, err = filepath.EvalSymlinks(path)
		if err != nil {
			return "", nil, fmt.Errorf("setup: %s is a symbolic link to a file that does not exist: %w", path, err)
		}
	}
	data, err = os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return target, nil, nil
	}
	return target, data, err
}

// Installed reports which of what setup writes for rt is in place for
// agent in the worktree dir (hook events by the runtime's names,
// "mcp_servers.mailfs", "skill"), which is missing, and an error when a
// file cannot be read or parsed.
func Installed(rt agentrt.Runtime, dir, agent string) (have, missing []string, err error) {
	for _, f := range Files(rt) {
		path := filepath.Join(dir, f.Path)
		_, data, rerr := ReadTarget(path)
		if rerr != nil {
			return nil, nil, rerr
		}
		// is sorts what is in place into have and what is not into missing.
		is := func(ok bool, what string) {
			if ok {
				have = append(have, what)
			} else {
				missing = append(missing, what)
			}
		}
		switch f.Kind {
		case KindHooks:
			h, m, perr := installedHooks(rt, data, agent)
			if perr != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, perr)
			}
			have, missing = append(have, h...), append(missing, m...)
			if rt == agentrt.Gemini || rt == agentrt.Qwen {
				is(mcpJSONServes(data, agent), "mcpServers.mailfs")
			}
		case KindMCP:
			var doc map[string]any
			if perr := toml.Unmarshal(data, &doc); perr != nil {
				return nil, nil, fmt.Errorf("%s: not TOML (%v)", path, tomlError(perr))
			}
			args, _ := dig(doc, mcpServer)["args"].([]any)
			is(servesAgent(args, agent), "mcp_servers.mailfs")
		case KindOpenCode:
			is(openCodeServes(data, agent), "mcp.mailfs")
		case KindPlugin:
			is(pluginServes(data, agent), "plugin")
		case KindMCPJSON:
			is(mcpJSONServes(data, agent), "mcpServers.mailfs")
		case KindSkill:
			is(data != nil, "skill")
		}
	}
	return have, missing, nil
}

// mcpJSONServes reports whether a JSON settings file's mcpServers holds
// mailfs's server for agent.
func mcpJSONServes(data []byte, agent string) bool {
	return servesAgent(mcpJSONArgs(data), agent)
}

// mcpJSONArgs are the args of mcpServers.mailfs in a JSON settings file.
func mcpJSONArgs(data []byte) []any {
	var doc struct {
		MCPServers map[string]struct {
			Args []any `json:"args"`
		} `json:"mcpServers"`
	}
	if std, err := hujson.Standardize(bytes.Clone(data)); len(data) > 0 && err == nil {
		json.Unmarshal(std, &doc)
	}
	return doc.MCPServers["mailfs"].Args
}

// servesAgent reports whether an MCP server's args serve agent: they name
// it, or name none (a shared server serves $MAILFS_AGENT).
func servesAgent(args []any, agent string) bool {
	a, ok := mcpAgent(args)
	return ok && (a == agent || a == "")
}

// installedHooks reports which of rt's events have mailfs's hook for
// agent in a settings file's content.
func installedHooks(rt agentrt.Runtime, data []byte, agent string) (have, missing []string, err error) {
	if rt == agentrt.Copilot {
		return installedCopilotHooks(data, agent)
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if len(data) > 0 {
		std, err := hujson.Standardize(append([]byte(nil), data...))
		if err == nil {
			err = json.Unmarshal(std, &settings)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("not JSON (%v)", err)
		}
	}
	for _, ev := range hookEvents(rt) {
		found := false
		for _, g := range settings.Hooks[ev.runtime] {
			for _, h := range g.Hooks {
				if hookServes(h.Command, ev, agent) {
					found = true
				}
			}
		}
		if found {
			have = append(have, ev.runtime)
		} else {
			missing = append(missing, ev.runtime)
		}
	}
	return have, missing, nil
}

// hookServes reports whether the hook command cmd is mailfs's hook for
// event ev of agent: one that names the agent, or a shared one, which
// names none and serves every agent.
func hookServes(cmd string, ev hookEvent, agent string) bool {
	named, ok := HookAgent(cmd)
	return ok && slices.Contains(strings.Fields(cmd), ev.mailfs) && (named == agent || named == "")
}

// installedCopilotHooks is installedHooks for Copilot CLI's format:
// {"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": …}]}}.
func installedCopilotHooks(data []byte, agent string) (have, missing []string, err error) {
	var file struct {
		Hooks map[string][]struct {
			Bash string `json:"bash"`
		} `json:"hooks"`
	}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &file); err != nil {
			return nil, nil, fmt.Errorf("not JSON (%v)", err)
		}
	}
	for _, ev := range hookEvents(agentrt.Copilot) {
		found := false
		for _, h := range file.Hooks[ev.runtime] {
			if hookServes(h.Bash, ev, agent) {
				found = true
			}
		}
		if found {
			have = append(have, ev.runtime)
		} else {
			missing = append(missing, ev.runtime)
		}
	}
	return have, missing, nil
}

// HookCommands returns the mailfs hook commands rt's hook file in dir
// holds, for checking that they run.
func HookCommands(rt agentrt.Runtime, dir string) []string {
	var cmds []string
	for _, f := range Files(rt) {
		if f.Kind != KindHooks {
			continue
		}
		_, data, err := ReadTarget(filepath.Join(dir, f.Path))
		if err != nil || data == nil {
			continue
		}
		v, err := hujson.Parse(data)
		if err != nil {
			continue
		}
		for val := range v.All() {
			var s string
			if lit, ok := val.Value.(hujson.Literal); ok && json.Unmarshal(lit, &s) == nil && ours().MatchString(s) && !slices.Contains(cmds, s) {
				cmds = append(cmds, s)
			}
		}
	}
	return cmds
}
