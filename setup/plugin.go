package setup

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/mailfs/mailfs/agentrt"
)

// pluginVersion is a build's version as a plugin manifest wants it: the
// module version without its "v", or 0.0.0-dev for a build from a clone.
func pluginVersion(v string) string {
	if strings.HasPrefix(v, "v") && !strings.Contains(v, " ") {
		return strings.TrimPrefix(v, "v")
	}
	return "0.0.0-dev"
}

// PluginFiles is a Claude Code plugin that carries mailfs's hooks, its MCP
// server and its skill, for installing mailfs into Claude Code as one unit
// (claude --plugin-dir DIR, or a marketplace): paths relative to the
// plugin's folder, and their content. The plugin serves whichever agent
// $MAILFS_AGENT names in the session's environment; bin is the command
// that runs mailfs.
func PluginFiles(bin, version string) map[string][]byte {
	manifest, _ := marshal(map[string]any{
		"name":        "mailfs",
		"version":     pluginVersion(version),
		"description": "Filesystem mail for coding agents: unread mail and nudges at every prompt, a stop held while urgent mail waits, and mail tools over MCP.",
		"author":      map[string]string{"name": "mailfs"},
		"homepage":    "https://github.com/mailfs/mailfs",
		"license":     "MIT",
	})
	mcp, _ := marshal(map[string]any{"mcpServers": map[string]any{"mailfs": map[string]any{"command": bin, "args": []string{"mcp"}}}})
	return map[string][]byte{
		filepath.Join(".claude-plugin", "plugin.json"): indent(manifest),
		filepath.Join("hooks", "hooks.json"):           freshHooks(hookEvents(agentrt.Claude), group(agentrt.Claude, bin, "", nil)),
		".mcp.json":                                    indent(mcp),
		filepath.Join("skills", "mailfs", "SKILL.md"):  Skill(""),
	}
}

// PluginPaths lists the plugin's files in order.
func PluginPaths(files map[string][]byte) []string {
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

func indent(data []byte) []byte { return append(marshalIndent(jsonRaw(data), "", "  "), '\n') }
