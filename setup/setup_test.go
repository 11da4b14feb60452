package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/mailfs/mailfs/agentrt"
)

// Real-world Codex config.toml files: whatever way the server is written,
// setup edits it in place, keeps every comment and every key of the
// user's, leaves one [mcp_servers.mailfs], and a second run changes
// nothing.
func TestCodexConfigRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, old string }{
		{"empty", ""},
		{"user config", `# my codex
model = "gpt-5"   # the default
approval_policy = "on-request"

[profiles.fast]
model = "gpt-5-mini"

[mcp_servers.github]
command = "gh-mcp"
args = ["serve"]
`},
		{"table with a comment on its header and the user's keys", `model = "o4"

[mcp_servers.mailfs] # mail between agents
command = "/old/mailfs"
args = ["mcp", "--agent", "old"]
startup_timeout_sec = 20
env = { MAILFS_ROOT = "/town/.chipset" }

[mcp_servers.other]
command = "x"
`},
		{"dotted keys at the root", `model = "o4"
mcp_servers.mailfs.command = "/old/mailfs"
mcp_servers.mailfs.env.MAILFS_ROOT = "/town/.chipset" # shared root
`},
		{"dotted keys in [mcp_servers]", `[mcp_servers]
mailfs.command = "mailfs"
mailfs.tool_timeout_sec = 30
other.command = "y"
`},
		{"inline table", `[mcp_servers]
mailfs = { command = "mailfs", args = [], env = { A = "1" } } # inline
`},
		{"inline table without command", `[mcp_servers]
mailfs = { env = { A = "1" } }
`},
		{"empty inline table", "mcp_servers = { mailfs = {} }\n"},
		{"table with only the user's keys", `[mcp_servers.mailfs]
# set by hand
enabled = true

[tui]
notifications = true
`},
		{"quoted key, sub-table before it", `[mcp_servers."mailfs".env]
A = "1"

[mcp_servers."mailfs"]
command = "old"
`},
		{"no trailing newline", `model = "o4"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editCodexMCP([]byte(tc.old), "/opt/bin/mailfs", []string{"mcp", "--agent", "nux"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var before, after map[string]any
			if err := toml.Unmarshal([]byte(tc.old), &before); err != nil {
				t.Fatal(err)
			}
			if err := toml.Unmarshal(got, &after); err != nil {
				t.Fatalf("the result is not TOML Codex reads (%v):\n%s", err, got)
			}
			server := dig(after, mcpServer)
			if server["command"] != "/opt/bin/mailfs" || !reflect.DeepEqual(server["args"], []any{"mcp", "--agent", "nux"}) {
				t.Fatalf("server %v in:\n%s", server, got)
			}
			// Every key the user had is still there, with its value.
			was := dig(before, mcpServer)
			for k, v := range was {
				if k != "command" && k != "args" && !reflect.DeepEqual(server[k], v) {
					t.Errorf("the user's %s = %v became %v", k, v, server[k])
				}
			}
			// Every comment and every line but the two mailfs owns, verbatim.
			for _, line := range strings.Split(tc.old, "\n") {
				if strings.Contains(line, "#") && !strings.Contains(string(got), line[strings.Index(line, "#"):]) {
					t.Errorf("comment lost: %q\n%s", line, got)
				}
				inline := strings.Contains(line, "mailfs = {") // the server's inline table gains its keys
				if !inline && !strings.Contains(line, "command") && !strings.Contains(line, "args") && !strings.Contains(string(got), line) {
					t.Errorf("line lost: %q\n%s", line, got)
				}
			}
			again, err := editCodexMCP(got, "/opt/bin/mailfs", []string{"mcp", "--agent", "nux"}, nil)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("a second run changed the file (%v):\n%s", err, Diff("config.toml", got, again))
			}
		})
	}
}

// A file Codex would refuse is refused, not rewritten.
func TestCodexConfigRefusals(t *testing.T) {
	for name, old := range map[string]string{
		"not TOML":           "model = \n[broken",
		"duplicate table":    "[mcp_servers.mailfs]\ncommand = \"a\"\n\n[mcp_servers.mailfs]\nargs = []\n",
		"duplicate key":      "model = \"a\"\nmodel = \"b\"\n",
		"server not a table": "mcp_servers.mailfs = \"x\"\n",
	} {
		if got, err := editCodexMCP([]byte(old), "mailfs", []string{"mcp"}, nil); err == nil {
			t.Errorf("%s: accepted, wrote:\n%s", name, got)
		}
	}
}

// Real-world JSON and JSON-with-comments settings: the user's hooks,
// comments and formatting kept; mailfs's old entries replaced; Claude Code
// and Codex get strict JSON back; a second run changes nothing.
func TestHooksFileRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rt     agentrt.Runtime
		old    string
		strict bool // the runtime reads strict JSON
	}{
		{"claude, empty", agentrt.Claude, "", true},
		{"claude, the user's hooks and an old agent's", agentrt.Claude, `{
  "model": "opus",
  "permissions": {"allow": ["Bash(go test:*)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}, {"type": "command", "command": "/usr/local/bin/mailfs hook stop oldname"}]}
    ],
    "SessionStart": [
      {"hooks": [{"type": "command", "command": "mailfs hook session-start oldname", "timeout": 10}]}
    ]
  }
}
`, true},
		{"claude, tabs, no hooks", agentrt.Claude, "{\n\t\"model\": \"opus\"\n}\n", true},
		{"gemini, comments and trailing commas", agentrt.Gemini, `{
  // Gemini CLI reads JSON with comments
  "general": {"vimMode": true,}, // trailing comma
  /* the user's own hook */
  "hooks": {
    "BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./guard.sh"}]}],
  },
}
`, false},
		{"codex hooks.json", agentrt.Codex, `{
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "python3 .codex/hooks/done.py", "timeout": 30}]}]
  }
}
`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := editHooks([]byte(tc.old), hookEvents(tc.rt), group(tc.rt, "mailfs", "nux", nil))
			if err != nil {
				t.Fatal(err)
			}
			if tc.strict {
				if err := json.Unmarshal(got, new(any)); err != nil {
					t.Fatalf("not strict JSON (%v):\n%s", err, got)
				}
			}
			have, missing, err := installedHooks(tc.rt, got, "nux")
			if err != nil || len(missing) != 0 || len(have) != len(hookEvents(tc.rt)) {
				t.Fatalf("installed %v, missing %v (%v):\n%s", have, missing, err, got)
			}
			if strings.Contains(string(got), "oldname") {
				t.Errorf("an old mailfs hook was kept:\n%s", got)
			}
			for _, line := range strings.Split(tc.old, "\n") {
				// A one-line list mailfs adds its group to ends on a new line.
				appended := strings.HasSuffix(strings.TrimSuffix(line, ","), "]") && slices.ContainsFunc(events(tc.rt), func(ev string) bool { return strings.Contains(line, `"`+ev+`": [`) })
				if !appended && !strings.Contains(line, "mailfs") && !strings.Contains(string(got), line) {
					t.Errorf("line lost or reformatted: %q\n%s", line, got)
				}
			}
			again, err := editHooks(got, hookEvents(tc.rt), group(tc.rt, "mailfs", "nux", nil))
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("a second run changed the file (%v):\n%s", err, Diff("settings.json", got, again))
			}
			if strings.Contains(tc.old, "\t") && !strings.Contains(string(got), "\n\t\t\"SessionStart\"") {
				t.Errorf("new lines do not follow the file's tabs:\n%s", got)
			}
		})
	}
	for name, old := range map[string]string{"not JSON": "{not json", "hooks not an object": `{"hooks": [1]}`, "event not a list": `{"hooks": {"Stop": {}}}`, "not an object": `[1]`} {
		if got, err := editHooks([]byte(old), hookEvents(agentrt.Claude), group(agentrt.Claude, "mailfs", "nux", nil)); err == nil {
			t.Errorf("%s: accepted, wrote:\n%s", name, got)
		}
	}
}

// Plan follows symbolic links to the file they lead to, refuses a link to
// nothing, and plans nothing when any file does not parse.
func TestPlanFollowsLinksAndRefusesAsAWhole(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "dotfiles", "claude.json")
	os.MkdirAll(filepath.Dir(shared), 0o755)
	os.WriteFile(shared, []byte("{\"model\": \"opus\"}\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	if err := os.Symlink(shared, filepath.Join(dir, ".claude", "settings.json")); err != nil {
		t.Fatal(err)
	}
	changes, err := Plan(agentrt.Claude, dir, "mailfs", "nux")
	if err != nil {
		t.Fatal(err)
	}
	if changes[0].Target != shared || !bytes.Contains(changes[0].New, []byte(`"model": "opus"`)) {
		t.Fatalf("the link was not followed: %+v", changes[0])
	}
	os.Remove(shared)
	if _, err := Plan(agentrt.Claude, dir, "mailfs", "nux"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a link to nothing: %v", err)
	}
	os.Remove(filepath.Join(dir, ".claude", "settings.json"))
	os.MkdirAll(filepath.Join(dir, ".codex"), 0o755)
	os.WriteFile(filepath.Join(dir, ".codex", "config.toml"), []byte("[broken"), 0o644)
	if _, err := Plan(agentrt.Codex, dir, "mailfs", "nux"); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a broken config.toml: %v", err)
	}
}

// The plugin is a Claude Code plugin: a manifest, hooks for every event
// that run for $MAILFS_AGENT, the MCP server, and the skill with its
// front matter.
func TestPluginLayout(t *testing.T) {
	files := PluginFiles("mailfs", "v1.2.3")
	var manifest struct{ Name, Version, Description string }
	if err := json.Unmarshal(files[filepath.Join(".claude-plugin", "plugin.json")], &manifest); err != nil || manifest.Name != "mailfs" || manifest.Version != "1.2.3" {
		t.Fatalf("plugin.json: %+v %v", manifest, err)
	}
	hooks := files[filepath.Join("hooks", "hooks.json")]
	// No agent in the commands: the session's $MAILFS_AGENT decides.
	cmds := map[string]bool{}
	v, err := hujson.Parse(hooks)
	if err != nil {
		t.Fatal(err)
	}
	for val := range v.All() {
		var s string
		if lit, ok := val.Value.(hujson.Literal); ok && json.Unmarshal(lit, &s) == nil && strings.HasPrefix(s, "mailfs") {
			cmds[s] = true
		}
	}
	for _, ev := range []string{"session-start", "prompt-submit", "post-tool", "stop"} {
		if !cmds["mailfs-hook hook "+ev] {
			t.Errorf("hooks.json lacks %q: %v", "mailfs-hook hook "+ev, cmds)
		}
	}
	// And the live deliverer, for the same agent.
	if !cmds["mailfs live claude"] || len(cmds) != 5 {
		t.Errorf("hooks.json commands: %v", cmds)
	}
	var mcp struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		}
	}
	if err := json.Unmarshal(files[".mcp.json"], &mcp); err != nil || mcp.MCPServers["mailfs"].Command != "mailfs" {
		t.Fatalf(".mcp.json: %+v %v", mcp, err)
	}
	checkSkill(t, files[filepath.Join("skills", "mailfs", "SKILL.md")], "$MAILFS_AGENT")
	checkSkill(t, Skill("gastown.nux"), "gastown.nux")
}

// checkSkill checks a SKILL.md's front matter (name, description) and that
// it speaks to agent.
func checkSkill(t *testing.T, data []byte, agent string) {
	t.Helper()
	front, body, ok := strings.Cut(strings.TrimPrefix(string(data), "---\n"), "\n---\n")
	if !ok || !strings.HasPrefix(string(data), "---\n") {
		t.Fatalf("no front matter:\n%s", data)
	}
	if !strings.Contains(front, "name: mailfs\n") || !strings.Contains(front, "description: ") {
		t.Fatalf("front matter:\n%s", front)
	}
	if !strings.Contains(body, "mailfs inbox "+agent) || strings.Contains(strings.ReplaceAll(body, agent, ""), "AGENT") {
		t.Fatalf("the skill does not speak to %s:\n%s", agent, body)
	}
}

// The hook command's program, as the shell reads it (set -- splits the
// command into words as the runtime's sh -c does), is the one named.
func TestShellQuote(t *testing.T) {
	for _, bin := range []string{"mailfs", "/opt/bin/mailfs", "/home/me/My Tools/mailfs", "/tmp/it's/mailfs"} {
		cmd := Command(bin, agentrt.Claude, "stop", "nux")
		out, err := exec.Command("/bin/sh", "-c", "set -- "+cmd+"; printf %s \"$1\"").Output()
		if got := string(out); err != nil || got != bin+"-hook" {
			t.Errorf("Command(%q) = %q, whose program reads back as %q", bin, cmd, got)
		}
		if !ours().MatchString(cmd) {
			t.Errorf("%q is not recognised as mailfs's", cmd)
		}
	}
}

func TestDiff(t *testing.T) {
	d := Diff("f", []byte("a\nb\nc\nd\ne\nf\ng\n"), []byte("a\nb\nc\nX\ne\nf\ng\n"))
	if !strings.Contains(d, "-d\n+X\n") || strings.Contains(d, " a\n") {
		t.Fatalf("diff:\n%s", d)
	}
}

// Several agents in one worktree: setting up bob where alice's hooks are
// is refused; shared hooks serve both; doctor says so for each.
func TestSeveralAgentsInOneWorktree(t *testing.T) {
	dir := t.TempDir()
	apply := func(agent string) {
		changes, err := Plan(agentrt.Claude, dir, "mailfs", agent)
		if err != nil {
			t.Fatal(err)
		}
		writeChanges(t, changes)
	}
	apply("alice")
	if err := Guard(agentrt.Claude, dir, "bob"); !errors.Is(err, ErrOtherAgent) {
		t.Fatalf("bob over alice's hooks: %v", err)
	}
	if err := Guard(agentrt.Claude, dir, "alice"); err != nil {
		t.Fatalf("alice again: %v", err)
	}
	if err := Guard(agentrt.Claude, dir, ""); err != nil {
		t.Fatalf("shared over alice's: %v", err)
	}
	apply("")
	if agents, shared := Serves(agentrt.Claude, dir); len(agents) != 0 || !shared {
		t.Fatalf("after a shared set-up: %v %v", agents, shared)
	}
	if err := Guard(agentrt.Claude, dir, "bob"); !errors.Is(err, ErrOtherAgent) {
		t.Fatalf("bob over shared hooks: %v", err)
	}
	for _, agent := range []string{"alice", "bob"} {
		have, missing, err := Installed(agentrt.Claude, dir, agent)
		if err != nil || len(missing) != 0 || len(have) == 0 {
			t.Fatalf("%s with shared hooks: have %v, missing %v, %v", agent, have, missing, err)
		}
	}
}

// Doctor knows a worktree served by the mailfs plugin, not its files.
func TestDoctorSeesThePlugin(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".claude", "settings.json"), `{"enabledPlugins": {"mailfs@town": true}}`)
	env := Env{Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, LookPath: func(string) (string, error) { return "/bin/true", nil }}
	ready, findings := Check(agentrt.Claude, dir, "toast", env)
	if !ready || !strings.Contains(findings[0].Text, "plugin mailfs@town") {
		t.Fatalf("ready %v: %+v", ready, findings)
	}
}

func TestHookAgent(t *testing.T) {
	for cmd, want := range map[string]string{
		"mailfs hook stop toast":                     "toast",
		"/opt/bin/mailfs hook stop --runtime gemini": "",
		"mailfs hook stop nux --runtime codex":       "nux",
		"'/a b/mailfs' live claude gastown.nux":      "gastown.nux",
		"mailfs live claude":                         "",
		"mailfs mcp --agent mayor":                   "mayor",
	} {
		got, ok := HookAgent(cmd)
		if !ok || got != want {
			t.Errorf("HookAgent(%q) = %q, %v; want %q", cmd, got, ok, want)
		}
	}
	if _, ok := HookAgent("echo hello"); ok {
		t.Error("echo is not mailfs's")
	}
}

// The read-back refuses a splice that went wrong, whatever went wrong: the
// server's command or args not as asked, another setting changed or lost,
// a file that no longer parses. (spliceMCP passes every case above, so
// only a broken splice can show the guard holds.)
func TestCodexEditIsReadBack(t *testing.T) {
	old := "model = \"o3\"\n\n[mcp_servers.mailfs]\ncommand = \"/old\"\nstartup_timeout_sec = 20\n\n[mcp_servers.other]\ncommand = \"x\"\n"
	for _, tc := range []struct {
		name   string
		splice func([]byte, string, []string, []string) ([]byte, error)
		want   string
	}{
		{"wrong args", func(b []byte, c string, _, e []string) ([]byte, error) {
			return spliceMCP(b, c, []string{"mcp"}, e)
		}, "the server did not read back"},
		{"a user's key dropped", func(b []byte, c string, a, e []string) ([]byte, error) {
			out, err := spliceMCP(b, c, a, e)
			return []byte(strings.Replace(string(out), "startup_timeout_sec = 20\n", "", 1)), err
		}, "other settings would change"},
		{"another server changed", func(b []byte, c string, a, e []string) ([]byte, error) {
			out, err := spliceMCP(b, c, a, e)
			return []byte(strings.Replace(string(out), `command = "x"`, `command = "y"`, 1)), err
		}, "other settings would change"},
		{"not TOML any more", func(b []byte, c string, a, e []string) ([]byte, error) {
			out, err := spliceMCP(b, c, a, e)
			return append(out, "[["...), err
		}, "could not be edited in place"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := checkedEdit([]byte(old), "/opt/bin/mailfs", []string{"mcp", "--agent", "nux"}, nil, tc.splice); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("a broken splice: %v, want an error saying %q", err, tc.want)
			}
		})
	}
	if _, err := checkedEdit([]byte(old), "/opt/bin/mailfs", []string{"mcp", "--agent", "nux"}, nil, spliceMCP); err != nil {
		t.Fatalf("the real splice: %v", err)
	}
}

// Gemini CLI's and Qwen Code's settings get mailfs's MCP server in
// mcpServers, edited in place: the user's comments, other servers and own
// keys in mailfs's entry kept; a second run changes nothing; a shared
// set-up names no agent.
func TestMCPServersInJSONSettings(t *testing.T) {
	old := "{\n  // mine\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"},\n    \"mailfs\": {\"command\": \"/old/mailfs\", \"args\": [\"mcp\", \"--agent\", \"old\"], \"timeout\": 30000}\n  },\n  \"general\": {\"vimMode\": true}\n}\n"
	got, err := editMCPServers([]byte(old), "/opt/bin/mailfs", mcpArgs("nux"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
		General    map[string]any            `json:"general"`
	}
	std, _ := hujson.Standardize(bytes.Clone(got))
	if err := json.Unmarshal(std, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.MCPServers["mailfs"]
	if m["command"] != "/opt/bin/mailfs" || fmt.Sprint(m["args"]) != "[mcp --agent nux]" || m["timeout"] != 30000.0 || doc.MCPServers["github"]["command"] != "gh-mcp" || doc.General["vimMode"] != true || !bytes.Contains(got, []byte("// mine")) {
		t.Fatalf("edited:\n%s", got)
	}
	again, err := editMCPServers(got, "/opt/bin/mailfs", mcpArgs("nux"))
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("a second run changed the file (%v):\n%s", err, again)
	}
	fresh, err := editMCPServers(nil, "mailfs", mcpArgs(""))
	if err != nil || !bytes.Contains(fresh, []byte(`"args": [`)) || bytes.Contains(fresh, []byte("--agent")) {
		t.Fatalf("a shared server in a new file (%v):\n%s", err, fresh)
	}
	if _, err := editMCPServers([]byte(`{"mcpServers": []}`), "mailfs", mcpArgs("nux")); err == nil {
		t.Fatal("an mcpServers that is not an object was edited")
	}
	// Plan writes it beside the hooks for both runtimes.
	for _, rt := range []agentrt.Runtime{agentrt.Gemini, agentrt.Qwen} {
		changes, err := Plan(rt, t.TempDir(), "/opt/bin/mailfs", "nux")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(changes[0].New, []byte(`"mcpServers"`)) || !bytes.Contains(changes[0].New, []byte(`"hooks"`)) {
			t.Fatalf("%s's settings:\n%s", rt, changes[0].New)
		}
	}
}

// Every runtime setup installs into knows whom its set-up serves, from any
// of its files (hooks, MCP server, plugin), so no runtime hands one
// agent's set-up to another unasked: a runtime added to agentrt without
// that fails here.
func TestGuardEveryRuntime(t *testing.T) {
	for _, rt := range agentrt.Installable() {
		t.Run(string(rt), func(t *testing.T) {
			dir := t.TempDir()
			apply := func(agent string) {
				changes, err := Plan(rt, dir, "mailfs", agent)
				if err != nil {
					t.Fatal(err)
				}
				writeChanges(t, changes)
			}
			apply("toast")
			if agents, shared := Serves(rt, dir); !slices.Equal(agents, []string{"toast"}) || shared {
				t.Fatalf("serves %v, shared %v", agents, shared)
			}
			if err := Guard(rt, dir, "bob"); !errors.Is(err, ErrOtherAgent) {
				t.Fatalf("bob over toast's: %v", err)
			}
			if err := Guard(rt, dir, "toast"); err != nil {
				t.Fatalf("toast again: %v", err)
			}
			apply("")
			if agents, shared := Serves(rt, dir); len(agents) != 0 || !shared {
				t.Fatalf("after a shared set-up: serves %v, shared %v", agents, shared)
			}
			if err := Guard(rt, dir, "bob"); !errors.Is(err, ErrOtherAgent) {
				t.Fatalf("bob over a shared set-up: %v", err)
			}
		})
	}
}

// Variables a person set before mailfs in a hook command (MAILFS_LIVE=off,
// docs/agents.md's way to turn live delivery off there) are the person's:
// setup run again keeps them, adds no second entry, and changes nothing.
func TestSetupKeepsWhatAPersonSetBeforeMailfs(t *testing.T) {
	for _, rt := range []agentrt.Runtime{agentrt.Claude, agentrt.Qwen, agentrt.Copilot} {
		t.Run(string(rt), func(t *testing.T) {
			dir := t.TempDir()
			changes, err := Plan(rt, dir, "mailfs", "toast")
			if err != nil {
				t.Fatal(err)
			}
			writeChanges(t, changes)
			path := filepath.Join(dir, Files(rt)[0].Path)
			data, _ := os.ReadFile(path)
			edited := strings.ReplaceAll(string(data), `mailfs live `, `MAILFS_LIVE=off mailfs live `)
			edited = strings.ReplaceAll(edited, `mailfs-hook hook stop`, `X=1 MAILFS_LIVE=off mailfs-hook hook stop`)
			if edited == string(data) {
				t.Fatal("nothing to edit")
			}
			os.WriteFile(path, []byte(edited), 0o644)
			again, err := Plan(rt, dir, "mailfs", "toast")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range again {
				if !bytes.Equal(c.Old, c.New) {
					t.Errorf("setup again changes %s:\n%s", c.Path, Diff(c.Path, c.Old, c.New))
				}
			}
			if rt != agentrt.Copilot && strings.Count(edited, "mailfs live ") != 1 {
				t.Errorf("the live entry is not there once:\n%s", edited)
			}
			if _, missing, err := Installed(rt, dir, "toast"); err != nil || len(missing) != 0 {
				t.Errorf("installed: missing %v, %v", missing, err)
			}
		})
	}
}

// events lists rt's hook events, as the runtime names them.
func events(rt agentrt.Runtime) []string {
	var names []string
	for _, ev := range hookEvents(rt) {
		names = append(names, ev.runtime)
	}
	return names
}
