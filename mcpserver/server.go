package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailfs/mailfs/hook"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
	"github.com/mailfs/mailfs/watch"
)

// Server is an agent's mail as MCP tools. Set the fields, then call
// [Server.Run] or [Server.MCP].
type Server struct {
	Store   *maildir.Store
	Nudges  *nudgeq.Queue
	Agent   string // the agent whose mail this is; ids and sends are its own
	Version string // reported to the client
	// StateDir is the folder of the agents' hook state, where tool calls
	// are recorded for "mailfs doctor"; "" means hook.StateDirFor's.
	StateDir string
}

// DefaultInboxLimit is how many messages inbox lists when the call gives
// no limit: a long backlog costs the agent a count, not its context.
const DefaultInboxLimit = 50

// MaxInboxBytes bounds the inbox tool's answer, in bytes of JSON: far
// under what a runtime shows the model of one tool result (past its cap
// Claude Code shows a 2 KB preview, without the note saying what was left
// out). Subjects are cut at 120 characters, as in the hooks.
const MaxInboxBytes = 24000

// Message is a message as the tools return it: what an agent acts on.
// The recipient is the agent itself, and left out but in a thread; the
// priority is left out when normal, read when false; the time is in the
// id. "mailfs show" prints every key.
type Message struct {
	ID       string   `json:"id"`
	From     string   `json:"from"`
	To       string   `json:"to,omitempty"`
	CC       []string `json:"cc,omitempty"`
	Priority string   `json:"priority,omitempty"`
	Subject  string   `json:"subject"`
	Body     string   `json:"body,omitempty"`
	Read     bool     `json:"read,omitempty"`
	// When the body is cut to keep the answer bounded: its whole size in
	// bytes, where this part starts, and what to call for the rest.
	BodyBytes int    `json:"body_bytes,omitempty"`
	Offset    int    `json:"offset,omitempty"`
	Note      string `json:"note,omitempty"`

	box maildir.Address // for the note of a cut body
}

// MaxBodyBytes bounds the body one read (or one thread message) returns,
// as MaxInboxBytes bounds an inbox: a 200 KB body would fill a model's
// context with one answer. The rest is had by reading again from an
// offset.
const MaxBodyBytes = 24000

// cutBody cuts out's body to at most limit bytes from offset, at a UTF-8
// boundary, and says what was left and how to get it.
func cutBody(out *Message, offset, limit int) {
	body := out.Body
	if offset < 0 || offset > len(body) {
		offset = len(body)
	}
	for offset > 0 && offset < len(body) && !utf8.RuneStart(body[offset]) {
		offset-- // never inside a character
	}
	if offset == 0 && len(body) <= limit {
		return
	}
	end := min(len(body), offset+limit)
	for end < len(body) && end > offset && !utf8.RuneStart(body[end]) {
		end--
	}
	out.Body, out.BodyBytes, out.Offset = body[offset:end], len(body), offset
	if end < len(body) {
		out.Note = fmt.Sprintf("bytes %d to %d of a %d-byte body; the rest: read with offset %d (or mailfs show %s %s)", offset, end, len(body), end, out.box, out.ID)
	} else {
		out.Note = fmt.Sprintf("bytes %d to %d, the end of a %d-byte body", offset, end, len(body))
	}
}

func toMessage(m *maildir.Message, withBody bool) Message {
	out := Message{ID: m.ID, From: m.From, CC: m.CC, Subject: m.Subject, Read: m.Read, box: m.Box}
	if m.Priority != maildir.Normal {
		out.Priority = string(m.Priority)
	}
	if withBody {
		out.Body = m.Body
	}
	return out
}

type (
	sendIn struct {
		To       string   `json:"to" jsonschema:"recipient: an agent (rig/role), @group, queue:NAME or channel:NAME"`
		Subject  string   `json:"subject" jsonschema:"one line"`
		Body     string   `json:"body,omitempty"`
		Priority string   `json:"priority,omitempty" jsonschema:"urgent, high, normal (default) or low"`
		Type     string   `json:"type,omitempty" jsonschema:"one word, e.g. work_assignment"`
		CC       []string `json:"cc,omitempty"`
		Key      string   `json:"idempotency_key,omitempty" jsonschema:"deliver once: a retry of the same message with the same key within 30 days delivers nothing and returns the first send's ids; the key used for another message is refused (at most 128 bytes)"`
	}
	idsOut struct {
		IDs      []string `json:"ids"`
		Again    bool     `json:"again,omitempty"` // sent before with this idempotency key: nothing new delivered
		Warnings []string `json:"warnings,omitempty"`
	}
	inboxIn struct {
		All   bool `json:"all,omitempty" jsonschema:"include read messages"`
		Limit *int `json:"limit,omitempty" jsonschema:"at most this many, oldest first (default 50; 0 for all)"`
	}
	listOut struct {
		Messages []Message `json:"messages"`
		More     int       `json:"more,omitempty"` // messages past the limit, or past MaxInboxBytes
		Cut      bool      `json:"cut,omitempty"`  // the list stopped at MaxInboxBytes
		Note     string    `json:"note,omitempty"`
	}
	idIn struct {
		ID string `json:"id" jsonschema:"message id or a unique prefix"`
	}
	readIn struct {
		ID     string `json:"id" jsonschema:"message id or a unique prefix"`
		Offset int    `json:"offset,omitempty" jsonschema:"where in the body to start, in bytes, for a body longer than one answer holds (the last answer's note says)"`
	}
	replyIn struct {
		ID       string `json:"id" jsonschema:"the message to answer"`
		Body     string `json:"body"`
		Subject  string `json:"subject,omitempty" jsonschema:"default: Re: and the original's"`
		Priority string `json:"priority,omitempty"`
	}
	claimIn struct {
		Queue string `json:"queue" jsonschema:"the work queue, queue:NAME"`
	}
)

// MCP returns the MCP server with the tools registered: each a named
// method of Server (send, inbox, read, reply, thread, claim, check), which
// a test can call without the SDK, behind one adapter that records the
// call for "mailfs doctor".
func (s *Server) MCP() *mcp.Server {
	if a, err := maildir.ParseAgent(s.Agent); err == nil {
		s.Agent = a
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "mailfs", Version: s.Version}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "send", Description: "Send mail; returns the ids of the copies."}, handler(s, "send", (*Server).send))
	mcp.AddTool(srv, &mcp.Tool{Name: "inbox", Description: "List my unread mail (all: read too), oldest first, no bodies; more and note say what was left out."}, handler(s, "inbox", (*Server).inbox))
	mcp.AddTool(srv, &mcp.Tool{Name: "read", Description: "Read one of my messages, with its body, and mark it read."}, handler(s, "read", (*Server).read))
	mcp.AddTool(srv, &mcp.Tool{Name: "reply", Description: "Answer one of my messages: to its sender, in its thread."}, handler(s, "reply", (*Server).reply))
	mcp.AddTool(srv, &mcp.Tool{Name: "thread", Description: "Every message of the conversation of an id, in time order."}, handler(s, "thread", (*Server).thread))
	mcp.AddTool(srv, &mcp.Tool{Name: "claim", Description: "Take the oldest item of a work queue into my mailbox."}, handler(s, "claim", (*Server).claim))
	mcp.AddTool(srv, &mcp.Tool{Name: "check", Description: "What needs my attention: unread mail by priority and my nudges (which it consumes)."}, handler(s, "check", (*Server).check))
	return srv
}

// handler adapts a tool's method to the SDK's handler: the call is
// recorded, and the method's answer returned once, as the result's text
// (compact JSON; the check tool's reminder as it is). Neither structured
// content nor an output schema is sent: a client puts one or the other
// into the model's context (Claude Code the structured content when there
// is one, Gemini CLI the text), so the text alone reaches every model,
// once. docs/performance.md has the measurements.
func handler[In, Out any](s *Server, name string, f func(*Server, context.Context, In) (Out, error)) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		s.used(name)
		out, err := f(s, ctx, in)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text(out)}}}, nil, nil
	}
}

// text is a tool's answer as the model reads it: a string as it is,
// anything else as one line of JSON without HTML escaping.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("mailfs: %v", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// me is the agent's own mailbox.
func (s *Server) me() maildir.Address { return maildir.Address{Kind: maildir.KindAgent, Name: s.Agent} }

// send is the send tool: Send mail; returns the ids of the copies.
func (s *Server) send(ctx context.Context, in sendIn) (idsOut, error) {
	p, err := maildir.ParsePriority(in.Priority)
	if err != nil {
		return idsOut{}, err
	}
	before, _ := s.Store.Agents()
	m := &maildir.Message{From: s.Agent, To: in.To, CC: in.CC, Subject: in.Subject, Body: in.Body, Priority: p, Type: in.Type}
	var sent []*maildir.Message
	again := false
	if in.Key != "" {
		sent, again, err = s.Store.SendOnce(m, in.Key)
	} else {
		sent, err = s.Store.Send(m)
	}
	out := idsOut{IDs: []string{}, Again: again}
	for _, m := range sent {
		out.IDs = append(out.IDs, m.ID)
	}
	out.Warnings = maildir.NewMailboxes(before, sent)
	return out, err
}

// inbox is the inbox tool: List my unread mail (all: read too), oldest first, no bodies; more and note say what was left out.
func (s *Server) inbox(ctx context.Context, in inboxIn) (listOut, error) {
	limit := DefaultInboxLimit
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 0 {
		return listOut{}, errors.New("limit must not be negative")
	}
	msgs, err := s.Store.List(s.me(), maildir.ListOptions{All: in.All})
	more := 0
	if limit > 0 && len(msgs) > limit {
		more, msgs = len(msgs)-limit, msgs[:limit]
	}
	// Subjects cut as the hooks cut them, and the answer bounded in
	// bytes: a list is for choosing what to read.
	out := listOut{Messages: []Message{}}
	size := 200 // the envelope and the note
	for i, m := range msgs {
		msg := toMessage(m, false)
		msg.Subject = hook.Short(msg.Subject)
		b, _ := json.Marshal(msg)
		if size+len(b)+1 > MaxInboxBytes && i > 0 {
			more += len(msgs) - i
			out.Cut = true
			break
		}
		size += len(b) + 1
		out.Messages = append(out.Messages, msg)
	}
	switch {
	case out.Cut:
		out.More = more
		out.Note = fmt.Sprintf("… %d more, newer than these, left out to keep this answer under %d bytes: read and mark these first, then call inbox again", more, MaxInboxBytes)
	case more > 0:
		out.More = more
		out.Note = fmt.Sprintf("… %d more, newer than these: read and mark these first, or call inbox with a larger limit (0 for all)", more)
	}
	return out, err
}

// read is the read tool: Read one of my messages, with its body, and mark it read.
func (s *Server) read(ctx context.Context, in readIn) (Message, error) {
	m, err := s.Store.MarkRead(s.me(), in.ID)
	if err != nil {
		return Message{}, err
	}
	if s.Nudges != nil { // as Gas Town's read: defer the thread's reply reminders, drop the announcement
		s.Nudges.MailSeen(s.Agent, nudgeq.MailRead, m)
	}
	out := toMessage(m, true)
	out.Read = false // it is now: saying so is weight
	cutBody(&out, in.Offset, MaxBodyBytes)
	return out, nil
}

// reply is the reply tool: Answer one of my messages: to its sender, in its thread.
func (s *Server) reply(ctx context.Context, in replyIn) (idsOut, error) {
	p, err := maildir.ParsePriority(in.Priority)
	if err != nil {
		return idsOut{}, err
	}
	sent, err := s.Store.Reply(s.me(), in.ID, &maildir.Message{Subject: in.Subject, Body: in.Body, Priority: p})
	out := idsOut{IDs: []string{}}
	for _, m := range sent {
		out.IDs = append(out.IDs, m.ID)
	}
	if len(sent) > 0 && s.Nudges != nil {
		// The reply satisfies Gas Town's reminders to send it.
		if _, cerr := s.Nudges.ClearReplyReminders(s.Agent, sent[0]); cerr != nil {
			out.Warnings = append(out.Warnings, cerr.Error())
		}
	}
	return out, err
}

// thread is the thread tool: Every message of the conversation of an id, in time order.
func (s *Server) thread(ctx context.Context, in idIn) (listOut, error) {
	msgs, err := s.Store.Thread(in.ID)
	return boundedThread(msgs), err
}

// claim is the claim tool: Take the oldest item of a work queue into my mailbox.
func (s *Server) claim(ctx context.Context, in claimIn) (Message, error) {
	q, err := s.Store.Resolve(in.Queue)
	if err != nil {
		return Message{}, err
	}
	me := s.me()
	// The CLI's claim path (watch.Claim): the agent's own held item
	// first; on the queue's home, other hosts' requests first; elsewhere
	// a claim request to the home, which this tool leaves and does not
	// wait on: the model is told to claim again once the syncs ran.
	got, err := watch.Claim(s.Store, q, me, false)
	if err != nil {
		return Message{}, err
	}
	var out Message
	var notes []string
	switch {
	case got.Item == nil:
		verb := "asked"
		if !got.Fresh {
			verb = "already asked"
		}
		notes = append(notes, fmt.Sprintf("%s is homed on host %s: %s it for an item for you (request %s). %s hands one out at its next sync and it arrives here with the sync after: claim again then, and that item comes back to you", q, got.Home, verb, got.Request.ID, got.Home))
	case got.Held:
		out = toMessage(got.Item, true)
		notes = append(notes, fmt.Sprintf("you still hold %s, claimed from %s and not marked read: handed back (mark it read when done)", got.Item.ID, q))
	default:
		out = toMessage(got.Item, true)
	}
	if got.ServeErr != nil {
		notes = append(notes, "serving the claim requests of "+q.String()+" first: "+got.ServeErr.Error())
	}
	if out.Note != "" {
		notes = append([]string{out.Note}, notes...)
	}
	out.Note = strings.Join(notes, "; ")
	return out, nil
}

// check is the check tool: What needs my attention: unread mail by priority and my nudges (which it consumes).
// Its answer is the reminder's text.
func (s *Server) check(ctx context.Context, _ struct{}) (string, error) {
	res := (&hook.Collector{Store: s.Store, Nudges: s.Nudges}).Collect(ctx, s.Agent)
	out := res.Reminder.String()
	out = cmp.Or(out, "Nothing waits: no unread mail, no nudges.")
	if err := res.Commit(); err != nil {
		res.Errs = append(res.Errs, err)
	}
	return out, errors.Join(res.Errs...)
}

// used records a tool call for "mailfs doctor"; a record that cannot be
// written costs nothing but the record.
func (s *Server) used(tool string) {
	h := &hook.Handler{Collector: hook.Collector{Store: s.Store}, StateDir: s.StateDir}
	_ = h.UsedMCP(s.Agent, tool)
}

// boundedThread lists a thread within MaxInboxBytes of JSON: each body
// cut to what is left of the budget shared among the messages still to
// come (at least 1 KB each), and the newest messages past it left out and
// counted, with what to call.
func boundedThread(msgs []*maildir.Message) listOut {
	out := listOut{Messages: []Message{}}
	size := 0
	for i, m := range msgs {
		msg := toMessage(m, true)
		msg.To = m.To // a thread crosses mailboxes
		share := max(1024, (MaxInboxBytes-size)/(len(msgs)-i))
		cutBody(&msg, 0, share)
		b, _ := json.Marshal(msg)
		if size+len(b)+1 > MaxInboxBytes && i > 0 {
			out.More, out.Cut = len(msgs)-i, true
			out.Note = fmt.Sprintf("… %d newer messages of the thread left out to keep this answer under %d bytes: read them by id", out.More, MaxInboxBytes)
			break
		}
		size += len(b) + 1
		out.Messages = append(out.Messages, msg)
	}
	return out
}

// Run serves over stdin and stdout until the client goes away or ctx ends.
func (s *Server) Run(ctx context.Context) error { return s.Serve(ctx, os.Stdin, os.Stdout) }

// Serve serves newline-delimited JSON-RPC from r to w until r ends or ctx
// does. A line that is not a JSON-RPC message is answered with an error
// (-32700 when it is not JSON) and the session goes on.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if _, err := maildir.ParseAgent(s.Agent); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	out := &lockedWriter{w: w}
	return s.MCP().Run(ctx, &mcp.IOTransport{Reader: newGuard(r, out), Writer: out})
}
