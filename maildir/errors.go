package maildir

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mailfs/mailfs/internal/chipset"
)

var (
	// ErrInvalidAddress is returned, wrapped with the address and the
	// reason, for an agent name that SPEC §2 refuses. Nothing has been
	// written when it is returned.
	ErrInvalidAddress = errors.New("maildir: invalid agent name")

	// ErrInvalidName is returned, wrapped with the name and the reason, for
	// a group, queue or channel name that does not follow the rules of
	// agent ids. Nothing has been written when it is returned.
	ErrInvalidName = errors.New("maildir: invalid name")

	// ErrWrongKind is returned for an address of the wrong kind for the
	// operation: a group where a folder of messages is needed, a claim from
	// something that is not a queue, a reply from a queue.
	ErrWrongKind = errors.New("maildir: wrong kind of address")

	// ErrNoQueue is returned for a work queue that does not exist: queues
	// are created with [Store.CreateQueue] before mail is sent to them.
	ErrNoQueue = errors.New("maildir: no such queue")

	// ErrNoChannel is returned for a channel that does not exist: channels
	// are created with [Store.CreateChannel].
	ErrNoChannel = errors.New("maildir: no such channel")

	// ErrNoRecipients is returned by [Store.Send] when the addresses expand
	// to nobody (a group whose only member is the sender, @all with no
	// mailboxes). Nothing has been written.
	ErrNoRecipients = errors.New("maildir: nobody to deliver to")

	// ErrNameTaken is returned when a group, queue or channel would take a
	// name that an agent's mailbox, or another group, queue or channel,
	// already has: a bare name must keep meaning one thing.
	ErrNameTaken = errors.New("maildir: name already in use")

	// ErrInvalidID is returned for a message id that cannot name a file in a
	// mailbox (empty, starting with ".", containing "/" or NUL).
	ErrInvalidID = errors.New("maildir: invalid message id")

	// ErrNotFound is returned by the methods that take a message id when no
	// message matches it.
	ErrNotFound = errors.New("maildir: message not found")

	// ErrAmbiguous is matched by an [*AmbiguousError]: an id prefix that
	// matches more than one message.
	ErrAmbiguous = errors.New("maildir: ambiguous message id")

	// ErrTooLarge is returned by [Store.Send] for a message whose file would
	// exceed [MaxSize], and reported by readers for such a file.
	ErrTooLarge = errors.New("maildir: message too large")

	// ErrInvalidMessage is returned by [Store.Send] for a message that
	// cannot be written (bad priority, multi-line subject, invalid UTF-8,
	// missing sender) and reported by readers for a file that is not a
	// message (not one JSON object, duplicate keys, wrong types).
	ErrInvalidMessage = errors.New("maildir: invalid message")
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

// ErrNewerFormat and ErrDamagedFormat are returned (wrapped) by every
// write to a root whose format record is newer than this mailfs writes,
// or is not a record: nothing is written. Reading goes on.
var (
	ErrNewerFormat   = chipset.ErrNewerFormat
	ErrDamagedFormat = chipset.ErrDamagedFormat
)
