package setup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A Runtime names an agent runtime setup knows.
type Runtime string

// The runtimes.
const (
	Claude Runtime = "claude"
	Gemini Runtime = "gemini"
	Codex  Runtime = "codex"
)

// Runtimes lists them.
var Runtimes = []Runtime{Claude, Gemini, Codex}

// File is the configuration file setup writes for rt, relative to the
// agent's worktree.
func File(rt Runtime) string {
	switch rt {
	case Claude:
		return filepath.Join(".claude", "settings.json")
	case Gemini:
		return filepath.Join(".gemini", "settings.json")
	}
	return filepath.Join(".codex", "config.toml")
}

// hookEvents maps mailfs's hook events to each runtime's event names, and
// says which take a tool matcher.
var hookEvents = map[Runtime][]struct{ mailfs, runtime, matcher string }{
	Claude: {{"session-start", "SessionStart", ""}, {"prompt-submit", "UserPromptSubmit", ""}, {"post-tool", "PostToolUse", "*"}, {"stop", "Stop", ""}},
	Gemini: {{"session-start", "SessionStart", ""}, {"prompt-submit", "BeforeAgent", ""}, {"post-tool", "AfterTool", ".*"}, {"stop", "AfterAgent", ""}},
}

// Command is the mailfs hook command for runtime rt's event.
func Command(bin string, rt Runtime, event, agent string) string {
	cmd := fmt.Sprintf("%s hook %s %s", bin, event, agent)
	if rt != Claude {
		cmd += " --runtime " + string(rt)
	}
	return cmd
}

// ours matches a command mailfs installed, whatever the binary's path and
// the agent.
var ours = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)mailfs(-[a-z]+)? (hook|mcp)\b`) })

// Apply returns the configuration file for rt with mailfs installed for
// agent, bin being the command that runs mailfs. old is the file's content,
// nil if there is none. An old file that cannot be read as the runtime's
// format is an error: nothing is overwritten.
func Apply(rt Runtime, old []byte, bin, agent string) ([]byte, error) {
	switch rt {
	case Claude, Gemini:
		return applyHooks(rt, old, bin, agent)
	case Codex:
		return applyCodex(old, bin, agent), nil
	}
	return nil, fmt.Errorf("setup: unknown runtime %q (want claude, gemini or codex)", rt)
}

// applyHooks merges mailfs's hooks into a Claude Code or Gemini CLI
// settings.json.
func applyHooks(rt Runtime, old []byte, bin, agent string) ([]byte, error) {
	settings := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &settings); err != nil {
			return nil, fmt.Errorf("setup: %s is not JSON (%v): fix it or move it aside; nothing was changed", File(rt), err)
		}
	}
	hooks, ok := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !ok {
		return nil, fmt.Errorf("setup: %s: \"hooks\" is not an object; nothing was changed", File(rt))
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, ev := range hookEvents[rt] {
		groups, _ := hooks[ev.runtime].([]any)
		groups = dropOurs(groups)
		entry := map[string]any{"type": "command", "command": Command(bin, rt, ev.mailfs, agent), "timeout": 10}
		if rt == Gemini {
			entry["name"] = "mailfs-" + ev.mailfs
			entry["timeout"] = 10000 // milliseconds
		}
		group := map[string]any{"hooks": []any{entry}}
		if ev.matcher != "" {
			group["matcher"] = ev.matcher
		}
		hooks[ev.runtime] = append(groups, group)
	}
	settings["hooks"] = hooks
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// dropOurs removes mailfs's hooks from a list of hook groups, keeping every
// other hook, and groups left empty only if they were ours.
func dropOurs(groups []any) []any {
	var out []any
	for _, g := range groups {
		group, ok := g.(map[string]any)
		if !ok {
			out = append(out, g)
			continue
		}
		list, ok := group["hooks"].([]any)
		if !ok {
			out = append(out, g)
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(list), func(h any) bool {
			m, ok := h.(map[string]any)
			cmd, _ := m["command"].(string)
			return ok && ours().MatchString(cmd)
		})
		if len(kept) == 0 && len(list) > 0 {
			continue // the group held only mailfs's hook
		}
		group["hooks"] = kept
		out = append(out, group)
	}
	return out
}

// Installed reports which of rt's events in the configuration file have
// mailfs's hook for agent (for Codex: whether the MCP server is registered
// for agent), and which are missing.
func Installed(rt Runtime, data []byte, agent string) (have, missing []string) {
	if rt == Codex {
		if strings.Contains(string(data), "[mcp_servers.mailfs]") && strings.Contains(string(data), `"--agent", "`+agent+`"`) {
			return []string{"mcp_servers.mailfs"}, nil
		}
		return nil, []string{"mcp_servers.mailfs"}
	}
	var settings struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	json.Unmarshal(data, &settings)
	for _, ev := range hookEvents[rt] {
		found := false
		for _, g := range settings.Hooks[ev.runtime] {
			for _, h := range g.Hooks {
				f := strings.Fields(h.Command)
				if ours().MatchString(h.Command) && slices.Contains(f, ev.mailfs) && slices.Contains(f, agent) {
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
	return have, missing
}

// applyCodex registers mailfs's MCP server in a Codex config.toml: its
// [mcp_servers.mailfs] table is replaced, or appended, and every other line
// is kept as it was.
func applyCodex(old []byte, bin, agent string) []byte {
	table := fmt.Sprintf("[mcp_servers.mailfs]\ncommand = %q\nargs = [\"mcp\", \"--agent\", %q]\n", bin, agent)
	lines := strings.SplitAfter(string(old), "\n")
	var out strings.Builder
	in, done := false, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			in = t == "[mcp_servers.mailfs]"
			if in && !done {
				out.WriteString(table)
				done = true
			}
		}
		if !in {
			out.WriteString(l)
		}
	}
	s := out.String()
	if !done {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		if s != "" {
			s += "\n"
		}
		s += table
	}
	return []byte(s)
}
