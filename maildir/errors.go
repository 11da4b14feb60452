package maildir

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrInvalidAddress is returned, wrapped with the address and the
	// reason, for an agent name that SPEC §2 refuses. Nothing has been
	// written when it is returned.
	ErrInvalidAddress = errors.New("invalid agent name")

	// ErrInvalidID is returned for a message id that cannot name a file in a
	// mailbox (empty, starting with ".", containing "/" or NUL).
	ErrInvalidID = errors.New("invalid message id")

	// ErrNotFound is returned by the methods that take a message id when no
	// message matches it.
	ErrNotFound = errors.New("message not found")

	// ErrAmbiguous is matched by an [*AmbiguousError]: an id prefix that
	// matches more than one message.
	ErrAmbiguous = errors.New("ambiguous message id")

	// ErrTooLarge is returned by [Store.Send] for a message whose file would
	// exceed [MaxSize], and reported by readers for such a file.
	ErrTooLarge = errors.New("message too large")

	// ErrInvalidMessage is returned by [Store.Send] for a message that
	// cannot be written (bad priority, multi-line subject, invalid UTF-8,
	// missing sender) and reported by readers for a file that is not a
	// message (not one JSON object, duplicate keys, wrong types).
	ErrInvalidMessage = errors.New("invalid message")
)

// An AmbiguousError reports an id prefix that matches several messages.
type AmbiguousError struct {
	ID         string   // the prefix given
	Candidates []string // the ids it matches, sorted
}

func (e *AmbiguousError) Error() string {
	const show = 5
	c := e.Candidates
	more := ""
	if len(c) > show {
		more = fmt.Sprintf(" and %d more", len(c)-show)
		c = c[:show]
	}
	return fmt.Sprintf("%v %q matches %s%s", ErrAmbiguous, e.ID, strings.Join(c, ", "), more)
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// A SkipError reports a file in a mailbox that a reader skipped and left
// where it is. Readers hand these to [Store.Warn] and go on.
type SkipError struct {
	Path string // relative to the root, with "/" separators
	Err  error  // why: ErrInvalidMessage, ErrTooLarge, durable.ErrNotRegular, …
}

func (e *SkipError) Error() string { return "skipping " + e.Path + ": " + e.Err.Error() }

func (e *SkipError) Unwrap() error { return e.Err }
