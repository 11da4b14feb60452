package setup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
)

// These tests run the real runtimes' own commands (which need no login)
// over what setup writes, when the CLIs are on $PATH:
//
//	npm install -g @anthropic-ai/claude-code @google/gemini-cli @openai/codex
//
// Without them they are skipped, saying so.

// realCLI returns the path of a runtime's CLI, or skips the test.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not on $PATH: install it (npm) to check setup against the real runtime", name)
	}
	return path
}

// runCLI runs a CLI with a home of its own and returns what it printed.
func runCLI(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, ctx.Err(), out)
	}
	_ = err // the commands' statuses vary by version; what they print is checked
	return string(out)
}

// writeChanges writes what Plan planned.
func writeChanges(t *testing.T, changes []Change) {
	t.Helper()
	for _, c := range changes {
		os.MkdirAll(filepath.Dir(c.Target), 0o755)
		if err := os.WriteFile(c.Target, c.New, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Codex reads the server setup registered in a config.toml that had a
// comment on the table's header and the user's own key: one server, its
// command and args, the user's timeout kept.
func TestRealCodexReadsTheServer(t *testing.T) {
	codex := realCLI(t, "codex")
	root := t.TempDir()
	home, proj := filepath.Join(root, "codex-home"), filepath.Join(root, "proj")
	write(t, filepath.Join(proj, ".codex", "config.toml"), "model = \"gpt-5\"\n\n[mcp_servers.mailfs] # mail between agents\ncommand = \"/old\"\nstartup_timeout_sec = 20\n")
	write(t, filepath.Join(home, "config.toml"), "[projects.\""+proj+"\"]\ntrust_level = \"trusted\"\n")
	exec.Command("git", "init", "-q", proj).Run()
	changes, err := Plan(agentrt.Codex, proj, "/opt/bin/mailfs", "nux")
	if err != nil {
		t.Fatal(err)
	}
	writeChanges(t, changes)
	out := runCLI(t, proj, []string{"CODEX_HOME=" + home}, codex, "mcp", "get", "mailfs")
	for _, want := range []string{"command: /opt/bin/mailfs", "args: mcp --agent nux", "startup_timeout_sec: 20"} {
		if !strings.Contains(out, want) {
			t.Fatalf("codex mcp get mailfs does not say %q:\n%s", want, out)
		}
	}
}

// Gemini CLI loads the project's hooks and skill only in a trusted folder,
// as doctor says: untrusted, it says the hooks are disabled; trusted, it
// finds the skill setup wrote.
func TestRealGeminiTrustAndSkill(t *testing.T) {
	gemini := realCLI(t, "gemini")
	root := t.TempDir()
	home, proj := filepath.Join(root, "home"), filepath.Join(root, "proj")
	write(t, filepath.Join(proj, ".gemini", "settings.json"), "{\n  // the user's\n  \"general\": {\"vimMode\": true},\n}\n")
	changes, err := Plan(agentrt.Gemini, proj, "mailfs", "nux")
	if err != nil {
		t.Fatal(err)
	}
	writeChanges(t, changes)
	bin := filepath.Join(root, "bin") // the hooks' programs, as doctor's shell finds them
	for _, name := range []string{"mailfs", "mailfs-hook"} {
		write(t, filepath.Join(bin, name), "#!/bin/sh\nexit 0\n")
		os.Chmod(filepath.Join(bin, name), 0o755)
	}
	env := Env{Getenv: func(k string) string { return map[string]string{"HOME": home, "PATH": bin}[k] },
		LookPath: func(string) (string, error) { return "/bin/mailfs", nil }}
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	says(t, agentrt.Gemini, proj, env, false, "Gemini CLI does not trust")
	out := runCLI(t, proj, []string{"HOME=" + home}, gemini, "skills", "list")
	if !strings.Contains(out, "folder is not trusted") || strings.Contains(out, "mailfs [Enabled]") {
		t.Fatalf("gemini in an untrusted folder:\n%s", out)
	}
	write(t, filepath.Join(home, ".gemini", "trustedFolders.json"), `{"`+proj+`": "TRUST_FOLDER"}`)
	says(t, agentrt.Gemini, proj, env, true, "Gemini CLI trusts this folder")
	out = runCLI(t, proj, []string{"HOME=" + home}, gemini, "skills", "list")
	if !strings.Contains(out, "mailfs [Enabled]") || strings.Contains(out, "not trusted") {
		t.Fatalf("gemini in a trusted folder does not find the skill:\n%s", out)
	}
}

// Claude Code validates the plugin and finds its skill, its four hooks and
// its MCP server.
func TestRealClaudeLoadsThePlugin(t *testing.T) {
	claude := realCLI(t, "claude")
	root := t.TempDir()
	dir := filepath.Join(root, "plugin")
	files := PluginFiles("mailfs", "v1.0.0")
	for _, rel := range PluginPaths(files) {
		write(t, filepath.Join(dir, rel), string(files[rel]))
	}
	env := []string{"HOME=" + filepath.Join(root, "home")}
	if out := runCLI(t, root, env, claude, "plugin", "validate", dir); !strings.Contains(out, "Validation passed") {
		t.Fatalf("claude plugin validate:\n%s", out)
	}
	out := runCLI(t, root, env, claude, "--plugin-dir", dir, "plugin", "details", "mailfs@inline")
	for _, want := range []string{"Skills (1)  mailfs", "Hooks (4)  SessionStart, UserPromptSubmit, PostToolUse, Stop", "MCP servers (1)  mailfs"} {
		if !strings.Contains(out, want) {
			t.Fatalf("claude plugin details does not say %q:\n%s", want, out)
		}
	}
}

// A shared set-up's server names no agent: Codex reads it with the
// variables it must pass on, so each session's server serves the agent
// its $MAILFS_AGENT names (an explicit empty --agent would refuse to start,
// whatever the environment).
func TestRealCodexReadsTheSharedServer(t *testing.T) {
	codex := realCLI(t, "codex")
	root := t.TempDir()
	home, proj := filepath.Join(root, "codex-home"), filepath.Join(root, "proj")
	write(t, filepath.Join(home, "config.toml"), "[projects.\""+proj+"\"]\ntrust_level = \"trusted\"\n")
	os.MkdirAll(proj, 0o755)
	exec.Command("git", "init", "-q", proj).Run()
	changes, err := Plan(agentrt.Codex, proj, "/opt/bin/mailfs", "")
	if err != nil {
		t.Fatal(err)
	}
	writeChanges(t, changes)
	out := runCLI(t, proj, []string{"CODEX_HOME=" + home}, codex, "mcp", "get", "mailfs", "--json")
	for _, want := range []string{`"command": "/opt/bin/mailfs"`, `"mcp"`, `"MAILFS_AGENT"`, `"MAILFS_ROOT"`} {
		if !strings.Contains(out, want) {
			t.Fatalf("codex mcp get mailfs --json does not say %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"--agent"`) {
		t.Fatalf("the shared server names an agent:\n%s", out)
	}
}
