// Package codexdoor is live delivery to a Codex session without tmux:
// [Run] starts Codex's app server on a private Unix socket, Codex's TUI on
// the terminal connected to it, and a deliverer whose [Door] is a second
// client of the server. It is the mailfs-codex binary's ("mailfs live
// codex" runs it): the app server speaks JSON-RPC over a WebSocket, and
// the WebSocket library (github.com/coder/websocket) links net/http,
// which the mailfs binary does not carry.
package codexdoor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/live"
)

// A Door rings a Codex session through its app server (codex
// app-server), as a second client beside the session's TUI (codex
// --remote), with nothing typed into a terminal: an idle thread gets a
// new turn (turn/start), a running turn is steered (turn/steer: Codex
// gives the model the doorbell at its next request in the same turn).
// [Run] starts the three together.
//
// It speaks the app server's JSON-RPC over its Unix socket (a WebSocket),
// one connection per call. Its evidence (a Confirmer) is Codex's
// rollout of the thread (see [live.CodexRollouts]), under the home the
// app server reports.
type Door struct {
	Socket string       // the app server's Unix socket
	Proc   live.Process // the TUI's process: the session ends with it
	// Record reads Codex's rollouts; nil until the first call learns the
	// server's home.
	Record live.Confirmer
	// Since is when the session started: rollouts older are not read.
	Since time.Time
}

// rpcTimeout bounds one exchange with the app server.
const rpcTimeout = 5 * time.Second

// readLimit bounds one message from the app server (a thread's read).
const readLimit = 64 << 20

// conn is one JSON-RPC connection to a Codex app server.
type conn struct {
	ctx  context.Context
	ws   *websocket.Conn
	next int
}

// dial connects to the app server at sock and initializes the
// connection; it returns the server's home (codexHome) too. The
// connection lives as long as ctx.
func dial(ctx context.Context, sock string) (*conn, string, error) {
	// The handshake goes over the Unix socket, whatever the URL's host.
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	ws, _, err := websocket.Dial(ctx, "ws://localhost/", &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		return nil, "", fmt.Errorf("codexdoor: codex app server %s: %w", sock, err)
	}
	ws.SetReadLimit(readLimit)
	c := &conn{ctx: ctx, ws: ws}
	var init struct {
		CodexHome string `json:"codexHome"`
	}
	if err := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "mailfs", "version": "live"}}, &init); err != nil {
		c.Close()
		return nil, "", err
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		c.Close()
		return nil, "", err
	}
	return c, init.CodexHome, nil
}

func (c *conn) Close() error { return c.ws.CloseNow() }

func (c *conn) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.ws.Write(c.ctx, websocket.MessageText, b)
}

// call sends a request and reads until its answer, passing over the
// server's notifications; result, if not nil, takes the answer's result.
func (c *conn) call(method string, params, result any) error {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	for {
		_, data, err := c.ws.Read(c.ctx)
		if err != nil {
			return fmt.Errorf("codexdoor: codex app server: %s: %w", method, err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &msg) != nil || msg.ID == nil || *msg.ID != id || msg.Method != "" {
			continue // a notification, or a request of the server's this client does not serve
		}
		if msg.Error != nil {
			return fmt.Errorf("codexdoor: codex app server: %s: %s (%d)", method, msg.Error.Message, msg.Error.Code)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

// threadInfo is what the door reads of a thread.
type threadInfo struct {
	ID           string  `json:"id"`
	Ephemeral    bool    `json:"ephemeral"`
	ParentThread *string `json:"parentThreadId"`
	ThreadSource string  `json:"threadSource"`
	CreatedAt    int64   `json:"createdAt"`
	Status       struct {
		Type string `json:"type"` // idle, active, systemError, notLoaded
	} `json:"status"`
}

// thread finds the session's thread: of the threads the server has
// loaded, the newest a person started (not an ephemeral helper's, nor a
// sub-agent's); after /new in the TUI, the new one.
func (c *conn) thread() (threadInfo, error) {
	var list struct {
		Data []string `json:"data"`
	}
	if err := c.call("thread/loaded/list", map[string]any{}, &list); err != nil {
		return threadInfo{}, err
	}
	var best threadInfo
	for _, id := range list.Data {
		var r struct {
			Thread threadInfo `json:"thread"`
		}
		if err := c.call("thread/read", map[string]any{"threadId": id}, &r); err != nil {
			continue
		}
		t := r.Thread
		if t.Ephemeral || t.ParentThread != nil || cmp.Or(t.ThreadSource, "user") != "user" {
			continue
		}
		if best.ID == "" || t.CreatedAt >= best.CreatedAt {
			best = t
		}
	}
	if best.ID == "" {
		return best, errors.New("codexdoor: the Codex session has no thread yet")
	}
	return best, nil
}

// open connects and learns the server's home, for the Record.
func (d *Door) open(ctx context.Context) (*conn, error) {
	c, home, err := dial(ctx, d.Socket)
	if err != nil {
		return nil, err
	}
	if d.Record == nil && home != "" {
		d.Record = &live.CodexRollouts{Dir: filepath.Join(home, "sessions"), Since: d.Since}
	}
	return c, nil
}

// Session reports the session: gone when its TUI is; busy while its
// thread runs a turn.
func (d *Door) Session(ctx context.Context) (live.Info, error) {
	if !d.Proc.Alive() {
		return live.Info{}, fmt.Errorf("%w: codex (pid %d)", live.ErrGone, d.Proc.PID)
	}
	info := live.Info{Runtime: string(agentrt.Codex), Process: d.Proc, Where: d.Socket}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	c, err := d.open(ctx)
	if err != nil {
		return info, nil // the server may still be starting: the TUI says the session runs
	}
	defer c.Close()
	if t, err := c.thread(); err == nil {
		info.ID = t.ID
		info.Status = map[string]string{"active": "busy", "idle": "idle"}[t.Status.Type]
	}
	return info, nil
}

// Ring gives text to the session's thread: a new turn when it is idle,
// steered into the running turn when it is busy.
func (d *Door) Ring(ctx context.Context, text string) error {
	if !d.Proc.Alive() {
		return fmt.Errorf("%w: codex (pid %d)", live.ErrGone, d.Proc.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	c, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.thread()
	if err != nil {
		return err
	}
	input := []map[string]any{{"type": "text", "text": text}}
	// A turn may start or end between the look and the call: each way is
	// tried once more the other way.
	steer := func() error {
		var turns struct {
			Data []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"data"`
		}
		if err := c.call("thread/turns/list", map[string]any{"threadId": t.ID, "limit": 5}, &turns); err != nil {
			return err
		}
		i := slices.IndexFunc(turns.Data, func(tr struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}) bool {
			return tr.Status == "inProgress"
		})
		if i < 0 {
			return errors.New("codexdoor: no Codex turn is running")
		}
		return c.call("turn/steer", map[string]any{"threadId": t.ID, "expectedTurnId": turns.Data[i].ID, "input": input}, nil)
	}
	start := func() error {
		return c.call("turn/start", map[string]any{"threadId": t.ID, "input": input}, nil)
	}
	if t.Status.Type == "active" {
		if err = steer(); err != nil {
			err = start()
		}
		return err
	}
	if err = start(); err != nil {
		err = steer()
	}
	return err
}

// Evidence reads Codex's rollouts (see live.CodexRollouts).
func (d *Door) Evidence(ctx context.Context, nonces []string) (live.Evidence, error) {
	if d.Record == nil {
		ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
		defer cancel()
		if c, err := d.open(ctx); err == nil {
			c.Close()
		}
	}
	if d.Record == nil {
		return live.Evidence{}, nil
	}
	return d.Record.Evidence(ctx, nonces)
}
