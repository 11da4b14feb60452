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
	Session() (Info, error)
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
	// ErrHeld: the session took the doorbell but holds it for a person to
	// review, or refuses messages from other processes.
	ErrHeld = errors.New("live: the session holds the doorbell for review")
)

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
