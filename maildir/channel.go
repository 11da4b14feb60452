package maildir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
)

// ChannelConfig is a channel's retention, stored as
// state/channel/<name>.json. Posts beyond either limit move to the
// channel's archive/ folder after each post and at each archive sweep;
// nothing is deleted. Zero means no limit.
type ChannelConfig struct {
	RetainCount int     `json:"retain_count"` // keep at most this many posts
	RetainHours float64 `json:"retain_hours"` // keep posts at most this many hours
}

// A ChannelChange names the retention limits [Store.CreateChannel] sets; a
// nil limit is left as it is (zero, no limit, for a new channel).
type ChannelChange struct {
	RetainCount *int
	RetainHours *float64
}

// CreateChannel creates channel name (with or without "channel:"), or
// changes the retention limits of an existing one: only those ch sets. A
// new channel may not take a name that an agent's mailbox, a group or a
// queue has ([ErrNameTaken]). Edits hold the channels folder's lock, so
// that two concurrent edits of different limits both take effect.
func (s *Store) CreateChannel(name string, ch ChannelChange) error {
	name, err := parseName(KindChannel, name)
	if err != nil {
		return err
	}
	if ch.RetainCount != nil && *ch.RetainCount < 0 || ch.RetainHours != nil && *ch.RetainHours < 0 {
		return fmt.Errorf("%w: a channel's retention limits must not be negative", ErrInvalidMessage)
	}
	r, err := s.open(true)
	if err != nil {
		return err
	}
	d, err := r.MkdirAll(ChannelDir)
	if err != nil {
		return err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	cfg, err := readChannel(d, name)
	created := errors.Is(err, ErrNoChannel)
	if !created {
		if err := s.MayChange(Address{Kind: KindChannel, Name: name}); err != nil {
			return err
		}
	}
	switch {
	case created:
		if err := s.taken(KindChannel, name); err != nil {
			return err
		}
	case err != nil && (ch.RetainCount == nil || ch.RetainHours == nil):
		return fmt.Errorf("%w (give both --retain-count and --retain-hours to replace it)", err)
	}
	if ch.RetainCount != nil {
		cfg.RetainCount = *ch.RetainCount
	}
	if ch.RetainHours != nil {
		cfg.RetainHours = *ch.RetainHours
	}
	posts, err := r.MkdirAll(ChannelDir + "/" + name)
	if err != nil {
		return err
	}
	posts.Close()
	data, _ := json.MarshalIndent(cfg, "", "  ")
	if !created {
		return d.Replace(name+".json", append(data, '\n'))
	}
	if err := d.Create(name+".json", append(data, '\n')); err != nil {
		return err
	}
	return s.homeHere(Address{Kind: KindChannel, Name: name})
}

// Channel returns the retention of channel name. A channel that does not
// exist gives [ErrNoChannel], one whose folder is there without its
// configuration [ErrMalformed]; a configuration that cannot be read gives
// an error wrapping [ErrInvalidMessage] that names the file.
func (s *Store) Channel(name string) (ChannelConfig, error) {
	name, err := parseName(KindChannel, name)
	if err != nil {
		return ChannelConfig{}, err
	}
	d, err := s.root.Dir(ChannelDir)
	if d == nil {
		if err == nil {
			err = s.mustExist(Address{Kind: KindChannel, Name: name})
		}
		return ChannelConfig{}, err
	}
	defer d.Close()
	cfg, err := readChannel(d, name)
	if errors.Is(err, ErrNoChannel) {
		err = s.mustExist(Address{Kind: KindChannel, Name: name})
	}
	return cfg, err
}

// readChannel reads and checks a channel's configuration in the channels
// folder d.
func readChannel(d *durable.Dir, name string) (ChannelConfig, error) {
	var cfg ChannelConfig
	data, _, err := d.ReadFile(name+".json", 1<<16)
	if errors.Is(err, fs.ErrNotExist) {
		return cfg, fmt.Errorf("%w channel:%s", ErrNoChannel, name)
	}
	if err != nil {
		return cfg, err
	}
	bad := func(why string) (ChannelConfig, error) {
		return ChannelConfig{}, fmt.Errorf("%w: the configuration %s cannot be read: %s", ErrInvalidMessage, d.Join(name+".json"), why)
	}
	if _, err := parseObject(data); err != nil {
		return bad(err.Error())
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return bad(err.Error())
	}
	if cfg.RetainCount < 0 || cfg.RetainHours < 0 {
		return bad("a retention limit is negative")
	}
	return cfg, nil
}

// ErrMalformed is returned, wrapped with what is wrong, for a channel
// whose folder is there without its configuration
// (state/channel/<name>/ without <name>.json): [Store.Channels] lists it,
// and reading or posting to it is refused until it is made a channel again
// ([Store.CreateChannel] keeps its posts).
var ErrMalformed = errors.New("maildir: malformed channel")

// malformedChannel returns an [ErrMalformed] error when channel name's
// folder is there and its configuration is not; nil otherwise.
func (s *Store) malformedChannel(name string) error {
	d, err := s.root.Dir(ChannelDir)
	if d == nil || err != nil {
		return nil
	}
	defer d.Close()
	if st, err := d.Lstat(name); err != nil || !st.Mode.IsDir() {
		return nil
	}
	if _, err := d.Lstat(name + ".json"); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%w channel:%s: its folder %s/ is there but not its configuration %s (\"mailfs channel create %s\" makes it a channel again, keeping its posts)",
		ErrMalformed, name, d.Join(name), d.Join(name+".json"), name)
}

// Channels returns the names of the channels, sorted: every folder of
// channels, a malformed one too (see [ErrMalformed]).
func (s *Store) Channels() ([]string, error) { return s.names(KindChannel) }

// Retain applies the retention of channel b: the oldest
// posts beyond its count, and the posts older than its age, move into its
// archive/ folder. It returns the ids it moved. Retention racing posts and
// other retention runs loses nothing: each move is a rename that never
// replaces a file, and a post another run moved first is simply skipped.
func (s *Store) Retain(b Address) ([]string, error) {
	if b.Kind != KindChannel {
		return nil, fmt.Errorf("%w: %s is %s; retention applies to channels", ErrWrongKind, b, article(b.Kind))
	}
	cfg, err := s.Channel(b.Name)
	if err != nil || cfg.RetainCount == 0 && cfg.RetainHours == 0 {
		return nil, err
	}
	if err := s.MayChange(b); err != nil {
		return nil, err
	}
	entries, _, err := s.Entries(b, false)
	if err != nil {
		return nil, err
	}
	// Oldest first: by stamp, unstamped (script) posts by their time.
	when := func(e Entry) time.Time {
		if e.Stamp.IsZero() {
			if m, err := s.Load(b, e.ID); err == nil {
				return m.Timestamp
			}
		}
		return e.Stamp
	}
	times := make(map[string]time.Time, len(entries))
	for _, e := range entries {
		times[e.ID] = when(e)
	}
	slices.SortFunc(entries, func(x, y Entry) int {
		if c := times[x.ID].Compare(times[y.ID]); c != 0 {
			return c
		}
		return strings.Compare(x.ID, y.ID)
	})
	var old []string
	limit := s.now().Add(-time.Duration(cfg.RetainHours * float64(time.Hour)))
	for i, e := range entries {
		byCount := cfg.RetainCount > 0 && len(entries)-i > cfg.RetainCount
		byAge := cfg.RetainHours > 0 && times[e.ID].Before(limit)
		if byCount || byAge {
			old = append(old, e.ID+".json")
		}
	}
	if len(old) == 0 {
		return nil, nil
	}
	errs, err := s.moveNames(b, old, true)
	if err != nil {
		return nil, err
	}
	var moved []string
	var failed []error
	for i, e := range errs {
		switch {
		case e == nil:
			moved = append(moved, strings.TrimSuffix(old[i], ".json"))
		case !errors.Is(e, ErrNotFound): // ErrNotFound: another run moved it
			failed = append(failed, e)
		}
	}
	return moved, errors.Join(failed...)
}
