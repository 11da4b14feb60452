package maildir

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mailfs/mailfs/internal/durable"
)

// OnceDir holds a record of each send made with an idempotency key (see
// [Store.SendOnce]): runtime/once/<hash>.json, one per key, per store
// (every sender's keys in one space, as Gas City keeps them per city). It
// is per host and never committed.
const OnceDir = "runtime/once"

// OnceWindow is how long an idempotency key dedupes, from its first send:
// within it a second send with the key delivers nothing new (or is a
// conflict, for a different message). A record past it is removed by the
// archive sweep ([Store.PruneOnce]), the one rule by which records go; a
// send with a key whose record is past it sends anew.
const OnceWindow = 30 * 24 * time.Hour

// MaxKeyLen is the longest idempotency key, in bytes.
const MaxKeyLen = 128

// ErrBadKey is returned by [Store.SendOnce] for an idempotency key that
// is empty, longer than [MaxKeyLen] bytes, not UTF-8, or holds a control
// character or a space at either end.
var ErrBadKey = errors.New("maildir: an idempotency key is 1 to 128 bytes of printable UTF-8, without spaces at either end")

// ErrKeyConflict is returned by [Store.SendOnce] when the key was used,
// within [OnceWindow], for a different message (another sender,
// recipient, cc, subject, body, type, priority, thread or reply-to):
// nothing is sent, as Gas City refuses such a reuse
// ("idempotency_mismatch").
var ErrKeyConflict = errors.New("maildir: idempotency key reused for a different message")

// ErrOnceUnknown is returned by [Store.SendOnce] when the key's record is
// there but cannot be read (empty, garbled, not a regular file, too
// large): whether the first send was delivered is unknown, so nothing is
// sent rather than perhaps sending twice. fsck reports such a record; a
// person who knows the first send did not arrive removes it.
var ErrOnceUnknown = errors.New("maildir: the record of this idempotency key cannot be read: whether it was delivered is unknown, so nothing was sent")

// CheckKey returns nil for a valid idempotency key, else an error
// wrapping [ErrBadKey] that says why. Spaces inside a key are allowed (an
// HTTP Idempotency-Key, which Gas City's API takes, may hold them).
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
// its ids come from and the digest of the message, written durably
// before any copy is delivered, then, durably too, the copies it
// delivered.
type onceRecord struct {
	Key    string    `json:"key"`
	Digest string    `json:"digest,omitempty"` // of what was sent (onceDigest); none in records before it
	Stamp  time.Time `json:"stamp"`            // copy i's id is NewID(Stamp+i, sender)
	Done   bool      `json:"done"`             // every copy is delivered
	Paths  []string  `json:"paths,omitempty"`  // when done: each copy, relative to the root
}

// MaxOnceRecord is the largest once record read: a record is a key, a
// digest, a stamp and the paths of its copies.
const MaxOnceRecord = 1 << 20

// OnceName is the file name of key's record in [OnceDir].
func OnceName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:20]) + ".json"
}

// onceDigest is what makes two sends with one key the same send: the
// message as the caller gave it, before delivery (never its ids, times or
// the recipients a group expands to).
func onceDigest(c *Message) string {
	h := sha256.New()
	for _, f := range []string{c.From, c.To, strings.Join(c.CC, "\x00"), c.Subject, c.Body, c.Type, string(c.Priority), c.Thread, c.ReplyTo} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// CheckOnceRecord returns nil for data that is a keyed send's record,
// else why it is not one: what fsck asks of each file in [OnceDir].
func CheckOnceRecord(data []byte) error {
	_, err := parseOnce(data, "")
	return err
}

// parseOnce reads a once record, or says why it is not one.
func parseOnce(data []byte, key string) (onceRecord, error) {
	var rec onceRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, err
	}
	if rec.Stamp.IsZero() || key != "" && rec.Key != key {
		return rec, errors.New("not a record of this key")
	}
	return rec, nil
}

// SendOnce is [Store.Send] with an idempotency key: the first send with
// key within [OnceWindow] delivers, and a later one with the same message
// delivers nothing and returns the first one's copies, with again set; a
// later one with a different message is refused with [ErrKeyConflict].
//
// It holds the lock of [OnceDir] for the whole send, so retries racing
// each other (a client that timed out and tried again while the first
// try still ran) deliver once. Before any copy is written the record of
// the key, the message's digest and the stamp the copies' ids come from
// is made durable; a send killed (or cut by a power loss) after that is
// finished by the next try with the same key, under the same ids: a copy
// already there (in its folder or its archive, or, for a queue, claimed
// since into any mailbox) is not written again, so nothing is delivered
// twice. The final record is made durable before SendOnce returns. A
// record that cannot be read is [ErrOnceUnknown]: nothing is sent. No
// folder is listed.
//
// What it cannot see: a copy its recipient deleted between the crash and
// the retry is delivered again, and a send whose first id was taken by a
// plain send of the same sender in the same nanosecond (it then took the
// next free one) and was cut before its record said done is delivered
// again by the retry.
func (s *Store) SendOnce(m *Message, key string) (sent []*Message, again bool, err error) {
	if err := CheckKey(key); err != nil {
		return nil, false, err
	}
	c, rcpts, err := s.prepare(m)
	if err != nil {
		return nil, false, err
	}
	digest := onceDigest(c)
	d, err := s.mkdir(OnceDir)
	if err != nil {
		return nil, false, err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	name := OnceName(key)
	rec, found, err := s.readOnce(d, name, key, c.From)
	if err != nil {
		return nil, false, err
	}
	if found && rec.Done && s.now().Sub(rec.Stamp) > OnceWindow {
		found, rec = false, onceRecord{} // past the window: a new send
	}
	if found && rec.Digest != "" && rec.Digest != digest {
		return nil, false, fmt.Errorf("%w: %q was first used at %s for another message", ErrKeyConflict, key, rec.Stamp.UTC().Format(time.RFC3339))
	}
	if found && rec.Done {
		return s.sentBefore(rec), true, nil
	}
	if !found {
		rec = onceRecord{Key: key, Digest: digest, Stamp: s.stamp(len(rcpts))}
		if err := writeRecord(d, name, rec); err != nil {
			return nil, false, err
		}
	}
	sent, err = s.sendAt(c, rcpts, rec.Stamp, found)
	if err != nil {
		return sent, false, err // the record stays pending: a retry finishes it
	}
	rec.Done, rec.Digest = true, digest
	for _, m := range sent {
		rec.Paths = append(rec.Paths, m.Path)
	}
	return sent, false, writeRecord(d, name, rec)
}

// readOnce reads key's record in d (or, for a record from before records
// were per store, in d's folder for sender from), saying whether there is
// one; a record there that cannot be read is ErrOnceUnknown.
func (s *Store) readOnce(d *durable.Dir, name, key, from string) (onceRecord, bool, error) {
	data, _, err := d.ReadFile(name, MaxOnceRecord)
	if errors.Is(err, fs.ErrNotExist) {
		if sender, aerr := s.agentOf(from); aerr == nil {
			if old, serr := d.Sub(sender); serr == nil {
				data, _, err = old.ReadFile(name, MaxOnceRecord)
				old.Close()
			}
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return onceRecord{}, false, nil
	}
	if err != nil {
		return onceRecord{}, false, fmt.Errorf("%w (%s: %w)", ErrOnceUnknown, d.Join(name), Reason(err))
	}
	rec, err := parseOnce(data, key)
	if err != nil {
		return onceRecord{}, false, fmt.Errorf("%w (%s: %v)", ErrOnceUnknown, d.Join(name), err)
	}
	return rec, true, nil
}

// writeRecord writes rec as name in d, durably (the one durable write:
// temp, fsync, rename, fsync of the folder), so that a power cut leaves
// the record before or after, never an empty one.
func writeRecord(d *durable.Dir, name string, rec onceRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return d.Replace(name, append(data, '\n'))
}

// PruneOnce removes the records of keyed sends finished more than
// [OnceWindow] ago (by their stamp), under the lock keyed sends take, and
// returns how many went. It is the one rule by which once records go;
// the archive sweep applies it. A record that cannot be read, or of a
// send not finished, is left (fsck reports the first; a retry finishes
// the second).
func (s *Store) PruneOnce() (int, error) {
	d, err := s.root.Dir(OnceDir)
	if d == nil || err != nil {
		return 0, err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return 0, err
	}
	defer unlock()
	return s.pruneOnceIn(d, true)
}

func (s *Store) pruneOnceIn(d *durable.Dir, top bool) (int, error) {
	var names, subs []string
	d.Each(func(e fs.DirEntry) {
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".json"):
			names = append(names, e.Name())
		case top && e.IsDir() && ValidAgent(e.Name()):
			subs = append(subs, e.Name()) // records from before they were per store
		}
	})
	n := 0
	var errs []error
	for _, name := range names {
		data, _, err := d.ReadFile(name, MaxOnceRecord)
		if err != nil {
			continue
		}
		rec, err := parseOnce(data, "")
		if err != nil || !rec.Done || s.now().Sub(rec.Stamp) <= OnceWindow {
			continue
		}
		if err := d.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	for _, sub := range subs {
		if sd, err := d.Sub(sub); err == nil {
			k, err := s.pruneOnceIn(sd, false)
			n += k
			errs = append(errs, err)
			sd.Close()
		}
	}
	if n > 0 {
		errs = append(errs, d.Sync())
	}
	return n, errors.Join(errs...)
}

// sentBefore returns the copies a finished keyed send delivered, as they
// are now (read since, archived since), or as their paths say when they
// are gone.
func (s *Store) sentBefore(rec onceRecord) []*Message {
	var out []*Message
	for _, p := range rec.Paths {
		id := strings.TrimSuffix(path.Base(p), ".json")
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
