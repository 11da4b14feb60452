package setup

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/agentrt"
)

// fakeMachine is a home folder, a worktree set up for nux with every
// runtime, and an environment whose $PATH has mailfs (or not).
func fakeMachine(t *testing.T, onPath bool) (home, dir string, env Env) {
	t.Helper()
	root := t.TempDir()
	home, dir = filepath.Join(root, "home"), filepath.Join(root, "work", "town")
	os.MkdirAll(home, 0o755)
	os.MkdirAll(dir, 0o755)
	dir, _ = filepath.EvalSymlinks(dir)
	for _, rt := range agentrt.Installable() {
		changes, err := Plan(rt, dir, "mailfs", "nux")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range changes {
			os.MkdirAll(filepath.Dir(c.Target), 0o755)
			if err := os.WriteFile(c.Target, c.New, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The programs the hooks run, as the shell finds them on $PATH: they
	// answer --help, as mailfs does.
	bin := filepath.Join(root, "bin")
	os.MkdirAll(bin, 0o755)
	if onPath {
		for _, name := range []string{"mailfs", "mailfs-hook"} {
			if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	vars := map[string]string{"HOME": home, "PATH": bin}
	return home, dir, Env{
		Getenv: func(k string) string { return vars[k] },
		LookPath: func(name string) (string, error) {
			if onPath && (name == "mailfs" || name == "mailfs-hook") {
				return "/usr/local/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// says checks Check's verdict and that some finding contains want.
func says(t *testing.T, rt agentrt.Runtime, dir string, env Env, wantReady bool, want string) {
	t.Helper()
	ready, findings := Check(rt, dir, "nux", env)
	var all []string
	for _, f := range findings {
		all = append(all, f.Text)
	}
	text := strings.Join(all, "\n")
	if ready != wantReady || !strings.Contains(text, want) {
		t.Fatalf("%s: ready %v, want %v, saying %q:\n%s", rt, ready, wantReady, want, text)
	}
}

func TestDoctorClaude(t *testing.T) {
	home, dir, env := fakeMachine(t, true)
	says(t, agentrt.Claude, dir, env, true, "set up (SessionStart, UserPromptSubmit, PostToolUse, Stop, skill)")
	write(t, filepath.Join(home, ".claude", "settings.json"), `{"disableAllHooks": true}`)
	says(t, agentrt.Claude, dir, env, false, `sets "disableAllHooks": true`)
	os.Remove(filepath.Join(home, ".claude", "settings.json"))
	_, dir, env = fakeMachine(t, false)
	// What the shell said is quoted: its wording is the shell's own.
	says(t, agentrt.Claude, dir, env, false, `the hook command "mailfs-hook hook session-start nux" is not found when the runtime runs it (`)
	says(t, agentrt.Claude, dir, env, false, `not found), so every hook fails with status 127`)
}

// Doctor runs each hook command as the runtime does, through sh -c: what
// the command says around mailfs is read as the shell reads it.
func TestDoctorRunsHookCommandsThroughTheShell(t *testing.T) {
	_, dir, env := fakeMachine(t, true)
	settings := filepath.Join(dir, ".claude", "settings.json")
	data, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to string) {
		t.Helper()
		if err := os.WriteFile(settings, []byte(strings.ReplaceAll(string(data), from, to)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// MAILFS_LIVE=off before the program, as docs/agents.md says to turn
	// live delivery off: the shell runs mailfs, which is there.
	edit(`"command": "mailfs`, `"command": "MAILFS_LIVE=off mailfs`)
	says(t, agentrt.Claude, dir, env, true, "set up (SessionStart, UserPromptSubmit, PostToolUse, Stop, skill)")
	// ... by path, quoted, in the shell's own way.
	bin := env.Getenv("PATH")
	edit(`"command": "mailfs`, `"command": "MAILFS_LIVE=off '`+bin+`'/mailfs`)
	says(t, agentrt.Claude, dir, env, true, "set up (SessionStart, UserPromptSubmit, PostToolUse, Stop, skill)")
	// A program the shell does not find: what it said, and the status.
	edit(`"command": "mailfs`, `"command": "MAILFS_LIVE=off `+bin+`/nothere/mailfs`)
	says(t, agentrt.Claude, dir, env, false, `the hook command "MAILFS_LIVE=off `+bin+`/nothere/mailfs-hook hook session-start nux" is not found when the runtime runs it`)
	// One that is there but cannot run.
	os.Chmod(filepath.Join(bin, "mailfs-hook"), 0o644)
	edit(`"command": "mailfs`, `"command": "`+bin+`/mailfs`)
	says(t, agentrt.Claude, dir, env, false, "so every hook fails with status 126")
	// One that runs and fails.
	write(t, filepath.Join(bin, "mailfs-hook"), "#!/bin/sh\necho broken >&2\nexit 3\n")
	os.Chmod(filepath.Join(bin, "mailfs-hook"), 0o755)
	says(t, agentrt.Claude, dir, env, false, "fails when the runtime runs it (broken)")
}

func TestDoctorGeminiFolderTrust(t *testing.T) {
	home, dir, env := fakeMachine(t, true)
	says(t, agentrt.Gemini, dir, env, false, "Gemini CLI does not trust") // the default: folder trust on, nothing trusted
	trusted := filepath.Join(home, ".gemini", "trustedFolders.json")
	write(t, trusted, `{"`+filepath.Dir(dir)+`": "TRUST_FOLDER"}`)
	says(t, agentrt.Gemini, dir, env, true, "Gemini CLI trusts this folder")
	// The longest rule wins.
	write(t, trusted, `{"`+filepath.Dir(dir)+`": "TRUST_FOLDER", "`+dir+`": "DO_NOT_TRUST"}`)
	says(t, agentrt.Gemini, dir, env, false, "does not trust")
	// TRUST_PARENT trusts the rule's parent, and so its other children.
	write(t, trusted, `{"`+filepath.Join(filepath.Dir(dir), "sibling")+`": "TRUST_PARENT"}`)
	says(t, agentrt.Gemini, dir, env, true, "trusts this folder")
	// Folder trust switched off (JSON with comments, as Gemini CLI allows).
	os.Remove(trusted)
	write(t, filepath.Join(home, ".gemini", "settings.json"), "{\n  // mine\n  \"security\": {\"folderTrust\": {\"enabled\": false}},\n}\n")
	says(t, agentrt.Gemini, dir, env, true, "set up")
}

// Qwen Code's folder trust is Gemini CLI's, but off by default; its
// settings.json holds the hooks and the async live deliverer.
func TestDoctorQwen(t *testing.T) {
	home, dir, env := fakeMachine(t, true)
	// Qwen Code runs a project's MCP server only once a person approved it.
	says(t, agentrt.Qwen, dir, env, false, "start qwen in "+dir+" and approve it when asked")
	write(t, filepath.Join(home, ".qwen", "mcpApprovals.json"), `{"`+dir+`": {"mailfs": {"hash": "h", "status": "rejected"}}}`)
	says(t, agentrt.Qwen, dir, env, false, "rejected the project's MCP server mailfs")
	write(t, filepath.Join(home, ".qwen", "mcpApprovals.json"), `{"`+dir+`": {"mailfs": {"hash": "h", "status": "approved"}}}`)
	says(t, agentrt.Qwen, dir, env, true, "set up (SessionStart, UserPromptSubmit, PostToolUse, Stop, mcpServers.mailfs, skill)")
	data, _ := os.ReadFile(filepath.Join(dir, ".qwen", "settings.json"))
	for _, want := range []string{`"command": "mailfs-hook hook post-tool nux --runtime qwen"`, `"command": "mailfs live qwen nux"`, `"async": true`, `"timeout": 604800000`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf(".qwen/settings.json lacks %s:\n%s", want, data)
		}
	}
	write(t, filepath.Join(home, ".qwen", "settings.json"), `{"security": {"folderTrust": {"enabled": true}}}`)
	says(t, agentrt.Qwen, dir, env, false, "Qwen Code does not trust")
	write(t, filepath.Join(home, ".qwen", "trustedFolders.json"), `{"`+dir+`": "TRUST_FOLDER"}`)
	says(t, agentrt.Qwen, dir, env, true, "Qwen Code trusts this folder")
	// $QWEN_HOME moves all of it.
	other := t.TempDir()
	vars := map[string]string{"HOME": home, "QWEN_HOME": other, "PATH": env.Getenv("PATH")}
	env.Getenv = func(k string) string { return vars[k] }
	says(t, agentrt.Qwen, dir, env, false, "approve it when asked") // the approvals too
	write(t, filepath.Join(other, "mcpApprovals.json"), `{"`+dir+`": {"mailfs": {"hash": "h", "status": "approved"}}}`)
	says(t, agentrt.Qwen, dir, env, true, "set up")
	write(t, filepath.Join(other, "settings.json"), `{"security": {"folderTrust": {"enabled": true}}}`)
	says(t, agentrt.Qwen, dir, env, false, filepath.Join(other, "trustedFolders.json"))
}

func TestDoctorCodexTrustAndApproval(t *testing.T) {
	home, dir, env := fakeMachine(t, true)
	config := filepath.Join(home, ".codex", "config.toml")
	says(t, agentrt.Codex, dir, env, false, "Codex does not trust")
	write(t, config, "[projects.\""+filepath.Dir(dir)+"\"]\ntrust_level = \"trusted\"\n")
	says(t, agentrt.Codex, dir, env, false, "Codex has not approved the hooks SessionStart, UserPromptSubmit, Stop")
	hooks := filepath.Join(dir, ".codex", "hooks.json")
	approved := "[projects.\"" + filepath.Dir(dir) + "\"]\ntrust_level = \"trusted\"\n\n"
	for _, ev := range []string{"session_start", "user_prompt_submit", "stop"} {
		approved += "[hooks.state.\"" + hooks + ":" + ev + ":0:0\"]\ntrusted_hash = \"sha256:00\"\n"
	}
	write(t, config, approved)
	says(t, agentrt.Codex, dir, env, true, "set up (mcp_servers.mailfs, SessionStart, UserPromptSubmit, Stop, skill)")
	write(t, config, approved+"\n[features]\nhooks = false\n")
	says(t, agentrt.Codex, dir, env, false, "Codex has hooks switched off")
	write(t, config, approved+"\n[projects.\""+dir+"\"]\ntrust_level = \"untrusted\"\n")
	says(t, agentrt.Codex, dir, env, false, "Codex does not trust")
	write(t, config, "[broken")
	says(t, agentrt.Codex, dir, env, false, "is not TOML")
	// A project config that no longer parses.
	write(t, config, approved)
	write(t, filepath.Join(dir, ".codex", "config.toml"), "model = \nx")
	says(t, agentrt.Codex, dir, env, false, "not TOML")
}
