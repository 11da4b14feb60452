package setup

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mailfs/mailfs/agentrt"
)

// Several agents may work in one worktree, each in its own session. Hooks
// written for one named agent serve only it; shared hooks name no agent
// and serve whichever agent $MAILFS_AGENT names in each session's
// environment (MAILFS_AGENT=bob claude), as the plugin does.

// HookAgent returns the agent a mailfs hook command names, or "" when it
// names none (it serves $MAILFS_AGENT), and whether cmd is mailfs's at
// all.
func HookAgent(cmd string) (agent string, isOurs bool) {
	if !ours().MatchString(cmd) {
		return "", false
	}
	f := strings.Fields(cmd)
	for i, w := range f {
		var rest []string
		switch {
		case isMailfs(strings.TrimSuffix(w, "'")) && i+2 < len(f) && (f[i+1] == "hook" || f[i+1] == "live"):
			rest = f[i+3:]
		case w == "mcp" && i+1 < len(f) && f[i+1] == "--agent" && i+2 < len(f):
			return f[i+2], true
		default:
			continue
		}
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
			return rest[0], true
		}
		return "", true
	}
	return "", true
}

// isMailfs reports whether the program w is mailfs or mailfs-hook.
func isMailfs(w string) bool {
	return strings.HasSuffix(w, "mailfs") || strings.HasSuffix(w, "mailfs-hook")
}

// Serves reports whom rt's mailfs set-up in the worktree dir serves, read
// from every file setup writes for rt that names an agent (hook commands,
// MCP servers' arguments, a plugin's AGENT): the agents they name, and
// shared when some name none.
func Serves(rt agentrt.Runtime, dir string) (agents []string, shared bool) {
	add := func(agent string) {
		switch {
		case agent == "":
			shared = true
		case !slices.Contains(agents, agent):
			agents = append(agents, agent)
		}
	}
	for _, cmd := range HookCommands(rt, dir) {
		if agent, ok := HookAgent(cmd); ok {
			add(agent)
		}
	}
	for _, f := range Files(rt) {
		_, data, err := ReadTarget(filepath.Join(dir, f.Path))
		if err != nil || data == nil {
			continue
		}
		var args []any
		switch {
		case f.Kind == KindMCP:
			var doc map[string]any
			if toml.Unmarshal(data, &doc) == nil {
				args, _ = dig(doc, mcpServer)["args"].([]any)
			}
		case f.Kind == KindMCPJSON, f.Kind == KindHooks && (rt == agentrt.Gemini || rt == agentrt.Qwen):
			args = mcpJSONArgs(data)
		case f.Kind == KindOpenCode:
			for _, a := range openCodeMCP(data) {
				args = append(args, a)
			}
		case f.Kind == KindPlugin:
			if agent, ok := pluginAgent(data); ok {
				add(agent)
			}
			continue
		}
		if agent, ok := mcpAgent(args); ok {
			add(agent)
		}
	}
	return agents, shared
}

// mcpAgent returns the agent an MCP server's args serve ("" when they
// name none: a shared server serves $MAILFS_AGENT), and whether they are
// mailfs's server at all.
func mcpAgent(args []any) (agent string, ok bool) {
	if !slices.Contains(args, any("mcp")) {
		return "", false
	}
	if i := slices.Index(args, any("--agent")); i >= 0 && i+1 < len(args) {
		agent, _ = args[i+1].(string)
	}
	return agent, true
}

// ErrOtherAgent is returned by [Guard] when a worktree's set-up serves
// another agent than the one being set up.
var ErrOtherAgent = errors.New("setup: the worktree is set up for another agent")

// Guard refuses to replace, without being told, a set-up of rt that serves
// another agent (its hooks, MCP server or plugin name another, or none):
// setting up bob where alice's set-up is would silently take alice's mail
// away from her sessions. agent "" is a shared set-up.
func Guard(rt agentrt.Runtime, dir, agent string) error {
	agents, shared := Serves(rt, dir)
	others := slices.DeleteFunc(slices.Clone(agents), func(a string) bool { return a == agent })
	switch {
	case agent == "" && len(agents) > 0:
		return nil // a shared set-up serves every agent, those named before included
	case len(others) > 0:
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%w: %s in %s serves %s, not %s", ErrOtherAgent, rt, abs, strings.Join(others, ", "), agent)
	case shared && agent != "":
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%w: %s in %s is shared (each session's $MAILFS_AGENT says who it is), not %s's alone", ErrOtherAgent, rt, abs, agent)
	}
	return nil
}
