package main

import (
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// mailSeen tells box's nudge queue what its agent did to msgs (see
// nudgeq.Queue.MailSeen): their send --nudge announcements go, and the
// reply reminders Gas Town queued for their threads are deferred by a
// read and cleared by a mark-read or an archive, as Gas Town's own verbs
// do. Problems are warnings: the mail verb is done.
func mailSeen(a *app, ev nudgeq.MailEvent, box maildir.Address, msgs ...*maildir.Message) {
	if box.Kind != maildir.KindAgent || len(msgs) == 0 {
		return
	}
	q, err := a.nudges()
	if err == nil {
		_, err = q.MailSeen(box.Name, ev, msgs...)
	}
	if err != nil {
		a.warn(err)
	}
}

// settling wraps a verb that moves messages by id (archive) so that those
// it moved are settled in their agent's nudge queue, found again for
// their thread (a message no longer found stands for its own thread).
func settling(a *app, s *maildir.Store, move func(maildir.Address, []string) ([]error, error)) func(maildir.Address, []string) ([]error, error) {
	return func(box maildir.Address, ids []string) ([]error, error) {
		errs, err := move(box, ids)
		if err != nil {
			return errs, err
		}
		var done []*maildir.Message
		for i, id := range ids {
			if i < len(errs) && errs[i] != nil {
				continue
			}
			m, ferr := s.Find(id)
			if ferr != nil {
				m = &maildir.Message{ID: id}
			}
			done = append(done, m)
		}
		mailSeen(a, nudgeq.MailSettled, box, done...)
		return errs, nil
	}
}
