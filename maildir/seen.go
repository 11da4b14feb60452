package maildir

import (
	"errors"
	"fmt"
	"time"
)

// A Seen is what a caller saw of a claimed item when it chose to act on
// it: [Store.ReleaseSeen] and [Store.ReassignSeen] act only while the item
// is still so. An action chosen on a page or a listing that went stale
// meanwhile must not undo what happened since: a release of an item its
// claimant finished would hand the finished work out again.
type Seen struct {
	// At is the claim's time the caller saw; zero accepts any claim. Any
	// other time means the item was released and claimed again since.
	At time.Time
	// Done allows acting on an item its claimant marked done (read),
	// which is refused otherwise.
	Done bool
}

// acceptsAll reports whether seen accepts every claimed item.
func (seen Seen) acceptsAll() bool { return seen.Done && seen.At.IsZero() }

// check returns a [*StaleError] when the claimed item m is not as seen.
func (seen Seen) check(m *Message) error {
	if m.Claim == nil {
		return nil // the caller says what an unclaimed item is
	}
	e := &StaleError{Item: m.ID, Subject: m.Subject, Agent: m.Claim.Agent, At: m.Claim.At}
	switch {
	case m.Read && !seen.Done:
		e.Done = true
	case !seen.At.IsZero() && !seen.At.Equal(m.Claim.At):
		e.Seen = seen.At
	default:
		return nil
	}
	return e
}

// ErrStale is matched by a [*StaleError].
var ErrStale = errors.New("maildir: the claimed item changed since it was seen")

// A StaleError is returned by [Store.ReleaseSeen] and [Store.ReassignSeen]
// for an item that is no longer as its caller saw it. Nothing was changed.
type StaleError struct {
	Item, Subject string
	Agent         string    // its claimant
	Done          bool      // the claimant marked it done (read)
	At            time.Time // the claim's time now
	Seen          time.Time // the claim's time as seen, when the item was claimed again
}

func (e *StaleError) Error() string {
	if e.Done {
		return fmt.Sprintf("%v: %s marked %s done (read)", ErrStale, e.Agent, e.Item)
	}
	return fmt.Sprintf("%v: %s claimed %s again at %s (seen claimed at %s)", ErrStale, e.Agent, e.Item,
		e.At.UTC().Format(time.RFC3339), e.Seen.UTC().Format(time.RFC3339))
}

func (e *StaleError) Is(target error) bool { return target == ErrStale }
