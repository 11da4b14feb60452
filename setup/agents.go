package setup

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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

// Serves reports whom rt's mailfs hooks in the worktree dir serve: the
// agents they name, and shared when some name none.
func Serves(rt agentrt.Runtime, dir string) (agents []string, shared bool) {
	for _, cmd := range HookCommands(rt, dir) {
		agent, ok := HookAgent(cmd)
		switch {
		case !ok:
		case agent == "":
			shared = true
		case !slices.Contains(agents, agent):
			agents = append(agents, agent)
		}
	}
	return agents, shared
}

// ErrOtherAgent is returned by [Guard] when a worktree's hooks serve
// another agent than the one being set up.
var ErrOtherAgent = errors.New("setup: the worktree's hooks serve another agent")

// Guard refuses to replace, without being told, hooks that serve another
// agent: setting up bob where alice's hooks are would silently take
// alice's mail away from her sessions. agent "" is a shared set-up.
func Guard(rt agentrt.Runtime, dir, agent string) error {
	agents, shared := Serves(rt, dir)
	others := slices.DeleteFunc(slices.Clone(agents), func(a string) bool { return a == agent })
	switch {
	case agent == "" && len(agents) > 0:
		return nil // shared hooks serve every agent, those named before included
	case len(others) > 0:
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%w: %s's hooks in %s serve %s, not %s", ErrOtherAgent, rt, abs, strings.Join(others, ", "), agent)
	case shared && agent != "":
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%w: %s's hooks in %s are shared (each session's $MAILFS_AGENT), not %s's alone", ErrOtherAgent, rt, abs, agent)
	}
	return nil
}
