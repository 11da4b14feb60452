// Package setup installs mailfs into agent runtimes' project
// configuration — Claude Code, Gemini CLI, Codex, Qwen Code, GitHub Copilot
// CLI, OpenCode and pi: each runtime's hook events (see package hook), the
// MCP server (see package mcpserver), the live deliverer where the runtime
// starts one (see package live), OpenCode's plugin and pi's extension, and
// the skill that teaches the mailfs commands; and [Check] says what is
// installed and whether each runtime will run it.
//
// Each function takes a configuration file's current bytes and returns the
// new ones: merged with what is there (a user's own hooks and settings are
// kept), idempotent (a second run changes nothing), and replacing only
// mailfs's own entries (those whose command is a "mailfs hook" or "mailfs
// mcp" call), so moving a worktree to another agent updates them. The
// command line writes the result atomically, keeps the old file as a
// backup, and can print the change instead (--dry-run).
package setup
