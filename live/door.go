package live

import (
	"context"
	"errors"
	"net"
	"time"
)

// A Door is the way into one running agent session: its socket, its
// protocol, its terminal. Each runtime has one (see [ClaudeDoor],
// [QwenDoor], [TmuxDoor]).
type Door interface {
	// Ring pushes text into the session as its next input. It returns an
	// error wrapping [ErrGone] when the session has ended, [ErrHeld]
	// when the session took the text but will not show it to the agent
	// yet, and any other error when the push failed and may be tried
	// again.
	Ring(ctx context.Context, text string) error

	// Session says whether the session still runs, and what it is now
	// (its id changes at /clear and /resume). It returns an error wrapping
	// [ErrGone] when it has ended.
	Session(ctx context.Context) (Info, error)
}

// Info is what a door knows of its session.
type Info struct {
	Runtime string  `json:"runtime"`          // claude, qwen, tmux, …
	Process Process `json:"process"`          // the session's process
	ID      string  `json:"session_id"`       // the runtime's session id, "" if it has none
	Status  string  `json:"status,omitempty"` // busy or idle, where the runtime says
	Where   string  `json:"where,omitempty"`  // the socket or pane
}

// Errors a door returns.
var (
	// ErrGone: the session has ended; nothing will reach it again.
	ErrGone = errors.New("live: the session has ended")
	// ErrHeld: the session would take the doorbell but hold it for a
	// person to review.
	ErrHeld = errors.New("live: the session holds the doorbell for review")
	// ErrRefused: the session refuses messages from other processes.
	ErrRefused = errors.New("live: the session refuses messages from other processes")
)

// A Confirmer is a door that can read, in the runtime's own records of
// the session, which doorbells became the model's input: the evidence
// "delivered" is said on. Claude Code's transcript is one (see
// [ClaudeDoor]). Doors that have none rely on the session's prompt hook
// (see [Confirm]).
type Confirmer interface {
	// Evidence reports, of nonces (see hook.RingMark), those the runtime
	// made the model's input, with when they were seen, and those it
	// shows only queued (taken, waiting for the model's next request).
	Evidence(ctx context.Context, nonces []string) (Evidence, error)
}

// Evidence is what a Confirmer found.
type Evidence struct {
	Seen   map[string]time.Time // nonce -> when evidence of it was found
	Queued map[string]bool      // nonce -> the runtime holds it queued
}

// dialTimeout bounds connecting and writing to a session's socket.
const dialTimeout = 2 * time.Second

// sendLines connects to the Unix socket at path, writes data, half-closes
// and closes: the exchange both Claude Code's and Qwen Code's inboxes
// expect (one message per connection).
func sendLines(ctx context.Context, path string, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := c.Write(data); err != nil {
		return err
	}
	if uc, ok := c.(*net.UnixConn); ok {
		return uc.CloseWrite()
	}
	return nil
}
