package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailfs/mailfs/maildir"
)

// buildMailfs builds the real binaries, mailfs and mailfs-mcp beside it
// (which "mailfs mcp" runs), and returns mailfs's path.
func buildMailfs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"mailfs", "mailfs-mcp"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/mailfs/mailfs/cmd/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	return filepath.Join(dir, "mailfs")
}

// The SDK's own client spawns the real binary over stdio, as an agent's
// MCP client does, and uses every tool.
func TestMCPEndToEnd(t *testing.T) {
	bin := buildMailfs(t)
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	orig, err := s.Send(&maildir.Message{From: "mayor", To: "gastown/toast", Subject: "WORK gt-1", Body: "fix the build", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	s.CreateQueue("work")
	s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-2"})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--agent", "gastown/toast")
	cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) > 100 {
			t.Errorf("tool %s: a %d-character description costs every turn", tool.Name, len(tool.Description))
		}
	}
	slices.Sort(names)
	if want := []string{"check", "claim", "inbox", "read", "reply", "send", "thread"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	call := func(name string, args map[string]any, out any) *mcp.CallToolResult {
		t.Helper()
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out != nil && !res.IsError {
			data, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%s: %v: %s", name, err, data)
			}
		}
		return res
	}
	type msg struct {
		ID, From, Subject, Body, Priority string
		Read                              bool
	}
	var list struct{ Messages []msg }
	call("inbox", nil, &list)
	if len(list.Messages) != 1 || list.Messages[0].Subject != "WORK gt-1" || list.Messages[0].Body != "" {
		t.Fatalf("inbox: %+v", list)
	}
	var check struct{ Reminder string }
	call("check", nil, &check)
	if !strings.Contains(check.Reminder, "URGENT") || !strings.Contains(check.Reminder, "WORK gt-1") {
		t.Fatalf("check: %q", check.Reminder)
	}
	var read msg
	call("read", map[string]any{"id": orig[0].ID[:24]}, &read)
	if read.Body != "fix the build" || !read.Read {
		t.Fatalf("read: %+v", read)
	}
	var ids struct{ IDs []string }
	call("reply", map[string]any{"id": orig[0].ID, "body": "fixed"}, &ids)
	if len(ids.IDs) != 1 {
		t.Fatalf("reply: %+v", ids)
	}
	if got, _ := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "mayor"}, maildir.ListOptions{}); len(got) != 1 || got[0].ReplyTo != orig[0].ID || got[0].From != "gastown.toast" {
		t.Fatalf("the mayor got %+v", got)
	}
	call("send", map[string]any{"to": "gastown/witness", "subject": "HELP: stuck", "priority": "high"}, &ids)
	if got, _ := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "gastown.witness"}, maildir.ListOptions{}); len(got) != 1 || got[0].Priority != maildir.High {
		t.Fatalf("the witness got %+v", got)
	}
	var thread struct{ Messages []msg }
	call("thread", map[string]any{"id": orig[0].ID}, &thread)
	if len(thread.Messages) != 2 {
		t.Fatalf("thread: %+v", thread)
	}
	var item msg
	call("claim", map[string]any{"queue": "queue:work"}, &item)
	if item.Subject != "WORK gt-2" {
		t.Fatalf("claim: %+v", item)
	}

	// Bad input is a tool error with a clear message; the server lives on.
	for _, bad := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"read", map[string]any{"id": "no-such-id"}, "message not found"},
		{"send", map[string]any{"to": "../etc", "subject": "x"}, "invalid agent name"},
		{"send", map[string]any{"to": "nux", "subject": "x", "priority": "asap"}, "unknown priority"},
		{"claim", map[string]any{"queue": "queue:nosuch"}, "no such queue"},
		{"claim", map[string]any{"queue": "queue:work"}, "queue empty"},
		{"inbox", map[string]any{"limit": -1}, "must not be negative"},
	} {
		res := call(bad.tool, bad.args, nil)
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, bad.says) {
			t.Errorf("%s %v: isError %v, %q; want an error saying %q", bad.tool, bad.args, res.IsError, text, bad.says)
		}
	}
	call("inbox", map[string]any{"all": true}, &list)
	if len(list.Messages) != 2 {
		t.Fatalf("after the bad calls the server still answers: %+v", list)
	}
}
