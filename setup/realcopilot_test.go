package setup

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/internal/stubmodel"
	"github.com/mailfs/mailfs/maildir"
)

// GitHub Copilot CLI (npm: @github/copilot, pinned in .ci/run), offline
// against the loopback stand-in for the model (its OpenAI-compatible
// endpoint), in a project "mailfs setup copilot" set up: it lists the MCP
// server; with urgent mail waiting, its agentStop hook holds the stop and
// the reason — the mail — becomes the model's next prompt; with none, the
// turn ends at once.
func TestRealCopilotStopHookReachesTheModel(t *testing.T) {
	copilot := realCLI(t, "copilot")
	root := t.TempDir()
	proj, home := filepath.Join(root, "proj"), filepath.Join(root, "home")
	os.MkdirAll(proj, 0o755)
	os.MkdirAll(home, 0o755)
	exec.Command("git", "init", "-q", proj).Run()
	bin := buildMailfs(t, root) // this tree's, whatever mailfs $PATH holds
	changes, err := Plan(agentrt.Copilot, proj, bin, "nux")
	if err != nil {
		t.Fatal(err)
	}
	writeChanges(t, changes)
	store, err := maildir.Open(filepath.Join(proj, ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	model, err := stubmodel.Start(func(stubmodel.Request) stubmodel.Reply { return stubmodel.Reply{Text: "done"} })
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	env := []string{"HOME=" + home, "COPILOT_HOME=" + filepath.Join(home, ".copilot"), "COPILOT_OFFLINE=true",
		"COPILOT_PROVIDER_BASE_URL=" + model.URL + "/v1", "COPILOT_PROVIDER_API_KEY=k", "COPILOT_MODEL=gpt-5.4",
		"MAILFS_ROOT=" + filepath.Join(proj, ".chipset"), "MAILFS_STATE_DIR=" + filepath.Join(root, "state")}
	// Untrusted, Copilot CLI loads no workspace configuration, as doctor
	// says; trusted (as a person does at its first start there), it does.
	denv := Env{Getenv: func(k string) string { return map[string]string{"HOME": home}[k] }, LookPath: exec.LookPath}
	says(t, agentrt.Copilot, proj, denv, false, "Copilot CLI does not trust")
	if out := runCLI(t, proj, env, copilot, "mcp", "list"); strings.Contains(out, "mailfs") {
		t.Fatalf("copilot mcp list lists mailfs in an untrusted folder:\n%s", out)
	}
	write(t, filepath.Join(home, ".copilot", "config.json"), `{"trusted_folders": ["`+proj+`"]}`)
	says(t, agentrt.Copilot, proj, denv, true, "Copilot CLI trusts")
	if out := runCLI(t, proj, env, copilot, "mcp", "get", "mailfs"); !strings.Contains(out, "Command: "+bin+" mcp --agent nux") {
		t.Fatalf("copilot mcp get mailfs:\n%s", out)
	}
	run := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, copilot, "-p", "say hello", "--trust-folder", "--allow-all-tools", "--disable-client-telemetry")
		cmd.Dir = proj
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// Nothing waits: one request, the turn ends.
	run()
	if n := len(model.Requests()); n != 1 {
		t.Fatalf("with no mail the session made %d requests, want 1", n)
	}
	sent, err := store.Send(&maildir.Message{From: "mayor", To: "nux", Subject: "MERGE_FAILED nux", Body: "b", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	before := len(model.Requests())
	out := run()
	var got string
	for _, r := range model.Requests()[before:] {
		if strings.Contains(r.LastUser(), sent[0].ID) {
			got = r.LastUser()
		}
	}
	if got == "" || !strings.Contains(got, "MERGE_FAILED nux") {
		b, _ := json.Marshal(model.Requests()[before:])
		t.Fatalf("the stop hook's reason never reached the model (%d requests):\n%s\n%.3000s", len(model.Requests())-before, out, b)
	}
}

// buildMailfs builds the mailfs command into dir, and beside it
// mailfs-hook, which the hooks setup writes run.
func buildMailfs(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mailfs")
	if out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/mailfs/mailfs/cmd/mailfs", "github.com/mailfs/mailfs/cmd/mailfs-hook").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
