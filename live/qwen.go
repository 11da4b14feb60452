package live

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/hook"
)

// QwenDoor rings a Qwen Code session through its published cross-session
// protocol (schema 1, frames 1: bundled with Qwen Code as
// docs/features/cross-session-protocol.md). The session registers
// $QWEN_HOME/sessions/<pid>.json (or <pid>-<8 hex>.json) with ipcPath and
// ipcToken; a connection carries an auth line, then a user frame with a
// fresh msgId, addressed to the record's sessionId (re-read before each
// send: /clear and /resume swap it), which the session queues for its
// next turn.
//
// Token: a deliverer the session started (its SessionStart hook) presents
// the child token QWEN_CODE_MESSAGING_TOKEN and is delivered as the
// session's own process; one started elsewhere presents the record's
// ipcToken, and Qwen Code then holds the doorbell for a person unless the
// user set agents.crossSessionInbound to "accept".
type QwenDoor struct {
	Home  string  // $QWEN_HOME, else ~/.qwen
	File  string  // the record's file name in Home/sessions
	Proc  Process // the session's process, Start as the record writes it
	Token string  // the child token; "" to use the record's ipcToken

	mu     sync.Mutex             // guards what follows
	lastID string                 // the session id last seen (read on after the session ended)
	chats  map[string]*recordFile // the chat records read, by session id
}

// qwenRecord is the part of a Qwen Code registry record mailfs reads.
type qwenRecord struct {
	SchemaVersion int    `json:"schemaVersion"`
	PID           int    `json:"pid"`
	ProcStart     string `json:"procStart"`
	SessionID     string `json:"sessionId"`
	IPCPath       string `json:"ipcPath"`
	IPCToken      string `json:"ipcToken"`
	Kind          string `json:"kind"`
	Cwd           string `json:"cwd"`
}

var qwenName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9]+)(-[0-9a-f]{8})?\.json$`) })

// FindQwen returns the door of the Qwen Code session with this pid, or,
// when pid is 0, of the session that is self or one of its ancestors.
// token is the child token (QWEN_CODE_MESSAGING_TOKEN) when the caller
// runs under the session.
func FindQwen(home string, pid, self int, token string) (*QwenDoor, error) {
	pids := []int{pid}
	if pid == 0 {
		pids = append([]int{self}, Ancestors(self)...)
	} else {
		token = "" // a session named by pid did not start us: its child token is not ours
	}
	entries, _ := os.ReadDir(filepath.Join(home, "sessions"))
	for _, p := range pids {
		for _, e := range entries {
			m := qwenName().FindStringSubmatch(e.Name())
			if m == nil || m[1] != strconv.Itoa(p) {
				continue
			}
			rec, err := readQwen(home, e.Name())
			if err != nil || rec.SchemaVersion > 1 {
				continue
			}
			d := &QwenDoor{Home: home, File: e.Name(), Proc: Process{PID: p}, Token: token}
			if d.alive(rec) {
				d.Proc.Start = rec.ProcStart
				return d, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no Qwen Code session registers in %s for %s", ErrNoSession, filepath.Join(home, "sessions"), pidsText(pids))
}

func pidsText(pids []int) string {
	if len(pids) == 1 {
		return "pid " + strconv.Itoa(pids[0])
	}
	return "this process or its ancestors"
}

func readQwen(home, name string) (*qwenRecord, error) {
	b, err := os.ReadFile(filepath.Join(home, "sessions", name))
	if err != nil {
		return nil, err
	}
	var rec qwenRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	if m := qwenName().FindStringSubmatch(name); m == nil || m[1] != strconv.Itoa(rec.PID) {
		return nil, fmt.Errorf("live: %s names pid %d", name, rec.PID)
	}
	return &rec, nil
}

// alive applies the protocol's liveness rule: the pid runs, with the start
// ticks (and boot id) the record names.
func (d *QwenDoor) alive(rec *qwenRecord) bool {
	if rec.ProcStart == "" {
		return Process{PID: rec.PID}.Alive()
	}
	boot, ticks, ok := strings.Cut(rec.ProcStart, ":")
	if !ok {
		return false
	}
	if b := bootID(); b != "" && boot != b {
		return false
	}
	return Process{PID: rec.PID, Start: ticks}.Alive()
}

// Session re-reads the record.
func (d *QwenDoor) Session(context.Context) (Info, error) {
	rec, err := readQwen(d.Home, d.File)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: Qwen Code process %d no longer registers", ErrGone, d.Proc.PID)
	}
	if err != nil {
		return Info{}, err
	}
	if !d.alive(rec) || d.Proc.Start != "" && rec.ProcStart != d.Proc.Start {
		return Info{}, fmt.Errorf("%w: Qwen Code process %d", ErrGone, d.Proc.PID)
	}
	return Info{Runtime: string(agentrt.Qwen), Process: d.Proc, ID: rec.SessionID, Where: rec.IPCPath}, nil
}

// Ring sends the auth line and a user frame.
func (d *QwenDoor) Ring(ctx context.Context, text string) error {
	rec, err := readQwen(d.Home, d.File)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !d.alive(rec) {
		return fmt.Errorf("%w: Qwen Code process %d", ErrGone, d.Proc.PID)
	}
	if err != nil {
		return err
	}
	if rec.IPCPath == "" {
		return fmt.Errorf("live: Qwen Code session %d has no inbox bound (no ipcPath)", d.Proc.PID)
	}
	// What the session does with the doorbell, by its
	// agents.crossSessionInbound: refuse turns it away, hold parks it for
	// a person; unset delivers only the session's own processes (the
	// child token), and holds an ordinary peer's (the record's token,
	// which asserts no review class). Nothing is written that the model
	// would not be given.
	token := d.Token
	v, f := agentrt.QwenInbound(d.Home, rec.Cwd)
	switch {
	case v == "refuse":
		return fmt.Errorf("%w: agents.crossSessionInbound is %q in %s", ErrRefused, v, f)
	case v == "hold":
		return fmt.Errorf("%w: agents.crossSessionInbound is %q in %s", ErrHeld, v, f)
	case token == "" && v != "accept":
		return fmt.Errorf("%w: Qwen Code holds a peer's message for review unless agents.crossSessionInbound is \"accept\" (or the deliverer runs as the session's own hook)", ErrHeld)
	case token == "":
		token = rec.IPCToken
	}
	var data []byte
	if token != "" {
		data = appendLine(data, map[string]any{"msgV": 1, "type": "auth", "token": token})
	}
	data = appendLine(data, map[string]any{
		"msgV": 1, "msgId": d.msgID(), "type": "user", "fromName": "mailfs",
		"toSessionId": rec.SessionID, "priority": "next",
		"message": map[string]any{"role": "user", "content": text},
	})
	if err := sendLines(ctx, rec.IPCPath, data); err != nil {
		return fmt.Errorf("live: ringing Qwen Code session %d: %w", d.Proc.PID, err)
	}
	return nil
}

// msgID is a fresh message id: the receiver repeats its verdict for an id
// it has seen, so every doorbell needs its own.
func (*QwenDoor) msgID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "mailfs-" + hex.EncodeToString(b)
}

// Evidence reads the session's chat record, which Qwen Code keeps as JSON
// lines in <QWEN_HOME>/projects/<the folder, made a name>/chats/<session
// id>.jsonl, by the evidence rule (see qwenEntry). Each session id (they
// change at /clear and /resume) has its own record: an answer in one
// never confirms a doorbell of another.
//
// Qwen Code queues every peer message for the session's next turn, and
// its registry does not say whether a turn runs: a doorbell not yet in the
// chat record is taken as queued (ringing it again would queue a second
// copy behind the first), until the deliverer forgets it.
func (d *QwenDoor) Evidence(ctx context.Context, nonces []string) (Evidence, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	info, err := d.Session(ctx)
	switch {
	case err == nil && info.ID != "":
		d.lastID = info.ID
	case errors.Is(err, ErrGone) && d.lastID != "":
		err = nil // its last turn may have answered a doorbell: read on
	}
	if d.chats == nil {
		d.chats = map[string]*recordFile{}
	}
	if d.lastID != "" && d.chats[d.lastID] == nil {
		if p := glob1(filepath.Join(d.Home, "projects", "*", "chats", d.lastID+".jsonl")); p != "" {
			d.chats[d.lastID] = &recordFile{growing: growing{path: p}}
		}
	}
	ev := Evidence{Seen: map[string]time.Time{}, Queued: map[string]bool{}}
	for _, f := range d.chats {
		if rerr := f.more(qwenEntry); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = rerr
		}
		got := answered(f.entries, nonces)
		for n, at := range got.Seen {
			ev.Seen[n] = at
		}
	}
	for _, n := range nonces {
		if _, ok := ev.Seen[n]; !ok {
			ev.Queued[n] = true
		}
	}
	return ev, err
}

// qwenEntry reads one line of a Qwen Code chat record (0.24: JSON lines,
// {"type":…,"timestamp":…,"message":{"role":…,"parts":[{"text":…}]}})
// for the evidence rule. A doorbell joins the conversation as a "user"
// line (subtype "notification", the cross_session_message the model is
// sent) when its turn begins, not while it waits in the session's queue;
// an "assistant" line (role "model") is the model's answer. Tool results
// and "system" lines (telemetry, snapshots) are neither.
func qwenEntry(line []byte) (entry, bool) {
	var v struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Message   struct {
			Parts json.RawMessage `json:"parts"`
		} `json:"message"`
	}
	if !strings.Contains(string(line[:min(len(line), 512)]), `"type":"`) || json.Unmarshal(line, &v) != nil {
		return entry{}, false
	}
	switch v.Type {
	case "user":
		return entry{Marks: hook.RingMarks(string(v.Message.Parts)), At: v.Timestamp}, true
	case "assistant":
		return entry{Answer: true, At: v.Timestamp}, true
	}
	return entry{}, false
}

// QwenSessionEnv names the variable a deliverer that detached from Qwen
// Code's hook (see DetachQwenHook) finds its session's pid in.
const QwenSessionEnv = "MAILFS_LIVE_QWEN_SESSION"

// DetachQwenHook starts this program again with args, as a child in a
// process group of its own told its session's pid (QwenSessionEnv), and
// returns once it runs. Qwen Code starts an async hook in a session of its
// own and, as it exits, kills the hook's whole process group with SIGKILL:
// a deliverer left there could neither let go of its lock nor record its
// end, and its lock file stayed behind (runtime/live/<agent>/.qwen-<pid>.lock).
// Detached, the deliverer still ends with its session (it watches the
// session's process), cleanly. The child keeps the hook's environment,
// the session's child token with it, and its standard error.
func DetachQwenHook(door *QwenDoor, args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), QwenSessionEnv+"="+strconv.Itoa(door.Proc.PID))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("live: detaching from Qwen Code's hook: %w", err)
	}
	return cmd.Process.Release()
}
