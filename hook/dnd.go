package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// DNDDir holds each agent's do-not-disturb switch:
// runtime/dnd/<agent>.json, {"since": …}, never committed.
const DNDDir = "runtime/dnd"

// SetDND turns agent's do not disturb on or off. While it is on, every hook
// and "check --inject" holds back normal nudges and the reminders of
// normal and low mail (the mail is still delivered and listed); urgent
// nudges and urgent and high mail always get through.
func SetDND(s *maildir.Store, agent string, on bool, now time.Time) error {
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return err
	}
	root := s.Root()
	r, err := root.Open(on) // turning it off needs no root to exist
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	d, err := r.MkdirAll(DNDDir)
	if err != nil {
		return err
	}
	defer d.Close()
	if !on {
		if err := d.Remove(agent + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return d.Sync()
	}
	data, _ := json.Marshal(struct {
		Since time.Time `json:"since"`
	}{now.UTC()})
	return d.Replace(agent+".json", append(data, '\n'))
}

// DND reports whether agent's do not disturb is on, and since when.
func DND(s *maildir.Store, agent string) (on bool, since time.Time, err error) {
	agent, err = maildir.ParseAgent(agent)
	if err != nil {
		return false, time.Time{}, err
	}
	root := s.Root()
	d, err := root.Dir(DNDDir)
	if d == nil {
		return false, time.Time{}, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(agent+".json", 1<<12)
	if errors.Is(err, fs.ErrNotExist) {
		return false, time.Time{}, nil
	}
	if err != nil {
		return false, time.Time{}, err
	}
	var v struct {
		Since time.Time `json:"since"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return true, time.Time{}, fmt.Errorf("hook: %s: %w (do not disturb taken as on)", d.Join(agent+".json"), err)
	}
	return true, v.Since, nil
}
