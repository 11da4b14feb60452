package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/mcpserver"
)

// buildMailfs builds the real binaries, mailfs and mailfs-mcp beside it
// (which "mailfs mcp" runs), and returns mailfs's path.
func buildMailfs(t *testing.T) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// built builds the binaries once for the package's tests.
var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "mailfs-mcp-test-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"mailfs", "mailfs-mcp"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), "github.com/mailfs/mailfs/cmd/"+name)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build: %v\n%s", err, out)
		}
	}
	return filepath.Join(dir, "mailfs"), nil
})

// The SDK's own client spawns the real binary over stdio, as an agent's
// MCP client does, and uses every tool.
func TestMCPEndToEnd(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	orig, err := s.Send(&maildir.Message{From: "mayor", To: "gastown/toast", Subject: "WORK gt-1", Body: "fix the build", Priority: maildir.Urgent})
	if err != nil {
		t.Fatal(err)
	}
	s.CreateQueue("work")
	s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-2"})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "mcp", "--agent", "gastown/toast")
	cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root, "XDG_STATE_HOME="+t.TempDir())
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
		if tool.OutputSchema != nil {
			t.Errorf("tool %s: an output schema no client puts to use costs every turn", tool.Name)
		}
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
		if res.StructuredContent != nil || len(res.Content) != 1 {
			t.Fatalf("%s: the answer is not one text: %d contents, structured %v", name, len(res.Content), res.StructuredContent)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if s, ok := out.(*string); ok && !res.IsError {
			*s = text
		} else if out != nil && !res.IsError {
			if err := json.Unmarshal([]byte(text), out); err != nil {
				t.Fatalf("%s: %v: %s", name, err, text)
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
	var check string
	call("check", nil, &check)
	if !strings.HasPrefix(check, "<system-reminder>\nURGENT") || !strings.Contains(check, "WORK gt-1") {
		t.Fatalf("check: %q", check)
	}
	var read msg
	call("read", map[string]any{"id": orig[0].ID[:24]}, &read)
	if read.Body != "fix the build" || read.Priority != "urgent" {
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
	var sent struct{ IDs, Warnings []string }
	call("send", map[string]any{"to": "gastown/witness", "subject": "HELP: stuck", "priority": "high"}, &sent)
	if len(sent.IDs) != 1 || len(sent.Warnings) != 1 || !strings.Contains(sent.Warnings[0], "created the mailbox gastown.witness") {
		t.Fatalf("a send to a mailbox nobody had: %+v", sent)
	}
	call("send", map[string]any{"to": "gastown/witnes", "subject": "typo"}, &sent)
	if len(sent.Warnings) != 1 || !strings.Contains(sent.Warnings[0], "did you mean gastown.witness?") {
		t.Fatalf("a send to a mistyped agent: %+v", sent)
	}
	sent.Warnings = nil
	call("send", map[string]any{"to": "gastown/witness", "subject": "again"}, &sent)
	if len(sent.Warnings) != 0 {
		t.Fatalf("a send to a known agent warned: %+v", sent)
	}
	if got, _ := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "gastown.witness"}, maildir.ListOptions{}); len(got) != 2 || got[0].Priority != maildir.High {
		t.Fatalf("the witness got %+v", got)
	}
	// With an idempotency key, a retry delivers nothing and says so.
	var once, retry struct {
		IDs   []string
		Again bool
	}
	call("send", map[string]any{"to": "gastown/witness", "subject": "once", "idempotency_key": "task-9"}, &once)
	call("send", map[string]any{"to": "gastown/witness", "subject": "once", "idempotency_key": "task-9"}, &retry)
	if once.Again || !retry.Again || len(retry.IDs) != 1 || retry.IDs[0] != once.IDs[0] {
		t.Fatalf("a keyed send and its retry: %+v %+v", once, retry)
	}
	if got, _ := s.List(maildir.Address{Kind: maildir.KindAgent, Name: "gastown.witness"}, maildir.ListOptions{}); len(got) != 3 {
		t.Fatalf("the witness got %d messages after a keyed send and its retry, want 3", len(got))
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
	// Claimed and not yet done: a second claim hands the same item back;
	// read marks it done, and the queue is then empty (below).
	var again struct {
		ID, Note string
	}
	call("claim", map[string]any{"queue": "queue:work"}, &again)
	if again.ID != item.ID || !strings.Contains(again.Note, "still hold") {
		t.Fatalf("a second claim before the first was done: %+v, want %s handed back", again, item.ID)
	}
	call("read", map[string]any{"id": item.ID}, nil)

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

	// A backlog is listed DefaultInboxLimit at a time, with a count of the
	// rest; limit null is the default, 0 is all. (60 unread: the backlog;
	// the claimed item was read, so done.)
	for i := range 60 {
		s.Send(&maildir.Message{From: "mayor", To: "gastown/toast", Subject: fmt.Sprint("backlog ", i)})
	}
	var page struct {
		Messages []msg
		More     int
		Note     string
	}
	for _, args := range []map[string]any{nil, {"limit": nil}} {
		call("inbox", args, &page)
		if len(page.Messages) != 50 || page.More != 10 || !strings.Contains(page.Note, "… 10 more") {
			t.Fatalf("inbox %v of 60 unread: %d listed, more %d, note %q", args, len(page.Messages), page.More, page.Note)
		}
	}
	page.More, page.Note = 0, ""
	call("inbox", map[string]any{"limit": 0}, &page)
	if len(page.Messages) != 60 || page.More != 0 || page.Note != "" {
		t.Fatalf("inbox limit 0: %d listed, more %d", len(page.Messages), page.More)
	}
}

// A line that is not JSON-RPC, mid-session, is answered with an error and
// the session goes on: the real binary, spoken to line by line.
func TestMalformedLineMidSession(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	cmd := exec.Command(bin, "mcp", "--agent", "toast")
	cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root, "XDG_STATE_HOME="+t.TempDir())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the server ended the session: %v", lines.Err())
		}
		var v map[string]any
		if err := json.Unmarshal(lines.Bytes(), &v); err != nil {
			t.Fatalf("%v: %s", err, lines.Bytes())
		}
		return v
	}
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if v := next(); v["id"] != 1.0 || v["result"] == nil {
		t.Fatalf("initialize: %v", v)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inbox"`) // cut short
	v := next()
	if e, _ := v["error"].(map[string]any); e == nil || e["code"] != -32700.0 || v["id"] != nil {
		t.Fatalf("a line that is not JSON: %v, want a -32700 error with id null", v)
	}
	send(`{"id":3,"method":"tools/call"}`) // JSON, but not JSON-RPC 2.0
	v = next()
	if e, _ := v["error"].(map[string]any); e == nil || e["code"] != -32600.0 || v["id"] != 3.0 {
		t.Fatalf("a line that is not JSON-RPC: %v, want a -32600 error with id 3", v)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"inbox","arguments":{}}}`)
	v = next()
	if v["id"] != 4.0 || !strings.Contains(fmt.Sprint(v["result"]), "hello") {
		t.Fatalf("the call after the bad lines: %v", v)
	}
}

// runLines starts the real binary as toast's MCP server, writes lines and
// closes its stdin at once, as a client that sends everything up front
// does, and returns every line it answered before it exited.
func runLines(t *testing.T, bin, root string, lines ...string) []map[string]any {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--agent", "toast")
	cmd.Env = append(os.Environ(), "MAILFS_ROOT="+root, "XDG_STATE_HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the server exited with %v: %s", err, errb.String())
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		got = append(got, v)
	}
	return got
}

const (
	initLine        = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// A client that writes its requests and closes stdin at once gets an
// answer to every one of them, and the server exits 0.
func TestEveryRequestAnsweredBeforeExit(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	lines := []string{initLine, initializedLine}
	for i := 1; i <= 5; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"inbox","arguments":{}}}`, i))
	}
	got := runLines(t, bin, root, lines...)
	ids := map[any]bool{}
	for _, v := range got {
		ids[v["id"]] = v["result"] != nil
	}
	for _, id := range []any{"init", 1.0, 2.0, 3.0, 4.0, 5.0} {
		if !ids[id] {
			t.Errorf("no answer to request %v; got %v", id, got)
		}
	}
}

// A line that is a JSON array never ends the session: an empty one, or an
// element that is not a message, is answered -32600; a batch of requests
// (protocol 2025-03-26) is answered request by request.
func TestBatchesAreAnswered(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "hello"})
	got := runLines(t, bin, root, initLine, initializedLine,
		`[]`,
		`[1,2,3]`,
		`[{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"inbox","arguments":{}}},{"jsonrpc":"2.0","id":11,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"inbox","arguments":{}}}`)
	invalid, answered := 0, map[float64]bool{}
	for _, v := range got {
		if e, _ := v["error"].(map[string]any); e != nil && e["code"] == -32600.0 && v["id"] == nil {
			invalid++
		}
		if id, ok := v["id"].(float64); ok && v["result"] != nil {
			answered[id] = true
		}
	}
	if invalid != 4 {
		t.Errorf("%d -32600 errors, want 4 (one for [], one per element of [1,2,3]): %v", invalid, got)
	}
	for _, id := range []float64{10, 11, 12} {
		if !answered[id] {
			t.Errorf("request %v was not answered: %v", id, got)
		}
	}
}

// The inbox tool bounds its answer in bytes, not only in count: 200 unread
// with 20,000-character subjects come back with subjects cut as the hooks
// cut them, under MaxInboxBytes, saying how many were left out.
func TestInboxIsBoundedInBytes(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	for i := range 200 {
		s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: fmt.Sprintf("%03d %s", i, strings.Repeat("long ", 4000))})
	}
	got := runLines(t, bin, root, initLine, initializedLine,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"inbox","arguments":{"limit":0}}}`)
	var text string
	for _, v := range got {
		if v["id"] == 1.0 {
			res, _ := v["result"].(map[string]any)
			content, _ := res["content"].([]any)
			if len(content) > 0 {
				text, _ = content[0].(map[string]any)["text"].(string)
			}
		}
	}
	if len(text) == 0 || len(text) > mcpserver.MaxInboxBytes {
		t.Fatalf("the inbox answer is %d bytes; want 1 to %d", len(text), mcpserver.MaxInboxBytes)
	}
	var page struct {
		Messages []struct{ Subject string }
		More     int
		Cut      bool
		Note     string
	}
	if err := json.Unmarshal([]byte(text), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Messages)+page.More != 200 || !page.Cut || !strings.Contains(page.Note, fmt.Sprintf("%d more", page.More)) {
		t.Fatalf("%d listed, more %d, cut %v, note %q: want all 200 accounted for", len(page.Messages), page.More, page.Cut, page.Note)
	}
	for _, m := range page.Messages {
		if n := len([]rune(m.Subject)); n > 121 {
			t.Fatalf("a subject of %d characters; the hooks cut at 120", n)
		}
	}
}

// Every framing in a table of malformed input is answered or passed over,
// and never ends the session: the request after all of them is answered,
// and the server exits 0 when stdin closes.
func TestMalformedFramingsTable(t *testing.T) {
	bin := buildMailfs(t)
	root := filepath.Join(t.TempDir(), ".chipset")
	bad := []struct{ line, code string }{
		{`[]`, "-32600"},
		{`[1,2,3]`, "-32600"},
		{`{}`, "-32600"},
		{`"a string"`, "-32600"},
		{`null`, "-32600"},
		{`123`, "-32600"},
		{`{"jsonrpc":"2.0"}`, "-32600"},
		{`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`, "-32600"},
		{`{"jsonrpc":"2.0","id":8,"method":`, "-32700"},
		{`{"jsonrpc":"2.0","id":9,"method":"tools/list"}}`, "-32700"},
		{"\xef\xbb\xbf{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\"}", "-32700"}, // a byte order mark
		{"\xff\xfe", "-32700"},
		{`[{"jsonrpc":"2.0","id":11,"method":"tools/list"},"junk"]`, "-32600"},
		{`{"jsonrpc":"2.0","id":12,"method":"no/such/method"}`, "-32601"},
		{"", ""},    // blank lines are passed over
		{"   ", ""}, // so are lines of spaces
		{`{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"x":"` + strings.Repeat("x", 5<<20) + `"}}`, "-32700"}, // over the line bound, never held whole
	}
	lines := []string{initLine, initializedLine}
	for _, b := range bad {
		lines = append(lines, b.line)
	}
	lines = append(lines, `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"inbox","arguments":{}}}`+"\r")
	got := runLines(t, bin, root, lines...)
	codes := map[string]int{}
	answered := map[float64]bool{}
	for _, v := range got {
		if e, _ := v["error"].(map[string]any); e != nil {
			codes[fmt.Sprint(e["code"])]++
		}
		if id, ok := v["id"].(float64); ok && v["result"] != nil {
			answered[id] = true
		}
	}
	want := map[string]int{}
	for _, b := range bad {
		if b.code != "" {
			want[b.code]++
		}
	}
	for code, n := range want {
		if codes[code] < n {
			t.Errorf("%d errors %s, want at least %d: %v", codes[code], code, n, got)
		}
	}
	if !answered[11] || !answered[99] {
		t.Fatalf("the good request in a batch (11) or the last one (99, CRLF) was not answered: %v", got)
	}
}

// newRoot opens a store in a fresh root, closed when the test ends.
func newRoot(t *testing.T) (string, *maildir.Store) {
	t.Helper()
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return root, s
}

// A 200 KB body is not one 200 KB answer: read returns at most
// MaxBodyBytes of it, says how big it is and where the rest starts, and
// reading on from each offset gives back the whole body exactly, never
// cutting a character; a thread of long messages stays within
// MaxInboxBytes.
func TestReadAndThreadAreBounded(t *testing.T) {
	bin := buildMailfs(t)
	root, s := newRoot(t)
	body := strings.Repeat("héllo wörld ", 17000) // about 240 KB, two-byte characters in it
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "long", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "long too", Body: body, Thread: sent[0].ID, ReplyTo: sent[0].ID})
	}
	text := func(lines []map[string]any, id float64) string {
		for _, v := range lines {
			if v["id"] == id {
				res, _ := v["result"].(map[string]any)
				content, _ := res["content"].([]any)
				if len(content) > 0 {
					s, _ := content[0].(map[string]any)["text"].(string)
					return s
				}
			}
		}
		return ""
	}
	var whole strings.Builder
	for offset, call := 0, 1; ; call++ {
		got := runLines(t, bin, root, initLine, initializedLine,
			fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read","arguments":{"id":%q,"offset":%d}}}`, call, sent[0].ID, offset))
		answer := text(got, float64(call))
		if len(answer) == 0 || len(answer) > mcpserver.MaxBodyBytes+2000 {
			t.Fatalf("read answer %d is %d bytes; want 1 to about %d", call, len(answer), mcpserver.MaxBodyBytes)
		}
		var m struct {
			Body      string
			BodyBytes int `json:"body_bytes"`
			Offset    int
			Note      string
		}
		if err := json.Unmarshal([]byte(answer), &m); err != nil {
			t.Fatal(err)
		}
		if m.BodyBytes != len(body) || m.Offset != offset || !utf8.ValidString(m.Body) || m.Note == "" {
			t.Fatalf("read %d: %d of %d bytes from %d, note %q", call, len(m.Body), m.BodyBytes, m.Offset, m.Note)
		}
		whole.WriteString(m.Body)
		offset += len(m.Body)
		if offset >= len(body) {
			break
		}
		if call > 20 {
			t.Fatal("reading on never reached the end")
		}
	}
	if whole.String() != body {
		t.Fatalf("the parts make %d bytes, not the body's %d", whole.Len(), len(body))
	}
	got := runLines(t, bin, root, initLine, initializedLine,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"thread","arguments":{"id":%q}}}`, sent[0].ID))
	if n := len(text(got, 1)); n == 0 || n > mcpserver.MaxInboxBytes {
		t.Fatalf("the thread answer is %d bytes; want 1 to %d", n, mcpserver.MaxInboxBytes)
	}
}
