package hook

import (
	"errors"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// LiveDir is the folder, below the root, of live delivery's records, one
// folder per agent (package live's Dir): where the evidence a prompt hook
// leaves for a deliverer goes.
const LiveDir = "runtime/live"

// The evidence files a session's side leaves in the agent's record
// folder, runtime/live/<agent>/<nonce><suffix>, holding when (RFC 3339,
// UTC, and a newline), for the deliverer to take in and remove with the
// bell:
//
//   - SubmittedSuffix: the session took the doorbell in as input (its
//     prompt hook saw the ring mark): submitted, not yet answered
//     ([Confirm]);
//   - AnsweredSuffix: a runtime's plugin saw the model answer a turn whose
//     input held the ring mark: delivered ([Answered]);
//   - SeenSuffix: what earlier releases' hooks left; read as submitted.
const (
	SubmittedSuffix = ".submitted"
	AnsweredSuffix  = ".answered"
	SeenSuffix      = ".seen"
)

// Confirm records that a session of agent took in the doorbells with these
// nonces (see [RingNonces]) as input: its prompt hook saw them in the
// prompt the runtime is about to send to the model, or its plugin in what
// it sent ("mailfs live seen"). That is "submitted", not "delivered": the
// model may never be called (an endpoint down, a session killed first).
// Where no deliverer of agent has ever run (no record folder) nothing
// waits for the evidence and nothing is written. Nonces that are not a
// RingMark's are ignored.
//
// It is what a [Handler]'s Doorbells is set to by the programs that
// answer hooks; the slim per-turn binary calls it without linking live.
func Confirm(s *maildir.Store, agent string, nonces []string) error {
	return leave(s, agent, nonces, SubmittedSuffix)
}

// Answered records that the model of a session of agent produced output
// for a turn whose input held the doorbells with these nonces, as a
// runtime's own plugin saw it (the model's reply to the turn, not the
// prompt): the evidence "delivered" is said on ("mailfs live seen
// --answered"). It writes as [Confirm] does.
func Answered(s *maildir.Store, agent string, nonces []string) error {
	return leave(s, agent, nonces, AnsweredSuffix)
}

// leave writes <nonce><suffix> for each nonce into agent's record folder.
func leave(s *maildir.Store, agent string, nonces []string, suffix string) error {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return err
	}
	root := s.Root()
	d, err := root.Dir(LiveDir + "/" + agent)
	if d == nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer d.Close()
	now := []byte(time.Now().UTC().Format(time.RFC3339Nano) + "\n")
	for _, n := range nonces {
		if !ValidNonce(n) {
			continue
		}
		if err := d.ReplaceEphemeral(n+suffix, now); err != nil {
			return err
		}
	}
	return nil
}

// NonceLen is the length of a RingMark's nonce, in hex digits (64 random
// bits).
const NonceLen = 16

// ValidNonce reports whether n could be a RingMark's nonce: a file name
// made of it stays inside the record folder.
func ValidNonce(n string) bool {
	if len(n) != NonceLen {
		return false
	}
	for _, c := range n {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
