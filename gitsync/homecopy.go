package gitsync

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
)

// homesVersions returns the paths that this host and the remote both
// added (against a base that lacks them) to an object homed on another
// host, where this host's file is the message as it was sent and the
// remote's the same message as its home changed it since (see
// homesVersion). That is no second message that took the same name but
// one message: a send whose sync pushed it and was stopped before it
// recorded that, then a squash of the remote, leaves it so. The home's
// version stands (see settle), never a second, unread copy beside it.
// Where this host is the home the adds are left to settle's rename: its
// file may be an older copy's (a root restored from a backup), which
// must not undo what the home did since.
func (s *Syncer) homesVersions(ctx context.Context, g *git, ours, their map[string]change) (map[string]bool, error) {
	var paths, ids []string
	for _, p := range slices.Sorted(maps.Keys(their)) {
		tc := their[p]
		oc, ok := ours[p]
		if !ok || oc.status != 'A' || tc.status != 'A' || oc.same(tc) || !oc.file() || !tc.file() || !isMessage(p) {
			continue
		}
		a, _ := objectOf(p)
		if home, mine := s.homeOf(g.homes, a); home == "" || mine {
			continue // no other home to have the word: both stay (settle renames)
		}
		paths, ids = append(paths, p), append(ids, oc.blob, tc.blob)
	}
	if len(paths) == 0 {
		return nil, nil
	}
	content := map[string][]byte{}
	if err := g.blobs(ctx, ids, func(id string, data []byte) error { content[id] = data; return nil }); err != nil {
		return nil, err
	}
	same := map[string]bool{}
	for _, p := range paths {
		if homesVersion(content[ours[p].blob], content[their[p].blob]) {
			same[p] = true
		}
	}
	return same, nil
}

// homesVersion reports whether message file theirs is the same message
// as file sent, which is as it was sent (not read, not claimed), with
// only what its home changes after delivery changed: "read" and a queue
// item's "claim" (docs/format.md), whatever the spacing. A file that is
// not one JSON object is no message here. It is pure.
func homesVersion(sent, theirs []byte) bool {
	ms, ok := messageKeys(sent)
	if !ok || ms["read"] != nil && ms["read"] != false || ms["claim"] != nil {
		return false
	}
	mt, ok := messageKeys(theirs)
	if !ok {
		return false
	}
	for _, k := range []string{"read", "claim"} {
		delete(ms, k)
		delete(mt, k)
	}
	return reflect.DeepEqual(ms, mt)
}

func messageKeys(data []byte) (map[string]any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
		return nil, false
	}
	return m, true
}
