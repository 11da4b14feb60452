package maildir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailfs/mailfs/internal/durable"
)

// OnceDir holds, per sender, a record of each send made with an
// idempotency key (see [Store.SendOnce]): runtime/once/<sender>/<hash>.json.
// It is per host and never committed.
const OnceDir = "runtime/once"

// OnceWindow is how long an idempotency key dedupes: a second send with
// the same key from the same sender within it delivers nothing new.
const OnceWindow = 24 * time.Hour

// MaxKeyLen is the longest idempotency key, in bytes (Gas City's limit).
const MaxKeyLen = 128

// ErrBadKey is returned by [Store.SendOnce] for an idempotency key that
// is empty, longer than [MaxKeyLen] bytes, not UTF-8, or holds a control
// character or a space at either end.
var ErrBadKey = errors.New("maildir: an idempotency key is 1 to 128 bytes of printable UTF-8, without spaces at either end")

// CheckKey returns nil for a valid idempotency key, else an error
// wrapping [ErrBadKey] that says why.
func CheckKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: it is empty", ErrBadKey)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("%w: it is %d bytes", ErrBadKey, len(key))
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: it is not UTF-8", ErrBadKey)
	case strings.ContainsFunc(key, unicode.IsControl):
		return fmt.Errorf("%w: it holds a control character", ErrBadKey)
	case strings.TrimSpace(key) != key:
		return fmt.Errorf("%w: it starts or ends with a space", ErrBadKey)
	}
	return nil
}

// A onceRecord is what runtime/once keeps of one keyed send: the stamp
// its ids come from, written durably before any copy is delivered, then
// the copies it delivered.
type onceRecord struct {
	Key   string    `json:"key"`
	Stamp time.Time `json:"stamp"`           // copy i's id is NewID(Stamp+i, sender)
	Done  bool      `json:"done"`            // every copy is delivered
	Paths []string  `json:"paths,omitempty"` // when done: each copy, relative to the root
}

// SendOnce is [Store.Send] with an idempotency key: the first send with
// key from m's sender within [OnceWindow] delivers, and any later one
// delivers nothing and returns the first one's copies, with again set.
//
// It holds the sender's lock in [OnceDir] for the whole send, so retries
// racing each other (a client that timed out and tried again while the
// first try still ran) deliver once. Before any copy is written the
// record of the key and the stamp the copies' ids come from is made
// durable; a send killed after that is finished by the next try with the
// same key, under the same ids: a copy already there (in its folder or
// its archive) is not written again, so a crash between a delivery and
// the record never delivers twice. No folder is listed: a keyed send
// costs one lock, one lookup and one durable write more than a plain one.
//
// What it cannot see: a copy its recipient deleted between the crash and
// the retry is delivered again, and a send whose first id was taken by a
// plain send of the same sender in the same nanosecond (it then took the
// next free one) and was killed before its record said done is delivered
// again by the retry.
func (s *Store) SendOnce(m *Message, key string) (sent []*Message, again bool, err error) {
	if err := CheckKey(key); err != nil {
		return nil, false, err
	}
	c, rcpts, err := s.prepare(m)
	if err != nil {
		return nil, false, err
	}
	from, err := s.agentOf(c.From)
	if err != nil {
		return nil, false, err
	}
	d, err := s.mkdir(OnceDir + "/" + from)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	sum := sha256.Sum256([]byte(key))
	name := hex.EncodeToString(sum[:20]) + ".json"
	var rec onceRecord
	data, st, err := d.ReadFile(name, 1<<20)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, err
	case json.Unmarshal(data, &rec) != nil || rec.Key != key || s.now().Sub(st.ModTime) > OnceWindow:
		rec = onceRecord{} // unreadable, another key's, or past the window: a new send
	}
	if rec.Done {
		return s.sentBefore(rec), true, nil
	}
	resume := !rec.Stamp.IsZero()
	if !resume {
		rec = onceRecord{Key: key, Stamp: s.stamp(len(rcpts))}
		if err := writeRecord(d, name, rec, true); err != nil {
			return nil, false, err
		}
	}
	sent, err = s.sendAt(c, rcpts, rec.Stamp, resume)
	if err != nil {
		return sent, false, err // the record stays pending: a retry finishes it
	}
	rec.Done = true
	for _, m := range sent {
		rec.Paths = append(rec.Paths, m.Path)
	}
	// Not synced: lost in a crash, it is pending again, and the retry
	// finds every copy in place.
	return sent, false, writeRecord(d, name, rec, false)
}

// writeRecord writes rec as name in d: durably, or not (ephemeral).
func writeRecord(d *durable.Dir, name string, rec onceRecord, sync bool) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if sync {
		return d.Replace(name, data)
	}
	return d.ReplaceEphemeral(name, data)
}

// sentBefore returns the copies a finished keyed send delivered, as they
// are now (read since, archived since), or as their paths say when they
// are gone.
func (s *Store) sentBefore(rec onceRecord) []*Message {
	var out []*Message
	for _, p := range rec.Paths {
		id := strings.TrimSuffix(lastElem(p), ".json")
		m := &Message{ID: id, Path: p}
		if b, ok := boxOfPath(p); ok {
			m.Box = b
			if got, err := s.Get(b, id); err == nil {
				m = got
			}
		}
		out = append(out, m)
	}
	return out
}

func lastElem(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// boxOfPath returns the folder a message path is in.
func boxOfPath(p string) (Address, bool) {
	parts := strings.Split(p, "/")
	if len(parts) < 4 || parts[0] != "state" {
		return Address{}, false
	}
	kinds := map[string]Kind{"mail": KindAgent, "queue": KindQueue, "channel": KindChannel}
	k, ok := kinds[parts[1]]
	return Address{Kind: k, Name: parts[2]}, ok
}
