package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/mcpserver"
	"github.com/mailfs/mailfs/nudgeq"
)

// A surface is something mailfs puts into an agent's context, and the
// bytes it puts there.
type surface struct {
	name string
	text string
}

// The mail of the scenarios: a typical work message from the mayor.
const (
	ctxSubject = "WORK gt-%03d: fix the flaky login test"
	ctxBody    = "The login test in auth/login_test.go fails one run in ten on CI.\nFind the race and fix it; reply when the fix is merged.\n"
)

// contextSurfaces measures every agent-facing surface of mailfs, each in
// a town of its own: the prompt hook's reminder (the first prompt of a
// turn and the next, with 1 unread message, 10, and 10 with 3 urgent), the
// session-start reminder, a live doorbell naming 1 and 10 messages, take
// and read of one message, and the MCP server's tools/list and each
// tool's result as the client receives it.
func contextSurfaces(tb testing.TB) []surface {
	tb.Setenv("XDG_STATE_HOME", tb.TempDir())
	tb.Setenv("MAILFS_STATE_DIR", "")
	var out []surface
	add := func(name, text string) { out = append(out, surface{name, text}) }

	town := func(unread, urgent int) (string, *maildir.Store, []*maildir.Message) {
		root := filepath.Join(tb.TempDir(), ".chipset")
		s, err := maildir.Open(root)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		var msgs []*maildir.Message
		for i := range unread {
			p := maildir.Normal
			if i >= unread-urgent {
				p = maildir.Urgent
			}
			sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprintf(ctxSubject, i+1), Body: ctxBody, Priority: p, Type: "work_assignment"})
			if err != nil {
				tb.Fatal(err)
			}
			msgs = append(msgs, sent[0])
		}
		return root, s, msgs
	}
	mailfs := func(root string, stdin string, args ...string) string {
		tb.Helper()
		var o, e bytes.Buffer
		if code := run(context.Background(), append([]string{"--root", root}, args...), stdio{in: strings.NewReader(stdin), out: &o, err: &e}); code != 0 && code != exitNothing {
			tb.Fatalf("mailfs %v: status %d: %s", args, code, e.String())
		}
		return o.String()
	}
	const prompt = `{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"go on"}`
	const start = `{"session_id":"s","hook_event_name":"SessionStart","source":"startup"}`

	for _, c := range []struct {
		name           string
		unread, urgent int
	}{{"1 unread", 1, 0}, {"10 unread", 10, 0}, {"10 unread, 3 urgent", 10, 3}} {
		root, _, _ := town(c.unread, c.urgent)
		add("prompt reminder, first, "+c.name, mailfs(root, prompt, "hook", "prompt-submit", "toast", "--runtime", "plain"))
		add("prompt reminder, repeated, "+c.name, mailfs(root, prompt, "hook", "prompt-submit", "toast", "--runtime", "plain"))
	}
	for _, n := range []int{1, 10} {
		root, _, _ := town(n, 0)
		add(fmt.Sprintf("session-start reminder, %d unread", n), mailfs(root, start, "hook", "session-start", "toast", "--runtime", "plain"))
	}
	for _, n := range []int{1, 10} {
		_, _, msgs := town(n, 0)
		bell := live.Doorbell{Agent: "toast", Mail: msgs, Nonce: "0123456789abcdef"}
		add(fmt.Sprintf("doorbell, %d message(s)", n), bell.Text())
	}
	{
		root, _, _ := town(1, 0)
		add("take, 1 message", mailfs(root, "", "take", "toast"))
		root, _, msgs := town(1, 0)
		add("read, 1 message", mailfs(root, "", "read", "toast", msgs[0].ID))
	}
	out = append(out, mcpSurfaces(tb, town)...)
	return out
}

// mcpSurfaces is the MCP server's part: tools/list and each tool's
// result, as JSON on the wire (what the client receives, of which it puts
// into the model's context the text, or the structured content).
func mcpSurfaces(tb testing.TB, town func(unread, urgent int) (string, *maildir.Store, []*maildir.Message)) []surface {
	root, s, msgs := town(10, 0)
	q, err := nudgeq.Open(root)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.CreateQueue("work"); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: fmt.Sprintf(ctxSubject, 99), Body: ctxBody}); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	srv := (&mcpserver.Server{Store: s, Nudges: q, Agent: "toast", Version: "bench", StateDir: tb.TempDir()}).MCP()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	wire := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return string(b)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	out := []surface{{"MCP tools/list", wire(tools)}}
	call := func(name string, args map[string]any) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			tb.Fatalf("%s: %v %s", name, err, wire(res))
		}
		out = append(out, surface{"MCP " + name, wire(res)})
	}
	call("check", nil)
	call("inbox", nil)
	call("read", map[string]any{"id": msgs[0].ID})
	call("reply", map[string]any{"id": msgs[0].ID, "body": "Merged in gt-201."})
	call("thread", map[string]any{"id": msgs[0].ID})
	call("send", map[string]any{"to": "mayor", "subject": "DONE gt-001", "body": "Merged."})
	call("claim", map[string]any{"queue": "queue:work"})
	return out
}

// BenchmarkContextBytes reports, for each surface, the bytes it puts into
// an agent's context and their tokens at four bytes a token. The ns/op
// figure is meaningless: run it with -benchtime 1x.
func BenchmarkContextBytes(b *testing.B) {
	for _, s := range contextSurfaces(b) {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(float64(len(s.text)), "bytes")
			b.ReportMetric(float64((len(s.text)+3)/4), "tokens")
		})
	}
}

// contextBefore is what each surface put into an agent's context before
// issue #57's cuts (BenchmarkContextBytes on 2026-11-27), in bytes.
var contextBefore = map[string]int{
	"prompt reminder, first, 1 unread":               178,
	"prompt reminder, repeated, 1 unread":            178,
	"prompt reminder, first, 10 unread":              608,
	"prompt reminder, repeated, 10 unread":           608,
	"prompt reminder, first, 10 unread, 3 urgent":    1022,
	"prompt reminder, repeated, 10 unread, 3 urgent": 1022,
	"session-start reminder, 1 unread":               178,
	"session-start reminder, 10 unread":              608,
	"doorbell, 1 message(s)":                         310,
	"doorbell, 10 message(s)":                        1112,
	"take, 1 message":                                475,
	"read, 1 message":                                474,
	"MCP tools/list":                                 6167,
	"MCP check":                                      1510,
	"MCP inbox":                                      6433,
	"MCP read":                                       1057,
	"MCP reply":                                      267,
	"MCP thread":                                     1759,
	"MCP send":                                       267,
	"MCP claim":                                      1055,
}

// Every agent-facing surface is smaller than it was before the cuts, and
// a repeated prompt reminder is a fraction of the first.
func TestContextBytesShrank(t *testing.T) {
	got := map[string]int{}
	for _, s := range contextSurfaces(t) {
		got[s.name] = len(s.text)
		before, ok := contextBefore[s.name]
		if !ok {
			t.Errorf("%s: no figure from before", s.name)
			continue
		}
		if len(s.text) >= before {
			t.Errorf("%s: %d bytes, not under the %d of before:\n%s", s.name, len(s.text), before, s.text)
		}
	}
	for _, c := range []string{"1 unread", "10 unread", "10 unread, 3 urgent"} {
		if first, again := got["prompt reminder, first, "+c], got["prompt reminder, repeated, "+c]; 2*again > first && again > 100 {
			t.Errorf("%s: the repeated reminder is %d bytes against the first's %d", c, again, first)
		}
	}
}
