package maildir

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Gas City's dedup and supersede keys (gastownhall/gascity PR #6306,
// SendDeduped, merged; PR #6376, gc mail send --supersede, proposed), for
// a file store. They are not idempotency keys ([Store.SendOnce]): a dedup
// key says "one live message about this condition at a time", a
// supersede key "only the newest of these counts". Both are kept in the
// message file, so what decides is what the mailbox holds.
const (
	// dedupKeyField is the message key holding a dedup key.
	dedupKeyField = "dedup_key"
	// supersedeKeyField is the message key holding a supersede key.
	supersedeKeyField = "supersede_key"
	// MetaField is the message key holding the metadata a send was given
	// (send --meta k=v): an object of strings.
	MetaField = "meta"

	// keyedDir holds one lock folder per mailbox that keyed sends to it
	// take turns on: runtime/keyed/<agent>. Per host, never committed.
	keyedDir = "runtime/keyed"
)

// ErrKeyedRecipients is returned by [Store.SendKeyed] for a message that
// is not for exactly one agent: a dedup or supersede key is about one
// mailbox.
var ErrKeyedRecipients = errors.New("maildir: a dedup or supersede key needs exactly one agent as the recipient, no cc, group, queue or channel")

// A KeyedResult is what a keyed send did.
type KeyedResult struct {
	// Message is the copy delivered, or, when Suppressed, the live message
	// that already carries the dedup key.
	Message *Message
	// Suppressed: the recipient's mailbox already held a live message
	// (read or unread, not archived) with the dedup key; nothing was
	// delivered.
	Suppressed bool
	// Superseded are the ids of the sender's earlier unread messages with
	// the supersede key that the delivery archived.
	Superseded []string
}

// SendKeyed sends m, which must name one agent and nothing else, with a
// dedup key, a supersede key, or both (either may be empty), as Gas City
// has them:
//
//   - dedup: if the recipient's mailbox already holds a live message
//     (read or unread, not archived) with the same dedup key, nothing is
//     delivered and that message is returned, Suppressed; archiving it
//     lets the next one through;
//   - supersede: once m is delivered, the sender's earlier unread
//     messages with the same supersede key in that mailbox are archived
//     (kept, readable, out of the inbox).
//
// Keyed sends to one mailbox take turns on a lock (runtime/keyed/<agent>,
// dropped by the kernel if the process dies), so racing senders with one
// dedup key deliver one message, and racing senders with one supersede
// key leave one unread, the last delivered. The delivery comes first: a
// send killed between it and the archiving leaves the older messages
// unread until the next send with that key archives them; a key never
// leaves the mailbox without a live message. The lock is per host: two
// hosts sending at once may each deliver (see docs/gastown-gascity.md).
func (s *Store) SendKeyed(m *Message, dedup, supersede string) (*KeyedResult, error) {
	for _, k := range []string{dedup, supersede} {
		if k != "" {
			if err := CheckKey(k); err != nil {
				return nil, err
			}
		}
	}
	if len(m.CC) > 0 {
		return nil, ErrKeyedRecipients
	}
	to, err := s.Resolve(m.To)
	if err != nil {
		return nil, err
	}
	if to.Kind != KindAgent {
		return nil, ErrKeyedRecipients
	}
	sender, err := s.agentOf(m.From)
	if err != nil {
		return nil, err
	}
	c := *m
	c.Extra = maps(m.Extra)
	for k, v := range map[string]string{dedupKeyField: dedup, supersedeKeyField: supersede} {
		if v != "" {
			c.Extra[k] = marshalValue(v)
		}
	}
	d, err := s.mkdir(keyedDir + "/" + to.Name)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	var live []*Message
	if dedup != "" || supersede != "" {
		if live, err = s.List(to, ListOptions{All: true}); err != nil {
			return nil, err // a probe that fails fails the send: no silent duplicate
		}
	}
	if dedup != "" {
		if i := slices.IndexFunc(live, func(o *Message) bool { return keyOf(o, dedupKeyField) == dedup }); i >= 0 {
			return &KeyedResult{Message: live[i], Suppressed: true}, nil
		}
	}
	sent, err := s.Send(&c)
	if err != nil {
		return nil, err
	}
	res := &KeyedResult{Message: sent[0]}
	if supersede == "" {
		return res, nil
	}
	var older []string
	for _, o := range live {
		if !o.Read && keyOf(o, supersedeKeyField) == supersede && s.sameAgent(o.From, sender) {
			older = append(older, o.ID)
		}
	}
	if len(older) == 0 {
		return res, nil
	}
	errs, err := s.Archive(to, older)
	for i, id := range older {
		if err == nil && errs[i] == nil {
			res.Superseded = append(res.Superseded, id)
		} else if err == nil && !errors.Is(errs[i], ErrNotFound) { // archived meanwhile by hand: done
			err = errs[i]
		}
	}
	if err != nil {
		return res, fmt.Errorf("delivered %s, but superseding the older ones failed: %w", sent[0].ID, err)
	}
	return res, nil
}

// keyOf is the string value of key in o's file, "" if none.
func keyOf(o *Message, key string) string {
	var v string
	if raw, ok := o.Extra[key]; !ok || json.Unmarshal(raw, &v) != nil {
		return ""
	}
	return v
}

// sameAgent reports whether the address from names the mailbox agent.
func (s *Store) sameAgent(from, agent string) bool {
	a, err := s.agentOf(from)
	return err == nil && a == agent
}

// maps is a copy of m, never nil.
func maps(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Meta returns the metadata field for a send's key=value pairs (send
// --meta): a JSON object of strings, keys sorted.
func Meta(pairs map[string]string) json.RawMessage { return marshalValue(pairs) }
