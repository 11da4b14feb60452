// Package stubmodel is a loopback stand-in for the Anthropic Messages API,
// for tests that run a real agent runtime (Claude Code, Qwen Code) with no
// login and no network: each request is recorded, and a Script decides the
// answer (text, or a tool call).
//
// It answers POST …/messages (streaming and not) and, for Qwen Code's
// OpenAI-compatible client, POST …/chat/completions, for Codex's POST
// …/responses, and for Gemini CLI's POST …:generateContent and
// …:streamGenerateContent; anything else gets an empty JSON object.
package stubmodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// A Request is one request a runtime made to the model.
type Request struct {
	N    int            // 1-based, in arrival order
	Path string         // URL path
	Body map[string]any // the decoded JSON body
	Raw  string         // the body as sent
}

// Text returns every text the request carries (system, messages, tool
// results), joined: what a test looks for to see what reached the model.
func (r Request) Text() string { return r.Raw }

// LastUser returns the text of the request's last user message (every
// text block and tool result in it), as JSON.
func (r Request) LastUser() string {
	msgs, _ := r.Body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] == "user" {
			b, _ := json.Marshal(m["content"])
			return string(b)
		}
	}
	return ""
}

// A Reply is the model's answer: Text, or a tool call when Tool is set.
type Reply struct {
	Text  string
	Tool  string         // a tool's name, e.g. "Bash"
	Input map[string]any // the tool's input
}

// A Script answers one request. It runs on the server's goroutine for that
// request, after the request is recorded and outside every lock: scripts
// of requests that overlap run at once, so one that keeps state guards it.
type Script func(Request) Reply

// A Server is a running stand-in.
type Server struct {
	URL string // http://127.0.0.1:PORT

	mu       sync.Mutex
	script   Script
	requests []Request
	changed  chan struct{} // closed and replaced at each request
	srv      *http.Server
	ln       net.Listener
}

// Start starts a stand-in on a loopback port. Close it when done.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, changed: make(chan struct{}), ln: ln}
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the model requests so far (those that carry messages).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Changed returns a channel closed at the next model request.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	json.Unmarshal(raw, &body)
	chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
	responses := strings.HasSuffix(r.URL.Path, "/responses")
	gemini := strings.HasSuffix(r.URL.Path, ":generateContent") || strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	if r.Method != http.MethodPost || !(strings.HasSuffix(r.URL.Path, "/messages") || chat || responses || gemini) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	s.mu.Lock()
	req := Request{N: len(s.requests) + 1, Path: r.URL.Path, Body: body, Raw: string(raw)}
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	// The script runs outside the lock: one that takes its time (a model
	// thinking until the test says) leaves the recorded requests readable.
	reply := s.script(req)
	stream, _ := body["stream"].(bool)
	switch {
	case gemini:
		writeGemini(w, reply, strings.HasSuffix(r.URL.Path, ":streamGenerateContent"), req.N)
	case responses:
		writeResponses(w, reply, req.N)
	case chat:
		writeChat(w, reply, stream, req.N)
	case stream:
		writeStream(w, reply, req.N)
	default:
		writeMessage(w, reply, req.N)
	}
}

func (rp Reply) content(n int) []map[string]any {
	if rp.Tool != "" {
		in := rp.Input
		if in == nil {
			in = map[string]any{}
		}
		return []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_%04d", n), "name": rp.Tool, "input": in}}
	}
	return []map[string]any{{"type": "text", "text": rp.Text}}
}

func (rp Reply) stop() string {
	if rp.Tool != "" {
		return "tool_use"
	}
	return "end_turn"
}

func writeMessage(w http.ResponseWriter, rp Reply, n int) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%04d", n), "type": "message", "role": "assistant", "model": "claude-stub",
		"content": rp.content(n), "stop_reason": rp.stop(), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
	})
}

func writeStream(w http.ResponseWriter, rp Reply, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	send := func(event string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_%04d", n), "type": "message", "role": "assistant", "model": "claude-stub",
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 1},
	}})
	if rp.Tool != "" {
		in, _ := json.Marshal(rp.Input)
		if rp.Input == nil {
			in = []byte("{}")
		}
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%04d", n), "name": rp.Tool, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": rp.Text}})
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": rp.stop(), "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// writeChat answers an OpenAI-compatible chat completion.
func writeChat(w http.ResponseWriter, rp Reply, stream bool, n int) {
	msg := map[string]any{"role": "assistant", "content": rp.Text}
	finish := "stop"
	if rp.Tool != "" {
		in, _ := json.Marshal(rp.Input)
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": fmt.Sprintf("call_%04d", n), "type": "function", "index": 0,
			"function": map[string]any{"name": rp.Tool, "arguments": string(in)}}}}
		finish = "tool_calls"
	}
	id := fmt.Sprintf("chatcmpl-%04d", n)
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "model": "stub",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "model": "stub",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(msg, nil, nil)
	chunk(map[string]any{}, finish, usage)
	io.WriteString(w, "data: [DONE]\n\n")
}

// writeResponses answers an OpenAI Responses API request (Codex's wire
// protocol), streamed: created, the one output item, completed.
func writeResponses(w http.ResponseWriter, rp Reply, n int) {
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	id := fmt.Sprintf("resp_%04d", n)
	item := map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%04d", n),
		"content": []any{map[string]any{"type": "output_text", "text": rp.Text, "annotations": []any{}}}}
	if rp.Tool != "" {
		in, _ := json.Marshal(rp.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", n), "call_id": fmt.Sprintf("call_%04d", n),
			"name": rp.Tool, "arguments": string(in)}
	}
	send(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	send(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	send(map[string]any{"type": "response.completed", "response": map[string]any{"id": id, "usage": map[string]any{
		"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
}

// writeGemini answers a Gemini API generateContent request (Gemini CLI's,
// with GOOGLE_GEMINI_BASE_URL set to the stand-in), streamed as
// server-sent events when stream.
func writeGemini(w http.ResponseWriter, rp Reply, stream bool, n int) {
	part := map[string]any{"text": rp.Text}
	if rp.Tool != "" {
		in := rp.Input
		if in == nil {
			in = map[string]any{}
		}
		part = map[string]any{"functionCall": map[string]any{"id": fmt.Sprintf("call_%04d", n), "name": rp.Tool, "args": in}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
			"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "gemini-stub", "responseId": fmt.Sprintf("resp_%04d", n),
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(resp)
	fmt.Fprintf(w, "data: %s\n\n", b)
}
