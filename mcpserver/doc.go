// Package mcpserver serves an agent's mail over the Model Context Protocol,
// for agents that speak MCP rather than a shell: "mailfs mcp --agent NAME",
// started over stdio by the agent's own client (Claude Code, Codex, Gemini
// CLI, Cursor). There is no daemon: the server lives as long as the client's
// session, and reads and writes the same files as every other mailfs client.
//
// The tools are few and their descriptions short, since every tool
// definition costs the agent context on every turn: send, inbox, read,
// reply, thread, claim, and check (what the prompt hook would say). Each
// answers once, as text (one line of JSON), with no structured content and
// no output schema: see docs/performance.md on what each costs. They
// call the same package functions as the command line ([maildir.Store],
// [hook.Collector]); bad input is a tool error with a clear message, never
// a crash of the server.
package mcpserver
