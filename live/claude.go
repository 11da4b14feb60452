package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mailfs/mailfs/agentrt"
)

// ClaudeDoor rings a Claude Code session (2.1.224 and later) through its
// messaging socket. Every session, "claude -p" included, registers
// <config>/sessions/<pid>.json (messagingSocketPath, peerProtocol 1, status
// busy or idle, procStart) and reads newline-delimited JSON on the socket:
// an auth line with the session's CLAUDE_CODE_MESSAGING_TOKEN, then
// {"type":"user","message":{"role":"user","content":…}}, which the session
// queues as its next input: between two tool calls of a busy turn, or as a
// new turn of an idle session.
//
// Claude Code delivers such a message without asking a person only when
// its sender is a process the session started (a hook or a tool's child)
// or when the session does not bypass permissions; otherwise it holds it
// for review. That is why the deliverer runs as the session's own
// SessionStart hook (async), not as a daemon of its own.
type ClaudeDoor struct {
	Config string  // Claude Code's configuration folder: $CLAUDE_CONFIG_DIR, else ~/.claude
	Proc   Process // the session's process
	Token  string  // $CLAUDE_CODE_MESSAGING_TOKEN, as the session gave it to its hook
	Socket string  // $CLAUDE_CODE_MESSAGING_SOCKET; the registry's path wins when it has one
	// Transcripts is the folder of the session's transcripts (the
	// SessionStart hook input's transcript_path names one); "" finds it
	// in Config/projects.
	Transcripts string

	tr transcripts // what Evidence has read of the transcript
}

// claudeRecord is the part of a session's registry file mailfs reads.
type claudeRecord struct {
	PID          int    `json:"pid"`
	SessionID    string `json:"sessionId"`
	ProcStart    string `json:"procStart"`
	PeerProtocol int    `json:"peerProtocol"`
	Socket       string `json:"messagingSocketPath"`
	Status       string `json:"status"`
	Cwd          string `json:"cwd"`
}

// FindClaude returns the door of the Claude Code session that is pid or
// one of its ancestors: what a hook, or a process a hook started, runs
// under. token and socket are the session's
// CLAUDE_CODE_MESSAGING_TOKEN and CLAUDE_CODE_MESSAGING_SOCKET. A session
// writes its registry file a moment after its SessionStart hooks start,
// so FindClaude looks again every 50 ms until ctx ends.
func FindClaude(ctx context.Context, config string, pid int, token, socket string) (*ClaudeDoor, error) {
	for {
		d, err := findClaude(config, pid, token, socket)
		if err == nil {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func findClaude(config string, pid int, token, socket string) (*ClaudeDoor, error) {
	for _, p := range append([]int{pid}, Ancestors(pid)...) {
		rec, err := readClaude(config, p)
		if err != nil {
			continue
		}
		proc := Process{PID: p, Start: rec.ProcStart}
		if !proc.Alive() {
			continue
		}
		return &ClaudeDoor{Config: config, Proc: proc, Token: token, Socket: socket}, nil
	}
	return nil, fmt.Errorf("%w: no Claude Code session above process %d registers in %s", ErrNoSession, pid, filepath.Join(config, "sessions"))
}

// ErrNoSession is returned by the Find functions when no running session
// of the runtime can be found.
var ErrNoSession = errors.New("live: no running session")

func readClaude(config string, pid int) (*claudeRecord, error) {
	b, err := os.ReadFile(filepath.Join(config, "sessions", strconv.Itoa(pid)+".json"))
	if err != nil {
		return nil, err
	}
	var rec claudeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	if rec.PID != pid {
		return nil, fmt.Errorf("live: %s names pid %d", filepath.Join(config, "sessions", strconv.Itoa(pid)+".json"), rec.PID)
	}
	return &rec, nil
}

// ClaudeStatus is the status (busy, idle) Claude Code's registry gives
// the session of process pid now; "" when it gives none.
func ClaudeStatus(config string, pid int) string {
	rec, err := readClaude(config, pid)
	if err != nil {
		return ""
	}
	return rec.Status
}

// Session re-reads the registry: the session id changes at /clear and
// /resume, the status with each turn.
func (d *ClaudeDoor) Session(context.Context) (Info, error) {
	if !d.Proc.Alive() {
		return Info{}, fmt.Errorf("%w: Claude Code process %d", ErrGone, d.Proc.PID)
	}
	rec, err := readClaude(d.Config, d.Proc.PID)
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("%w: Claude Code process %d no longer registers", ErrGone, d.Proc.PID)
	}
	if err != nil {
		return Info{}, err
	}
	if rec.ProcStart != "" && d.Proc.Start != "" && rec.ProcStart != d.Proc.Start {
		return Info{}, fmt.Errorf("%w: pid %d is another process now", ErrGone, d.Proc.PID)
	}
	sock := rec.Socket
	if sock == "" {
		sock = d.Socket
	}
	return Info{Runtime: string(agentrt.Claude), Process: d.Proc, ID: rec.SessionID, Status: rec.Status, Where: sock}, nil
}

// Ring writes the auth line and the doorbell as a user message.
func (d *ClaudeDoor) Ring(ctx context.Context, text string) error {
	info, err := d.Session(ctx)
	if err != nil {
		return err
	}
	if info.Where == "" {
		return fmt.Errorf("live: Claude Code session %d has no messaging socket (Claude Code 2.1.224 or later has one)", d.Proc.PID)
	}
	// A session that holds or refuses messages from other processes would
	// take the doorbell and never show it to the model: say held, write
	// nothing (a held copy would wait for a person's review while the hooks
	// show the same mail anyway), and look again at the next try.
	cwd := ""
	if rec, err := readClaude(d.Config, d.Proc.PID); err == nil {
		cwd = rec.Cwd
	}
	switch v, f := agentrt.ClaudeInbound(d.Config, cwd); v {
	case "hold":
		return fmt.Errorf("%w: crossSessionInbound is %q in %s", ErrHeld, v, f)
	case "refuse":
		return fmt.Errorf("%w: crossSessionInbound is %q in %s", ErrRefused, v, f)
	}
	var data []byte
	if d.Token != "" {
		data = appendLine(data, map[string]any{"type": "auth", "token": d.Token})
	}
	data = appendLine(data, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
	if err := sendLines(ctx, info.Where, data); err != nil {
		if !d.Proc.Alive() {
			return fmt.Errorf("%w: %v", ErrGone, err)
		}
		return fmt.Errorf("live: ringing Claude Code session %d: %w", d.Proc.PID, err)
	}
	return nil
}

// appendLine appends v as one line of JSON, without HTML escaping.
func appendLine(b []byte, v any) []byte {
	line, err := marshal(v)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return append(b, line...)
}
