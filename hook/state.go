package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/internal/durable"
)

// state is what a handler remembers of one agent between calls. It lives
// in a per-user folder (see [StateDirFor]), not in the root: a hook must
// keep its promises (rate limits, one block per message, one injection
// per turn) even when the root cannot be written, and failing to record a
// decision never makes a hook speak more.
type state struct {
	Root         string    `json:"root"`       // the root this state is of, for a person reading it
	LastSeen     time.Time `json:"last_seen"`  // the last hook call, of any event
	LastEvent    Event     `json:"last_event"` // its event
	LastPostTool time.Time `json:"last_post_tool"`
	StopBlocks   int       `json:"stop_blocks"`             // consecutive stops blocked
	StopBlocked  []string  `json:"stop_blocked"`            // ids the last block named
	TurnShown    []string  `json:"turn_shown,omitempty"`    // ids shown to the agent in this turn
	Reminded     []string  `json:"reminded,omitempty"`      // ids a reminder or doorbell named in this session
	LastMCP      time.Time `json:"last_mcp,omitzero"`       // the last MCP tool call
	LastMCPTool  string    `json:"last_mcp_tool,omitempty"` // its tool
}

// StateEnv names the variable that, when set, is the folder for hook state
// instead of the per-user default.
const StateEnv = "MAILFS_STATE_DIR"

// StateDirFor returns the folder where the hook state of the town at root
// is kept: $MAILFS_STATE_DIR, else $XDG_STATE_HOME/mailfs, else
// ~/.local/state/mailfs, then hooks/<project>-<hash of the root's path>.
// getenv reads the environment (os.Getenv).
func StateDirFor(root string, getenv func(string) string) (string, error) {
	base := getenv(StateEnv)
	if base == "" {
		if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
			base = filepath.Join(x, "mailfs")
		} else if home := getenv("HOME"); home != "" {
			base = filepath.Join(home, ".local", "state", "mailfs")
		} else {
			return "", errors.New("hook: no folder for hook state: set $HOME, $XDG_STATE_HOME or $" + StateEnv)
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	sum := sha256.Sum256([]byte(abs))
	project := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(filepath.Dir(abs)))
	return filepath.Join(base, "hooks", project+"-"+hex.EncodeToString(sum[:6])), nil
}

// stateDir returns the handler's state folder.
// The folder is worked out once a Handler (the root's real path, hashed):
// a prompt hook opens it for each update.
func (h *Handler) stateDir() (string, error) {
	if h.StateDir != "" {
		return h.StateDir, nil
	}
	h.dirOnce.Do(func() { h.dir, h.dirErr = StateDirFor(h.Store.Dir(), os.Getenv) })
	return h.dir, h.dirErr
}

// update reads agent's state under the state folder's lock, lets f change
// it, and writes it back if f says so, before the lock is released: two
// hooks running at once decide one after the other. The error is the
// state's: f's decision stands only when update returns nil.
func (h *Handler) update(agent string, f func(st *state) (save bool)) error {
	path, err := h.stateDir()
	if err != nil {
		return err
	}
	root, err := chipset.OpenOther(path)
	if errors.Is(err, fs.ErrNotExist) { // the first call: make the folder
		if err := os.MkdirAll(path, 0o700); err != nil {
			return fmt.Errorf("hook: state: %w", err)
		}
		root, err = chipset.OpenOther(path)
	}
	if err != nil {
		return fmt.Errorf("hook: state: %w", err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := readState(d, agent)
	if err != nil {
		return err
	}
	if !f(&st) {
		return nil
	}
	st.Root = h.Store.Dir()
	// Advisory, and rewritten by every hook call: atomic, not fsynced.
	return d.ReplaceEphemeral(agent+".json", append(encodeState(st), '\n'))
}

// readState reads agent's state from d; a missing file is a fresh state, a
// damaged one is started afresh (and said).
func readState(d *durable.Dir, agent string) (state, error) {
	var st state
	data, _, err := d.ReadFile(agent+".json", 1<<16)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, nil
	case err != nil:
		return st, err
	}
	st, ok := decodeState(data)
	if !ok {
		return state{}, nil // a torn or hand-edited file: start afresh
	}
	return st, nil
}

// decodeState reads a state file: false for anything but a JSON object
// whose known keys hold values of their types (null is the zero value).
func decodeState(data []byte) (state, bool) {
	var st state
	if json.Unmarshal(data, &st) != nil {
		return state{}, false
	}
	return st, true
}

// encodeState is st as the state file holds it: encoding/json's, "<"
// and "&" as they are.
func encodeState(st state) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(st) // strings, times and a number always encode
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// peek reads agent's state without the lock, for reports.
func (h *Handler) peek(agent string) (state, error) {
	path, err := h.stateDir()
	if err != nil {
		return state{}, err
	}
	root, err := chipset.OpenOther(path)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, err
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return state{}, err
	}
	defer d.Close()
	return readState(d, agent)
}

// Claim is a deliverer's half of the rule that a message is named once
// in a turn, whoever names it first: the hooks (a prompt's note, a
// post-tool hook's urgent news, a stop's block) or a live doorbell. It is
// decided under the same lock as the hooks' own decisions. Of fresh (mail
// no doorbell named yet), those already shown in this turn are dropped;
// again (mail the deliverer's own doorbells named before) is kept
// whatever the turn showed. What is kept (named) is recorded as shown in
// this turn, so the post-tool and stop hooks do not show it again, and as
// named in the session, so the next prompt counts it among the mail named
// earlier (see [Reminder.Earlier]). release undoes what the claim
// recorded, for a doorbell that could not be written. On an error the
// state could not be read or written: named is all of fresh and again
// (the hooks, without a record, say nothing of their own).
func (h *Handler) Claim(agent string, fresh, again []string) (named []string, release func() error, err error) {
	var turn, session []string // what this claim added
	release = func() error {
		if len(turn) == 0 && len(session) == 0 {
			return nil
		}
		return h.update(agent, func(st *state) bool {
			st.TurnShown = slices.DeleteFunc(st.TurnShown, func(id string) bool { return slices.Contains(turn, id) })
			st.Reminded = slices.DeleteFunc(st.Reminded, func(id string) bool { return slices.Contains(session, id) })
			return true
		})
	}
	err = h.update(agent, func(st *state) bool {
		named = nil
		for _, id := range fresh {
			if !slices.Contains(st.TurnShown, id) {
				named = append(named, id)
			}
		}
		named = append(named, again...)
		turn, session = nil, nil
		for _, id := range named {
			if !slices.Contains(st.TurnShown, id) {
				turn = append(turn, id)
			}
			if !slices.Contains(st.Reminded, id) {
				session = append(session, id)
			}
		}
		st.shown(named...)
		st.reminded(named...)
		return len(turn) > 0 || len(session) > 0
	})
	if err != nil {
		turn, session = nil, nil
		return append(slices.Clone(fresh), again...), release, err
	}
	return named, release, nil
}

// maxTurnShown bounds the ids a turn remembers as shown. A session fed
// only doorbells never starts a new turn (a doorbell's prompt continues
// the turn), so without a bound the list would grow with every message
// the session is ever shown — past the state file's size limit, after
// which no hook could read its state. Past it the oldest are forgotten: at
// worst a post-tool or stop hook names an old unread message again, a
// repeat, never a loss.
const maxTurnShown = 512

// shown adds ids to those shown in this turn, the oldest forgotten past
// maxTurnShown, and reports whether anything changed.
func (st *state) shown(ids ...string) bool {
	changed := false
	for _, id := range ids {
		if !slices.Contains(st.TurnShown, id) {
			st.TurnShown = append(st.TurnShown, id)
			changed = true
		}
	}
	if n := len(st.TurnShown) - maxTurnShown; n > 0 {
		st.TurnShown = slices.Delete(st.TurnShown, 0, n)
	}
	return changed
}

// maxReminded and maxRemindedBytes bound the ids a session remembers as
// named: the state file is read whole, up to 64 KiB, beside the turn's
// ids. Past them the oldest are forgotten: a backlog of more unread mail
// than that is listed (five a tier, the rest counted) at every prompt, as
// before sessions remembered anything — a repeat, never a loss.
const (
	maxReminded      = 256
	maxRemindedBytes = 12 << 10
)

// reminded adds ids to those named in this session, the oldest forgotten
// past the bounds, and reports whether anything changed.
func (st *state) reminded(ids ...string) bool {
	changed := false
	for _, id := range ids {
		if !slices.Contains(st.Reminded, id) {
			st.Reminded = append(st.Reminded, id)
			changed = true
		}
	}
	size := 0
	for _, id := range st.Reminded {
		size += len(id) + 3 // quotes and a comma
	}
	for len(st.Reminded) > maxReminded || size > maxRemindedBytes {
		size -= len(st.Reminded[0]) + 3
		st.Reminded = st.Reminded[1:]
	}
	return changed
}

// forgetRead keeps, of the ids shown in this turn and named in this
// session, those still unread: mail read (or gone) is never shown again,
// so remembering it is only weight.
func (st *state) forgetRead(unread map[string]bool) {
	st.TurnShown = slices.DeleteFunc(st.TurnShown, func(id string) bool { return !unread[id] })
	st.Reminded = slices.DeleteFunc(st.Reminded, func(id string) bool { return !unread[id] })
}
