package setup

import (
	"encoding/json"
	"strings"
	"testing"
)

const userClaude = `{
  "model": "opus",
  "hooks": {
    "PostToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
    ],
    "Stop": [
      {"hooks": [{"type": "command", "command": "notify-send done"}, {"type": "command", "command": "/usr/local/bin/mailfs hook stop oldname"}]}
    ]
  }
}`

func TestClaudeMergeKeepsTheUsersHooksAndIsIdempotent(t *testing.T) {
	got, err := Apply(Claude, []byte(userClaude), "mailfs", "gastown.toast")
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{`"model": "opus"`, `"./lint.sh"`, `"notify-send done"`,
		`"mailfs hook session-start gastown.toast"`, `"mailfs hook prompt-submit gastown.toast"`,
		`"mailfs hook post-tool gastown.toast"`, `"mailfs hook stop gastown.toast"`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in:\n%s", want, s)
		}
	}
	if strings.Contains(s, "oldname") {
		t.Errorf("the old agent's hook was kept beside the new one:\n%s", s)
	}
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatal(err)
	}
	again, err := Apply(Claude, got, "mailfs", "gastown.toast")
	if err != nil || string(again) != s {
		t.Fatalf("a second run changed the file:\n%s", Diff("settings.json", got, again))
	}
	have, missing := Installed(Claude, got, "gastown.toast")
	if len(have) != 4 || len(missing) != 0 {
		t.Fatalf("installed %v, missing %v", have, missing)
	}
	if _, missing := Installed(Claude, []byte(userClaude), "gastown.toast"); len(missing) != 4 {
		t.Fatalf("before setup, missing %v", missing)
	}
}

func TestGeminiAndRefusals(t *testing.T) {
	got, err := Apply(Gemini, nil, "/opt/bin/mailfs", "nux")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"BeforeAgent"`, `"AfterTool"`, `"AfterAgent"`, `"matcher": ".*"`,
		`"/opt/bin/mailfs hook stop nux --runtime gemini"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("missing %s in:\n%s", want, got)
		}
	}
	if _, err := Apply(Claude, []byte("{not json"), "mailfs", "nux"); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a broken settings file: %v", err)
	}
	if _, err := Apply(Claude, []byte(`{"hooks": [1]}`), "mailfs", "nux"); err == nil {
		t.Fatal("hooks that are not an object were overwritten")
	}
}

func TestCodexRegistersTheMCPServer(t *testing.T) {
	old := "model = \"o4\"\n\n[mcp_servers.mailfs]\ncommand = \"mailfs\"\nargs = [\"mcp\", \"--agent\", \"old\"]\n\n[mcp_servers.other]\ncommand = \"x\"\n"
	got := string(must(Apply(Codex, []byte(old), "mailfs", "nux")))
	if !strings.Contains(got, `args = ["mcp", "--agent", "nux"]`) || strings.Contains(got, `"old"`) ||
		!strings.Contains(got, "[mcp_servers.other]\ncommand = \"x\"") || !strings.HasPrefix(got, "model = \"o4\"") {
		t.Fatalf("codex config:\n%s", got)
	}
	if again := string(must(Apply(Codex, []byte(got), "mailfs", "nux"))); again != got {
		t.Fatalf("not idempotent:\n%s", again)
	}
	fresh := string(must(Apply(Codex, nil, "mailfs", "nux")))
	if have, _ := Installed(Codex, []byte(fresh), "nux"); len(have) != 1 {
		t.Fatalf("fresh codex config not recognised:\n%s", fresh)
	}
}

func TestDiff(t *testing.T) {
	d := Diff("f", []byte("a\nb\nc\nd\ne\nf\ng\n"), []byte("a\nb\nc\nX\ne\nf\ng\n"))
	if !strings.Contains(d, "-d\n+X\n") || strings.Contains(d, " a\n") {
		t.Fatalf("diff:\n%s", d)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
