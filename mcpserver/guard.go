package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC's error codes for input that is not a request.
const (
	codeParseError     = -32700 // not JSON
	codeInvalidRequest = -32600 // JSON, but not a JSON-RPC message
)

// A guard stands between the client's stream and the SDK's, which ends the
// session at the first line it cannot decode: a line that is not JSON is
// answered with a -32700 error, one that is not a JSON-RPC message with
// -32600, and the session goes on with the next line.
type guard struct {
	in      *bufio.Reader
	out     *lockedWriter
	pending []byte // a good line, being handed to the SDK
	err     error  // the read error to return once pending is handed on
}

func newGuard(r io.Reader, w *lockedWriter) *guard {
	return &guard{in: bufio.NewReaderSize(r, 64<<10), out: w}
}

func (g *guard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.in.ReadBytes('\n')
		g.err = err
		if g.check(line) {
			g.pending = line
		}
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// Close ends the stream; the SDK calls it when the session ends.
func (g *guard) Close() error { return nil }

// check reports whether line goes on to the SDK, answering it if not.
// Blank lines are skipped silently; a batch (an array) goes on whole.
func (g *guard) check(line []byte) bool {
	t := bytes.TrimSpace(line)
	switch {
	case len(t) == 0:
		return false
	case !json.Valid(t):
		g.reject(nil, codeParseError, "Parse error: the line is not JSON")
		return false
	case t[0] == '[':
		return true
	}
	if _, err := jsonrpc.DecodeMessage(t); err != nil {
		var v struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(t, &v)
		g.reject(v.ID, codeInvalidRequest, fmt.Sprintf("Invalid Request: %v", err))
		return false
	}
	return true
}

// reject writes a JSON-RPC error response for id (null if unknown).
func (g *guard) reject(id json.RawMessage, code int, msg string) {
	if len(id) == 0 || !json.Valid(id) {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	g.out.Write(append(data, '\n'))
}

// A lockedWriter serialises whole writes: the SDK's responses and the
// guard's errors never interleave within a line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
