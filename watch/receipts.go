package watch

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mailfs/mailfs/maildir"
)

// A Receipt says what became of one delivered copy that WaitRead waited
// for.
type Receipt struct {
	Box    maildir.Address `json:"agent"`
	ID     string          `json:"id"`
	ReadAt time.Time       `json:"read_at,omitzero"` // when it was seen read; zero if not
	Gone   bool            `json:"gone,omitempty"`   // deleted before it was read
}

// WaitRead blocks until every copy in sent that sits in an agent's mailbox
// is read (or deleted), and returns a receipt for each, in the order of
// sent; copies in queues and channels are not waited for. It watches the
// mailboxes (fsnotify: a mark-read is a rename in the mailbox), and is
// level-triggered: the watches come first, then every copy is checked,
// and each event in a mailbox checks its pending copies again, so no read
// is missed. When ctx ends first it returns the receipts so far and
// ctx.Err().
func WaitRead(ctx context.Context, s *maildir.Store, sent []*maildir.Message) ([]Receipt, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, limitError(err)
	}
	defer fsw.Close()
	receipts := make([]Receipt, 0, len(sent))
	pending := map[string][]int{} // mailbox directory -> indexes into receipts
	for _, m := range sent {
		if m.Box.Kind != maildir.KindAgent {
			continue
		}
		dir := filepath.Join(s.Dir(), filepath.FromSlash(m.Box.Dir(false)))
		if _, ok := pending[dir]; !ok {
			if err := fsw.Add(dir); err != nil {
				return nil, fmt.Errorf("watching %s: %w", m.Box, err)
			}
		}
		pending[dir] = append(pending[dir], len(receipts))
		receipts = append(receipts, Receipt{Box: m.Box, ID: m.ID})
	}
	check := func(dir string) error {
		var still []int
		for _, i := range pending[dir] {
			r := &receipts[i]
			m, err := s.Get(r.Box, r.ID)
			switch {
			case errors.Is(err, maildir.ErrNotFound):
				r.Gone = true
			case err != nil:
				return err
			case m.Read:
				r.ReadAt = time.Now().UTC()
			default:
				still = append(still, i)
			}
		}
		if len(still) == 0 {
			delete(pending, dir)
		} else {
			pending[dir] = still
		}
		return nil
	}
	for dir := range pending {
		if err := check(dir); err != nil {
			return receipts, err
		}
	}
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return receipts, ctx.Err()
		case ev, ok := <-fsw.Events:
			if !ok {
				return receipts, errors.New("watch: the file system notifications ended")
			}
			if err := check(filepath.Dir(ev.Name)); err != nil {
				return receipts, err
			}
		case err, ok := <-fsw.Errors:
			if !ok {
				return receipts, errors.New("watch: the file system notifications ended")
			}
			if !errors.Is(err, fsnotify.ErrEventOverflow) {
				return receipts, err
			}
			for dir := range pending { // events were lost: look again everywhere
				if err := check(dir); err != nil {
					return receipts, err
				}
			}
		}
	}
	return receipts, nil
}
