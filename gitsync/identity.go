package gitsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// A host name is held by one machine: the first whose sync pushed
// state/hosts/<name>.json, which records the random identity that machine
// keeps in runtime/host-id (never committed). A second machine given the
// same name (a copied root with a fresh runtime/, a slip) would act as
// the home of the same objects — one queue item claimed on both — so its
// sync refuses, changing nothing, until it picks another name or, when
// the first machine is gone for good, takes the name over
// ([Syncer.TakeOver]).

// ErrHostTaken is matched by a [*HostTakenError].
var ErrHostTaken = errors.New("gitsync: this host's name is held by another machine")

// A HostTakenError is a sync refused because the remote records another
// machine under this host's name.
type HostTakenError struct {
	Host, Holder string    // the name; the identity the remote records for it
	Since        time.Time // when the holder first synced under it
}

func (e *HostTakenError) Error() string {
	return fmt.Sprintf("host name %s is held by another machine (identity %.8s, since %s), and two machines with one name would both act as the home of its objects; nothing was changed",
		e.Host, e.Holder, e.Since.UTC().Format(time.DateOnly))
}

// Is makes a HostTakenError match ErrHostTaken.
func (e *HostTakenError) Is(target error) bool { return target == ErrHostTaken }

// HostsDir holds each host's record: state/hosts/<name>.json, committed,
// written once by that host's first sync.
const HostsDir = "state/hosts"

// identityFile keeps this machine's identity, beside runtime/host.
const identityFile = "runtime/host-id"

type hostRecord struct {
	ID    string    `json:"id"`
	Since time.Time `json:"since"`
}

// NewIdentity gives this machine a new random identity (mailfs host NAME
// does, when the name changes): the next sync records it under the name,
// or is refused if another machine holds the name.
func NewIdentity(s *maildir.Store) error {
	_, err := identity(s, true)
	return err
}

// identity returns this machine's identity, made (random) when it has
// none or renew is set.
func identity(s *maildir.Store, renew bool) (string, error) {
	sy := &Syncer{Store: s}
	d, done, err := sy.folder(path.Dir(identityFile), true)
	if err != nil {
		return "", err
	}
	defer done()
	if !renew {
		data, _, err := d.ReadFile(path.Base(identityFile), 256)
		if id := strings.TrimSpace(string(data)); err == nil && id != "" {
			return id, nil
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	id := hex.EncodeToString(b)
	return id, d.Replace(path.Base(identityFile), []byte(id+"\n"))
}

// claimName checks this machine's identity against the record the remote
// (theirs) holds for the host's name, and writes this machine's record
// into the tree where the remote has none (or, taking over, another).
// One git exec when something arrived (theirs is not head), none
// otherwise once the record is in place; the record's file is written
// only at the name's first sync.
func (s *Syncer) claimName(ctx context.Context, g *git, host, theirs, head string) error {
	id, err := identity(s.Store, false)
	if err != nil {
		return err
	}
	rec := HostsDir + "/" + host + ".json"
	d, done, err := s.folder(HostsDir, true)
	if err != nil {
		return err
	}
	defer done()
	name := host + ".json"
	data, _, err := d.ReadFile(name, 1<<12)
	var local hostRecord
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		_ = json.Unmarshal(data, &local) // a file made by hand: replaced below
	}
	var remote hostRecord
	if theirs != "" && (theirs != head || local.ID != id || s.TakeOver) {
		out, err := g.run(ctx, "cat-file", "-p", theirs+":"+rec)
		var ge *GitError
		switch {
		case errors.As(err, &ge):
			// none there
		case err != nil:
			return err
		default:
			if err := json.Unmarshal([]byte(out), &remote); err != nil {
				return fmt.Errorf("gitsync: %s on the remote: %w", rec, err)
			}
		}
	}
	if remote.ID != "" && remote.ID != id && !s.TakeOver {
		if local.ID == id {
			// This machine's record, never pushed: gone, so that another
			// name starts clean.
			if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return &HostTakenError{Host: host, Holder: remote.ID, Since: remote.Since}
	}
	if local.ID == id && (remote.ID == id || remote.ID == "") {
		return nil // (remote.ID "" when nothing arrived: head holds this record, or will)
	}
	if remote.ID == id {
		return nil // the landing brings it
	}
	out, err := json.Marshal(hostRecord{ID: id, Since: s.now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if s.TakeOver && remote.ID != "" {
		s.warnf("took over the host name %s from the machine of identity %.8s", host, remote.ID)
	}
	return d.Replace(name, append(out, '\n'))
}
