package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC's error codes for input that is not a request.
const (
	codeParseError     = -32700 // not JSON
	codeInvalidRequest = -32600 // JSON, but not a JSON-RPC message
)

// drainWait bounds how long the end of the client's stream waits for the
// answers to the requests that came before it.
const drainWait = time.Minute

// maxLine bounds one line of the client's stream: a longer one (no tool
// takes more than a 1 MiB message) is answered as a parse error and
// skipped to its newline, never held whole in memory.
const maxLine = 4 << 20

// A guard stands between the client's stream and the SDK's, which ends the
// session at the first line it cannot decode and drops the requests still
// in flight when its input ends. So the guard:
//
//   - answers a line that is not JSON with a -32700 error, one that is not
//     a JSON-RPC message with -32600, and goes on with the next line;
//   - hands a batch (a JSON array, as protocol 2025-03-26 allowed) to the
//     SDK one message at a time, each answered on its own line (an empty
//     array, or an element that is not a message, gets -32600);
//   - holds the end of input back until every request it handed on has
//     been answered (at most drainWait), so a client that writes its
//     requests and closes stdin at once gets every answer.
type guard struct {
	in      *bufio.Reader
	out     *lockedWriter
	pending []byte // good lines, being handed to the SDK
	err     error  // the read error to return once pending is handed on

	mu       sync.Mutex
	waiting  map[string]bool // ids of requests handed on and not yet answered
	answered chan struct{}   // closed and replaced at each answer
}

func newGuard(r io.Reader, w *lockedWriter) *guard {
	g := &guard{in: bufio.NewReaderSize(r, 64<<10), out: w, waiting: map[string]bool{}, answered: make(chan struct{})}
	w.sent = g.sent
	return g
}

func (g *guard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			g.drain()
			return 0, g.err
		}
		line, err := g.readLine()
		g.err = err
		if line == nil && err == nil {
			g.reject(nil, codeParseError, fmt.Sprintf("Parse error: a line over %d bytes", maxLine))
			continue
		}
		g.check(line)
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns the next line, newline included, or nil (and no
// error) for a line over maxLine, which it reads past and drops.
func (g *guard) readLine() ([]byte, error) {
	var line []byte
	for {
		part, err := g.in.ReadSlice('\n')
		if len(line)+len(part) > maxLine {
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) { // to the end of the line
				_, err = g.in.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, nil // the end of input, if that was it, comes next
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

// drain waits until every request handed on was answered, or drainWait.
func (g *guard) drain() {
	deadline := time.After(drainWait)
	for {
		g.mu.Lock()
		n, ch := len(g.waiting), g.answered
		g.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// Close ends the stream; the SDK calls it when the session ends.
func (g *guard) Close() error { return nil }

// check queues line for the SDK, message by message, answering what is
// not a message. Blank lines are skipped silently.
func (g *guard) check(line []byte) {
	t := bytes.TrimSpace(line)
	switch {
	case len(t) == 0:
		return
	case !json.Valid(t):
		g.reject(nil, codeParseError, "Parse error: the line is not JSON")
		return
	case t[0] == '[':
		var batch []json.RawMessage
		json.Unmarshal(t, &batch)
		if len(batch) == 0 {
			g.reject(nil, codeInvalidRequest, "Invalid Request: an empty batch")
		}
		for _, m := range batch {
			g.one(m)
		}
		return
	}
	g.one(t)
}

// one hands one JSON value to the SDK if it is a JSON-RPC message, and
// answers it with an error if not.
func (g *guard) one(t []byte) {
	msg, err := jsonrpc.DecodeMessage(t)
	if err != nil {
		var v struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(t, &v)
		g.reject(v.ID, codeInvalidRequest, fmt.Sprintf("Invalid Request: %v", err))
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		id, _ := json.Marshal(req.ID.Raw())
		g.mu.Lock()
		g.waiting[string(id)] = true
		g.mu.Unlock()
	}
	var compact bytes.Buffer
	if json.Compact(&compact, t) != nil {
		compact.Reset()
		compact.Write(t)
	}
	g.pending = append(append(g.pending, compact.Bytes()...), '\n')
}

// sent notes a line the server wrote: a response settles its request.
func (g *guard) sent(line []byte) {
	var v struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &v) != nil || v.Result == nil && v.Error == nil || len(v.ID) == 0 {
		return
	}
	var id any
	json.Unmarshal(v.ID, &id)
	key, _ := json.Marshal(id)
	g.mu.Lock()
	if g.waiting[string(key)] {
		delete(g.waiting, string(key))
		close(g.answered)
		g.answered = make(chan struct{})
	}
	g.mu.Unlock()
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
	mu   sync.Mutex
	w    io.Writer
	sent func(line []byte) // told of each write
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.w.Write(p)
	if l.sent != nil {
		l.sent(p)
	}
	return n, err
}

func (l *lockedWriter) Close() error { return nil }
