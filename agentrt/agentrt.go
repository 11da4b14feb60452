// Package agentrt names the agent runtimes mailfs works with — once, for
// setup, hook and live — and reads what a runtime's own settings decide
// for mailfs: whether its sessions take messages from other processes.
//
// Start with [Installable] (what setup installs into) and [HookFormats]
// (what a hook answers in). No other package spells a runtime's name.
package agentrt

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tailscale/hujson"
)

// A Runtime is an agent runtime, or a way of reaching an agent that has
// no runtime of its own (Tmux, Plain).
type Runtime string

// The runtimes.
const (
	Claude Runtime = "claude" // Claude Code
	Gemini Runtime = "gemini" // Gemini CLI
	Codex  Runtime = "codex"  // Codex (hooks.json; Claude Code's formats)
	Qwen   Runtime = "qwen"   // Qwen Code (Claude Code's formats)
	// Copilot is GitHub Copilot CLI: only its agentStop hook's answer (a
	// block, whose reason becomes the next prompt) reaches the model.
	Copilot Runtime = "copilot"
	// OpenCode and Pi run mailfs through a plugin of mailfs's own, which
	// takes its hooks' answers as Plain text.
	OpenCode Runtime = "opencode"
	Pi       Runtime = "pi"
	// Tmux is any agent in a tmux pane, which live delivery types into.
	Tmux Runtime = "tmux"
	// Plain is plain text on stdout: the hook answer for anything else.
	Plain Runtime = "plain"
)

// Installable returns the runtimes setup installs mailfs into, in the
// order it reports them.
func Installable() []Runtime { return []Runtime{Claude, Gemini, Codex, Qwen, Copilot, OpenCode, Pi} }

// HookFormats returns the formats a hook answers in.
func HookFormats() []Runtime { return []Runtime{Claude, Codex, Gemini, Qwen, Copilot, Plain} }

// ClaudeConfig returns Claude Code's configuration folder: getenv's
// $CLAUDE_CONFIG_DIR, else $HOME/.claude.
func ClaudeConfig(getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	return filepath.Join(getenv("HOME"), ".claude")
}

// QwenHome returns Qwen Code's folder: $QWEN_HOME, else $HOME/.qwen.
func QwenHome(getenv func(string) string) string {
	if d := getenv("QWEN_HOME"); d != "" {
		return d
	}
	return filepath.Join(getenv("HOME"), ".qwen")
}

// ClaudeSettings are the settings files a Claude Code session in dir
// reads, config being its configuration folder: the project's, the local
// one, the user's and the managed (policy) file.
func ClaudeSettings(config, dir string) []string {
	return []string{
		filepath.Join(dir, ".claude", "settings.json"),
		filepath.Join(dir, ".claude", "settings.local.json"),
		filepath.Join(config, "settings.json"),
		"/etc/claude-code/managed-settings.json",
	}
}

// ReadSettings reads a runtime's settings file, JSON with comments and
// trailing commas; a file that does not exist is nil and no error.
func ReadSettings(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(std, &m)
}

// inboundRank orders the inbound policies, the most restrictive last.
func inboundRank(v string) int {
	switch v {
	case "accept":
		return 1
	case "hold":
		return 2
	case "refuse":
		return 3
	}
	return 0
}

// ClaudeInbound reads crossSessionInbound, Claude Code's setting for
// messages from other processes ("accept", "hold" or "refuse"), from
// every settings file a session in dir reads (config is its configuration
// folder, see [ClaudeConfig]). It returns the most restrictive value found
// and the file that sets it; "" when none does. Taking the most
// restrictive is deliberate: mailfs does not model Claude Code's
// precedence between scopes, so a doorbell is never reported delivered
// while any scope may hold it. A file that does not parse is skipped.
func ClaudeInbound(config, dir string) (value, file string) {
	for _, path := range ClaudeSettings(config, dir) {
		m, err := ReadSettings(path)
		if err != nil {
			continue
		}
		if v, _ := m["crossSessionInbound"].(string); inboundRank(v) > inboundRank(value) {
			value, file = v, path
		}
	}
	return value, file
}

// QwenInbound reads agents.crossSessionInbound, Qwen Code's setting for
// messages from other processes, from the files a session in dir reads:
// the system's (/etc/qwen-code/settings.json), the user's
// (<qwenHome>/settings.json) and the workspace's (dir/.qwen/settings.json).
// It returns the most restrictive value found, as ClaudeInbound does (a
// workspace may only tighten it, so the most restrictive is the one in
// force), with its file; "" when none sets it. A value Qwen Code does not
// know holds every message: it is returned as "hold".
func QwenInbound(qwenHome, dir string) (value, file string) {
	for _, path := range []string{"/etc/qwen-code/settings.json", filepath.Join(qwenHome, "settings.json"), filepath.Join(dir, ".qwen", "settings.json")} {
		m, err := ReadSettings(path)
		if err != nil {
			continue
		}
		agents, _ := m["agents"].(map[string]any)
		v, ok := agents["crossSessionInbound"].(string)
		if !ok {
			continue
		}
		if inboundRank(v) == 0 {
			v = "hold"
		}
		if inboundRank(v) > inboundRank(value) {
			value, file = v, path
		}
	}
	return value, file
}
