package live

import (
	"context"
	"errors"
	"net"
	"time"
)

// A Door is the way into one running agent session: its socket, its
// protocol, its terminal. Each runtime has one (see [ClaudeDoor],
// [QwenDoor], [TmuxDoor], [PipeDoor]).
//
// The errors a door returns are the whole of what the deliverer acts on,
// each its own way (matched with errors.Is, so a door wraps them with
// what it saw):
//
//   - [ErrGone] (Ring or Session): the session has ended. The deliverer
//     takes in the evidence left, marks its record ended (its receipts
//     final) and returns.
//   - [ErrHeld] (Ring): the session would hold the doorbell for a
//     person's review. Nothing was written; the doorbell's mail is held,
//     "held by the session", and tried again after a backoff.
//   - [ErrRefused] (Ring): the session refuses other processes'
//     messages. Nothing was written; the mail is "refused by the
//     session", tried again after a backoff (the setting may change), so
//     the receipt is refused, final only once the session ends.
//   - [ErrBusy] (Ring): a person is typing where the doorbell would go.
//     Nothing was written; the mail is held, "a person is typing", and
//     tried again after a backoff.
//   - any other error (Ring): the push failed, and may be tried again:
//     held, "retrying", after a backoff (1 s doubling to 30 s). Session:
//     the deliverer warns and looks again at the next check.
//
// A nil error from Ring means the session took the bytes: the doorbell is
// "rung", and only the evidence (see [Confirmer], [Confirm]) advances it.
type Door interface {
	// Ring pushes text into the session as its next input, or returns
	// one of the errors above.
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
// the session, what became of its doorbells. The evidence rule, one for
// every door (docs/live-delivery.md): a doorbell is delivered only when
// the runtime's own record shows the model produced output (an
// assistant/model event) for a turn whose input held the ring mark; the
// mark seen in the session's input (a prompt hook, a user line, a queued
// prompt, a paste) is submitted, never delivered. Claude Code's
// transcript is one such record (see [ClaudeDoor]). A door with none has
// "submitted" as its strongest answer, through the session's prompt hook
// (see [Confirm]).
type Confirmer interface {
	// Evidence reports, of nonces (see hook.RingMark), those the model
	// answered (Seen) and those the session took in that it has not
	// answered yet (Queued).
	Evidence(ctx context.Context, nonces []string) (Evidence, error)
}

// Evidence is what a Confirmer found. A nonce is in one map at most.
type Evidence struct {
	// Seen: nonce -> when the runtime's record showed the model produced
	// output for a turn whose input held it: "delivered".
	Seen map[string]time.Time
	// Queued: nonce -> the session took it in (queued it, or made it a
	// turn's input) and the model has not answered it yet: "submitted",
	// not rung again.
	Queued map[string]bool
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
