package setup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mailfs/mailfs/agentrt"
)

// A Finding is one thing Check says of a runtime.
type Finding struct {
	OK   bool   // false: as things stand, the runtime will not run mailfs
	Text string // one line
}

// Env is what Check reads of the machine: the environment and $PATH.
type Env struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
	// Environ is the environment a runtime runs its hooks in, as
	// os.Environ gives it; nil gives them only Getenv's PATH and HOME.
	Environ []string
}

// Check says whether rt will run mailfs for agent in the worktree dir:
// that its files parse and hold mailfs's entries, that each hook command
// runs through the shell as the runtime runs it (see runs), and that the runtime's own switches let them run
// (Claude Code's disableAllHooks; Gemini CLI's and Qwen Code's folder trust; Codex's
// project trust, hooks switch and /hooks approval). ready is true only
// when nothing stands in the way.
func Check(rt agentrt.Runtime, dir, agent string, env Env) (ready bool, findings []Finding) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, []Finding{{false, err.Error()}}
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	have, missing, err := Installed(rt, dir, agent)
	plugin := ""
	if rt == agentrt.Claude && err == nil && len(have) == 0 {
		plugin = claudePlugin(abs, env)
	}
	switch {
	case plugin != "":
		findings = append(findings, Finding{true, fmt.Sprintf("set up by the plugin %s (hooks, live deliverer, MCP server, skill) for the agent each session's $MAILFS_AGENT names", plugin)})
		if env.Getenv("MAILFS_AGENT") != "" && env.Getenv("MAILFS_AGENT") != agent {
			findings = append(findings, Finding{false, fmt.Sprintf("$MAILFS_AGENT here is %s: a session started from this shell is %s, not %s", env.Getenv("MAILFS_AGENT"), env.Getenv("MAILFS_AGENT"), agent)})
		}
	case err != nil:
		return false, []Finding{{false, fmt.Sprintf("cannot be read: %v", err)}}
	case len(have) == 0:
		return false, []Finding{{false, fmt.Sprintf("not set up for %s (mailfs setup %s)", agent, rt)}}
	case len(missing) > 0:
		findings = append(findings, Finding{false, fmt.Sprintf("partly set up (%s), missing %s (mailfs setup %s)", strings.Join(have, ", "), strings.Join(missing, ", "), rt)})
	default:
		findings = append(findings, Finding{true, fmt.Sprintf("set up (%s)", strings.Join(have, ", "))})
	}
	said := map[string]bool{} // each failure once, not once per hook
	for _, cmd := range HookCommands(rt, dir) {
		if f, why, ok := runs(cmd, abs, env); !ok && !said[why] {
			said[why] = true
			findings = append(findings, f)
		}
	}
	switch rt {
	case agentrt.Claude:
		findings = append(findings, claudeSwitches(abs, env)...)
	case agentrt.Gemini:
		findings = append(findings, geminiTrust(abs, env)...)
	case agentrt.Codex:
		findings = append(findings, codexTrust(abs, env)...)
	case agentrt.Qwen:
		findings = append(findings, qwenTrust(abs, env)...)
		findings = append(findings, qwenMCPApproval(abs, env))
	case agentrt.Copilot:
		findings = append(findings, copilotTrust(abs, env))
	case agentrt.OpenCode, agentrt.Pi:
		// The plugin runs mailfs as BIN names it.
		plugin := filepath.Join(abs, ".opencode", "plugins", "mailfs.js")
		if rt == agentrt.Pi {
			plugin = filepath.Join(abs, ".pi", "extensions", "mailfs.ts")
		}
		if _, data, err := ReadTarget(plugin); err == nil && data != nil {
			if m := pluginBin().FindSubmatch(data); m != nil {
				var bin string
				if json.Unmarshal(m[1], &bin) == nil {
					for _, prog := range []string{bin, HookBinary(bin)} { // live, and the hooks
						if f, ok := resolves(prog, abs, env); !ok {
							findings = append(findings, f)
						}
					}
				}
			}
		}
	}
	ready = true
	for _, f := range findings {
		ready = ready && f.OK
	}
	return ready, findings
}

// hookTimeout bounds one hook command's run by runs: the hooks' own
// timeout in the settings setup writes.
const hookTimeout = 10 * time.Second

// runs runs a hook command as the runtime runs it, through the shell
// (/bin/sh -c, in the worktree, standard input empty), so that whatever
// the command says before or around mailfs (MAILFS_LIVE=off mailfs-hook
// ..., a quoted path, cd dir && ...) is read as the runtime reads it. It
// adds --help, so mailfs answers with its help and does nothing. A
// command the shell cannot run (127: not found; 126: not executable) or
// that fails is a finding naming it, and what the shell said.
func runs(cmd, dir string, env Env) (f Finding, said string, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd+" --help")
	c.Dir = dir
	c.Env = env.Environ
	if c.Env == nil {
		c.Env = []string{"PATH=" + env.Getenv("PATH"), "HOME=" + env.Getenv("HOME")}
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	err := c.Run()
	if err == nil {
		return Finding{}, "", true
	}
	said, _, _ = strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	if said == "" {
		said = err.Error()
	}
	var exit *exec.ExitError
	code := -1
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	}
	switch code {
	case 127:
		return Finding{false, fmt.Sprintf("the hook command %q is not found when the runtime runs it (%s), so every hook fails with status 127 (install it, or mailfs setup --command PATH)", cmd, said)}, said, false
	case 126:
		return Finding{false, fmt.Sprintf("the hook command %q cannot be run (%s), so every hook fails with status 126 (mailfs setup --command PATH)", cmd, said)}, said, false
	}
	return Finding{false, fmt.Sprintf("the hook command %q fails when the runtime runs it (%s)", cmd, said)}, said, false
}

// resolves checks that a plugin's program exists (OpenCode and pi spawn
// it without a shell): a runtime would otherwise fail every hook.
func resolves(prog, dir string, env Env) (Finding, bool) {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return Finding{false, fmt.Sprintf("the plugin's command %s is not an executable file, so every hook fails (mailfs setup --command PATH)", prog)}, false
		}
		return Finding{}, true
	}
	if _, err := env.LookPath(prog); err != nil {
		return Finding{false, fmt.Sprintf("the plugin's command %s is not on $PATH, so every hook fails (install it, or mailfs setup --command PATH)", prog)}, false
	}
	return Finding{}, true
}

// home is the user's home folder as the runtimes find it.
func home(env Env, override string) string {
	if v := env.Getenv(override); v != "" && override != "" {
		return v
	}
	return env.Getenv("HOME")
}

// claudePlugin returns the name of an enabled Claude Code plugin that is
// mailfs's ("mailfs@marketplace" in enabledPlugins of the project's, the
// local or the user's settings), or "".
func claudePlugin(dir string, env Env) string {
	config := agentrt.ClaudeConfig(env.Getenv)
	for _, path := range []string{
		filepath.Join(dir, ".claude", "settings.local.json"),
		filepath.Join(dir, ".claude", "settings.json"),
		filepath.Join(config, "settings.json"),
	} {
		m, err := agentrt.ReadSettings(path)
		if err != nil {
			continue
		}
		enabled, _ := m["enabledPlugins"].(map[string]any)
		for name := range enabled {
			if (name == "mailfs" || strings.HasPrefix(name, "mailfs@")) && enabled[name] == true {
				return name
			}
		}
	}
	return ""
}

// claudeSwitches checks that no settings file Claude Code reads turns all
// hooks off.
func claudeSwitches(dir string, env Env) []Finding {
	config := agentrt.ClaudeConfig(env.Getenv)
	var out []Finding
	for _, path := range agentrt.ClaudeSettings(config, dir) {
		m, err := agentrt.ReadSettings(path)
		if err != nil {
			out = append(out, Finding{false, fmt.Sprintf("%s cannot be read: %v", path, err)})
			continue
		}
		if m["disableAllHooks"] == true {
			out = append(out, Finding{false, fmt.Sprintf("%s sets \"disableAllHooks\": true, so Claude Code runs no hooks", path)})
		}
	}
	return out
}

// geminiTrust checks Gemini CLI's folder trust: on by default, and in a
// folder not trusted Gemini CLI loads neither the project's hooks nor its
// MCP servers.
func geminiTrust(dir string, env Env) []Finding {
	if env.Getenv("GEMINI_CLI_TRUST_WORKSPACE") == "true" {
		return []Finding{{true, "Gemini CLI trusts this folder ($GEMINI_CLI_TRUST_WORKSPACE=true)"}}
	}
	gemini := filepath.Join(home(env, "GEMINI_CLI_HOME"), ".gemini")
	rules := env.Getenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
	rules = cmp.Or(rules, filepath.Join(gemini, "trustedFolders.json"))
	return folderTrust("Gemini CLI", Binary(agentrt.Gemini), dir, gemini, rules, true)
}

// qwenTrust checks Qwen Code's folder trust (Gemini CLI's, off by
// default): when on, an untrusted folder's .qwen/settings.json, and so
// its hooks, are not loaded.
func qwenTrust(dir string, env Env) []Finding {
	qwen := agentrt.QwenHome(env.Getenv)
	return folderTrust("Qwen Code", Binary(agentrt.Qwen), dir, qwen, filepath.Join(qwen, "trustedFolders.json"), false)
}

// qwenMCPApproval checks that the person approved the project's MCP
// server: Qwen Code runs a server a project's settings name only once a
// person approved it (recorded per project in
// $QWEN_CODE_MCP_APPROVALS_PATH, else <QWEN_HOME>/mcpApprovals.json, and
// bound to the entry as it was: an edited entry is asked about again).
func qwenMCPApproval(dir string, env Env) Finding {
	qwen := agentrt.QwenHome(env.Getenv)
	path := env.Getenv("QWEN_CODE_MCP_APPROVALS_PATH")
	path = cmp.Or(path, filepath.Join(qwen, "mcpApprovals.json"))
	m, _ := agentrt.ReadSettings(path)
	project, _ := m[dir].(map[string]any)
	rec, _ := project["mailfs"].(map[string]any)
	switch rec["status"] {
	case "approved":
		return Finding{true, "Qwen Code's person approved the project's MCP server mailfs (an edited entry is asked about again)"}
	case "rejected":
		return Finding{false, fmt.Sprintf("Qwen Code's person rejected the project's MCP server mailfs (%s): the mail tools are off there; the hooks still run", path)}
	}
	return Finding{false, "Qwen Code runs the project's MCP server mailfs only once approved: start qwen in " + dir + " and approve it when asked (the hooks run meanwhile)"}
}

// pluginBin finds the command OpenCode's mailfs plugin runs.
var pluginBin = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^const BIN(?:: string)? = ("(?:[^"\\]|\\.)*")$`)
})

// copilotTrust checks that Copilot CLI trusts the folder: it loads a
// workspace's hooks and MCP servers only in a folder listed (itself or a
// parent) in trusted_folders of $COPILOT_HOME/config.json (default
// ~/.copilot), which it asks about at its first start there.
func copilotTrust(dir string, env Env) Finding {
	home := env.Getenv("COPILOT_HOME")
	home = cmp.Or(home, filepath.Join(env.Getenv("HOME"), ".copilot"))
	path := filepath.Join(home, "config.json")
	m, _ := agentrt.ReadSettings(path)
	folders, _ := m["trusted_folders"].([]any)
	for _, f := range folders {
		if s, ok := f.(string); ok && (dir == s || strings.HasPrefix(dir, strings.TrimSuffix(s, "/")+"/")) {
			return Finding{true, "Copilot CLI trusts this folder (" + s + " in " + path + ")"}
		}
	}
	return Finding{false, "Copilot CLI does not trust " + dir + ", so it loads neither .github/hooks nor .github/mcp.json there: start copilot there and trust the folder (or add it to trusted_folders in " + path + "; copilot -p --trust-folder trusts it for one run)"}
}

// folderTrust checks the folder trust Gemini CLI and Qwen Code share:
// settings.json's security.folderTrust.enabled switches it (on is the
// default when on is true), and the rule for a folder is the longest
// matching path in the rules file (TRUST_PARENT trusts the path's parent).
func folderTrust(product, bin, dir, confDir, rulesPath string, on bool) []Finding {
	settings, err := agentrt.ReadSettings(filepath.Join(confDir, "settings.json"))
	if err != nil {
		return []Finding{{false, fmt.Sprintf("%s cannot be read: %v", filepath.Join(confDir, "settings.json"), err)}}
	}
	if sec, _ := settings["security"].(map[string]any); sec != nil {
		if ft, _ := sec["folderTrust"].(map[string]any); ft != nil {
			if enabled, ok := ft["enabled"].(bool); ok {
				on = enabled
			}
		}
	}
	if !on {
		return nil // folder trust is off: every folder loads
	}
	rules, err := agentrt.ReadSettings(rulesPath)
	if err != nil {
		return []Finding{{false, fmt.Sprintf("%s cannot be read: %v", rulesPath, err)}}
	}
	best, level := -1, ""
	for rule, v := range rules {
		lv, _ := v.(string)
		eff := rule
		if lv == "TRUST_PARENT" {
			eff = filepath.Dir(rule)
		}
		if real, err := filepath.EvalSymlinks(eff); err == nil {
			eff = real
		}
		if within(dir, eff) && len(rule) > best {
			best, level = len(rule), lv
		}
	}
	if level == "TRUST_FOLDER" || level == "TRUST_PARENT" {
		return []Finding{{true, product + " trusts this folder"}}
	}
	return []Finding{{false, fmt.Sprintf("%s does not trust %s, so it loads none of its project settings (hooks, MCP servers): start %s there and trust the folder (or add it to %s)", product, dir, bin, rulesPath)}}
}

// within reports whether path is dir or inside it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// codexTrust checks what Codex needs before it runs a project's hooks and
// MCP server: hooks switched on, the project trusted (an untrusted
// project's .codex/ is not loaded), and each hook approved in /hooks.
func codexTrust(dir string, env Env) []Finding {
	codexHome := env.Getenv("CODEX_HOME")
	codexHome = cmp.Or(codexHome, filepath.Join(env.Getenv("HOME"), ".codex"))
	userConfig := filepath.Join(codexHome, "config.toml")
	var user map[string]any
	if data, err := os.ReadFile(userConfig); err == nil {
		if err := toml.Unmarshal(data, &user); err != nil {
			return []Finding{{false, fmt.Sprintf("%s is not TOML (%v): Codex will not start", userConfig, tomlError(err))}}
		}
	}
	var project map[string]any
	if data, err := os.ReadFile(filepath.Join(dir, ".codex", "config.toml")); err == nil {
		toml.Unmarshal(data, &project)
	}
	var out []Finding
	for _, cfg := range []map[string]any{user, project} {
		features, _ := cfg["features"].(map[string]any)
		if features["hooks"] == false || features["codex_hooks"] == false {
			out = append(out, Finding{false, "Codex has hooks switched off ([features] hooks = false)"})
			break
		}
	}
	// The project's trust: the longest matching [projects."PATH"].
	projects, _ := user["projects"].(map[string]any)
	best, level := -1, ""
	for path, v := range projects {
		t, _ := v.(map[string]any)
		lv, _ := t["trust_level"].(string)
		if within(dir, path) && len(path) > best {
			best, level = len(path), lv
		}
	}
	if level != "trusted" {
		out = append(out, Finding{false, fmt.Sprintf("Codex does not trust %s, so it loads neither .codex/config.toml nor .codex/hooks.json: start codex there and trust the project (or set [projects.%q] trust_level = \"trusted\" in %s)", dir, dir, userConfig)})
	}
	// Each hook, approved: [hooks.state."<hooks.json>:<event>:<group>:<hook>"].
	hooksFile := filepath.Join(dir, ".codex", "hooks.json")
	hooks, _ := user["hooks"].(map[string]any)
	state, _ := hooks["state"].(map[string]any)
	var unapproved []string
	for _, ev := range hookEvents(agentrt.Codex) {
		approved := slices.ContainsFunc(slices.Collect(maps.Keys(state)), func(k string) bool {
			t, _ := state[k].(map[string]any)
			return strings.HasPrefix(k, hooksFile+":"+snake(ev.runtime)+":") && t["trusted_hash"] != nil
		})
		if !approved {
			unapproved = append(unapproved, ev.runtime)
		}
	}
	if len(unapproved) > 0 {
		out = append(out, Finding{false, fmt.Sprintf("Codex has not approved the hooks %s: start codex in %s and approve them with /hooks", strings.Join(unapproved, ", "), dir)})
	}
	return out
}

// snake is an event name as Codex's hook state writes it: SessionStart →
// session_start.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
