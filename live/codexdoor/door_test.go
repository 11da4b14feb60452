package codexdoor_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/live/codexdoor"
)

// fakeServer is a stand-in for codex app-server on a Unix socket: one
// thread, idle or running a turn, and a record of the calls that change
// it.
type fakeServer struct {
	mu     sync.Mutex
	active bool
	calls  []map[string]any // turn/start and turn/steer params
}

func (f *fakeServer) serve(t *testing.T, sock string) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			_, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			var req struct {
				ID     *int           `json:"id"`
				Method string         `json:"method"`
				Params map[string]any `json:"params"`
			}
			json.Unmarshal(data, &req)
			if req.ID == nil {
				continue // initialized
			}
			// A notification first, as the server sends them between answers.
			c.Write(r.Context(), websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"thread/status/changed","params":{}}`))
			f.mu.Lock()
			status := "idle"
			if f.active {
				status = "active"
			}
			var result any
			switch req.Method {
			case "initialize":
				result = map[string]any{"codexHome": "/codex-home"}
			case "thread/loaded/list":
				result = map[string]any{"data": []string{"helper", "t1"}}
			case "thread/read":
				id := req.Params["threadId"]
				result = map[string]any{"thread": map[string]any{"id": id, "ephemeral": id == "helper", "createdAt": 1, "status": map[string]any{"type": status}}}
			case "thread/turns/list":
				result = map[string]any{"data": []map[string]any{{"id": "turn-9", "status": "inProgress"}}}
			case "turn/start", "turn/steer":
				f.calls = append(f.calls, map[string]any{"method": req.Method, "params": req.Params})
				result = map[string]any{}
			}
			f.mu.Unlock()
			out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": *req.ID, "result": result})
			if c.Write(r.Context(), websocket.MessageText, out) != nil {
				return
			}
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// The door finds the person's thread (not an ephemeral one), reports it
// idle or busy, starts a turn on an idle thread and steers a running one
// with the running turn's id; its record is the rollouts under the
// server's home.
func TestDoorRingsIdleAndBusy(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "app.sock")
	f := &fakeServer{}
	f.serve(t, sock)
	self, err := live.ProcessOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := &codexdoor.Door{Socket: sock, Proc: self}
	ctx := context.Background()
	info, err := d.Session(ctx)
	if err != nil || info.ID != "t1" || info.Status != "idle" || info.Runtime != "codex" {
		t.Fatalf("Session: %+v %v, want thread t1, idle", info, err)
	}
	if r, ok := d.Record.(*live.CodexRollouts); !ok || r.Dir != "/codex-home/sessions" {
		t.Fatalf("Record %#v, want the rollouts under the server's home", d.Record)
	}
	if err := d.Ring(ctx, "bell 1"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.active = true
	f.mu.Unlock()
	if info, _ := d.Session(ctx); info.Status != "busy" {
		t.Fatalf("Session of a running turn: %+v, want busy", info)
	}
	if err := d.Ring(ctx, "bell 2"); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.calls)
	want := `[{"method":"turn/start","params":{"input":[{"text":"bell 1","type":"text"}],"threadId":"t1"}},` +
		`{"method":"turn/steer","params":{"expectedTurnId":"turn-9","input":[{"text":"bell 2","type":"text"}],"threadId":"t1"}}]`
	if string(got) != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", got, want)
	}
}
