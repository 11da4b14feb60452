// Package setup installs mailfs into agent runtimes' configuration: the
// hook events of Claude Code and Gemini CLI (see package hook), and the MCP
// server for Codex (see package mcpserver).
//
// Each function takes a configuration file's current bytes and returns the
// new ones: merged with what is there (a user's own hooks and settings are
// kept), idempotent (a second run changes nothing), and replacing only
// mailfs's own entries (those whose command is a "mailfs hook" or "mailfs
// mcp" call), so moving a worktree to another agent updates them. The
// command line writes the result atomically, keeps the old file as a
// backup, and can print the change instead (--dry-run).
package setup
