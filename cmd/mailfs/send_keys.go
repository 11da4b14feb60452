package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mailfs/mailfs/maildir"
)

// sendKeys are send's flags for Gas City's dedup and supersede keys and
// its metadata (see maildir.Store.SendKeyed), apart from the idempotency
// key, which is another thing.
type sendKeys struct {
	DedupKey     string   `name:"dedup-key" placeholder:"KEY" help:"Deliver only if the recipient holds no live message (read or not, not archived) with this key: else deliver nothing, exit 0 and print that message's id. One agent recipient. Racing senders deliver one."`
	SupersedeKey string   `name:"supersede-key" placeholder:"KEY" help:"After delivering, archive this sender's earlier unread messages with this key to the recipient: only the newest counts. One agent recipient."`
	Meta         []string `sep:"none" placeholder:"KEY=VALUE" help:"Record metadata in the message file's \"meta\" object (repeatable), as Gas City's metadata on send."`
}

// keyed reports whether a dedup or supersede key was given.
func (k *sendKeys) keyed() bool { return k.DedupKey != "" || k.SupersedeKey != "" }

// check refuses what cannot be sent with these flags, before anything is.
func (k *sendKeys) check(idempotent bool) error {
	if k.keyed() && idempotent {
		return usage("an idempotency key makes a retry the same send; a dedup key keeps one live message per condition: give one", "--idempotency-key with --dedup-key or --supersede-key")
	}
	for _, key := range []string{k.DedupKey, k.SupersedeKey} {
		if key != "" {
			if err := maildir.CheckKey(key); err != nil {
				return usage("a key names a condition or a series: refinery-stalled, hourly-digest", "%v", err)
			}
		}
	}
	_, err := k.meta()
	return err
}

// meta is the --meta pairs as a map; nil for none.
func (k *sendKeys) meta() (map[string]string, error) {
	if len(k.Meta) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range k.Meta {
		key, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return nil, usage("--meta rework=gt-9", "--meta %q: write it as KEY=VALUE", kv)
		}
		if _, dup := out[key]; dup {
			return nil, usage("give each key once", "--meta %q: the key %q is given twice", kv, key)
		}
		out[key] = v
	}
	return out, nil
}

// apply puts the metadata into msg.
func (k *sendKeys) apply(msg *maildir.Message) {
	if meta, _ := k.meta(); meta != nil {
		msg.Extra = map[string]json.RawMessage{maildir.MetaField: maildir.Meta(meta)}
	}
}

// send makes the keyed send; suppressed says nothing was delivered (the
// printed id is the live message's that holds the dedup key).
func (k *sendKeys) send(a *app, s *maildir.Store, msg *maildir.Message) (sent []*maildir.Message, suppressed bool, err error) {
	var res *maildir.KeyedResult
	res, err = s.SendKeyed(msg, k.DedupKey, k.SupersedeKey)
	if errors.Is(err, maildir.ErrKeyedRecipients) {
		return nil, false, usage("send keyed mail to one agent at a time: a key is about one mailbox", "%v", err)
	}
	if res == nil {
		return nil, false, err
	}
	if res.Suppressed {
		a.warn(fmt.Errorf("not delivered: %s already holds %s with --dedup-key %q", res.Message.Box.Name, res.Message.ID, k.DedupKey))
	}
	return []*maildir.Message{res.Message}, res.Suppressed, err
}
