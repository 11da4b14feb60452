package hook

import (
	"errors"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/internal/chipset"
	"github.com/mailfs/mailfs/maildir"
)

// LiveDir is the folder, below the root, of live delivery's records, one
// folder per agent (package live's Dir): where the evidence a prompt hook
// leaves for a deliverer goes.
const LiveDir = "runtime/live"

// SeenSuffix names the evidence files a session's hooks leave in the
// agent's record folder, runtime/live/<agent>/<nonce>.seen: one per
// doorbell the hook saw in a prompt, holding when (RFC 3339, UTC, and a
// newline), for the deliverer to take as evidence and remove.
const SeenSuffix = ".seen"

// Confirm records that a session of agent took in the doorbells with these
// nonces (see [RingNonces]): its prompt hook saw them in the prompt the
// runtime is about to send to the model, or its plugin in what it sent
// ("mailfs live seen"). Where no deliverer of agent has ever run (no
// record folder) nothing waits for the evidence and nothing is written.
// Nonces that are not a RingMark's are ignored.
//
// It is what a [Handler]'s Doorbells is set to by the programs that
// answer hooks; the slim per-turn binary calls it without linking live.
func Confirm(s *maildir.Store, agent string, nonces []string) error {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return err
	}
	root, err := chipset.New(s.Dir())
	if err != nil {
		return err
	}
	defer root.Close()
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
		if err := d.ReplaceEphemeral(n+SeenSuffix, now); err != nil {
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
