package live

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/mailfs/mailfs/agentrt"
)

// CodexDoor rings a Codex session through its app server (codex
// app-server), as a second client beside the session's TUI (codex
// --remote), with nothing typed into a terminal: an idle thread gets a
// new turn (turn/start), a running turn is steered (turn/steer: Codex
// gives the model the doorbell at its next request in the same turn).
// [RunCodex] starts the three together.
//
// It speaks the app server's JSON-RPC over its Unix socket (a WebSocket),
// one connection per call. Its evidence (a Confirmer) is Codex's
// rollout of the thread (see [CodexRollouts]), under the home the app
// server reports.
type CodexDoor struct {
	Socket string  // the app server's Unix socket
	Proc   Process // the TUI's process: the session ends with it
	// Record reads Codex's rollouts; nil until the first call learns the
	// server's home.
	Record Confirmer
	// Since is when the session started: rollouts older are not read.
	Since time.Time
}

// codexRPCTimeout bounds one exchange with the app server.
const codexRPCTimeout = 5 * time.Second

// codexConn is one JSON-RPC connection to a Codex app server.
type codexConn struct {
	conn net.Conn
	ws   *wsConn
	next int
}

// dialCodex connects to the app server at sock and initializes the
// connection; it returns the server's home (codexHome) too.
func dialCodex(ctx context.Context, sock string) (*codexConn, string, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, "", fmt.Errorf("live: codex app server %s: %w", sock, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	w, err := wsHandshake(conn, "localhost", "/")
	if err != nil {
		conn.Close()
		return nil, "", fmt.Errorf("live: codex app server %s: %w", sock, err)
	}
	c := &codexConn{conn: conn, ws: w}
	var init struct {
		CodexHome string `json:"codexHome"`
	}
	if err := c.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "mailfs", "version": "live"}}, &init); err != nil {
		conn.Close()
		return nil, "", err
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		conn.Close()
		return nil, "", err
	}
	return c, init.CodexHome, nil
}

func (c *codexConn) Close() error { return c.conn.Close() }

func (c *codexConn) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return c.ws.WriteText(b)
}

// call sends a request and reads until its answer, passing over the
// server's notifications; result, if not nil, takes the answer's result.
func (c *codexConn) call(method string, params, result any) error {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return err
	}
	for {
		data, err := c.ws.ReadMessage()
		if err != nil {
			return fmt.Errorf("live: codex app server: %s: %w", method, err)
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
			return fmt.Errorf("live: codex app server: %s: %s (%d)", method, msg.Error.Message, msg.Error.Code)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(msg.Result, result)
	}
}

// codexThread is what the door reads of a thread.
type codexThread struct {
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
func (c *codexConn) thread() (codexThread, error) {
	var list struct {
		Data []string `json:"data"`
	}
	if err := c.call("thread/loaded/list", map[string]any{}, &list); err != nil {
		return codexThread{}, err
	}
	var best codexThread
	for _, id := range list.Data {
		var r struct {
			Thread codexThread `json:"thread"`
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
		return best, errors.New("live: the Codex session has no thread yet")
	}
	return best, nil
}

// open connects and learns the server's home, for the Record.
func (d *CodexDoor) open(ctx context.Context) (*codexConn, error) {
	c, home, err := dialCodex(ctx, d.Socket)
	if err != nil {
		return nil, err
	}
	if d.Record == nil && home != "" {
		d.Record = &CodexRollouts{Dir: filepath.Join(home, "sessions"), Since: d.Since}
	}
	return c, nil
}

// Session reports the session: gone when its TUI is; busy while its
// thread runs a turn.
func (d *CodexDoor) Session(ctx context.Context) (Info, error) {
	if !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: codex (pid %d)", ErrGone, d.Proc.PID)
	}
	info := Info{Runtime: string(agentrt.Codex), Process: d.Proc, Where: d.Socket}
	ctx, cancel := context.WithTimeout(ctx, codexRPCTimeout)
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
func (d *CodexDoor) Ring(ctx context.Context, text string) error {
	if !d.Proc.Alive() {
		return fmt.Errorf("%w: codex (pid %d)", ErrGone, d.Proc.PID)
	}
	ctx, cancel := context.WithTimeout(ctx, codexRPCTimeout)
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
			return errors.New("live: no Codex turn is running")
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

// Evidence reads Codex's rollouts (see CodexRollouts).
func (d *CodexDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	if d.Record == nil {
		if c, err := d.open(ctx); err == nil {
			c.Close()
		}
	}
	if d.Record == nil {
		return Evidence{}, nil
	}
	return d.Record.Evidence(ctx, nonces)
}
