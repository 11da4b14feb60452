package escalation

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// Files, relative to the root.
const (
	ConfigFile = "state/escalation.json"
	Dir        = "state/escalations"
)

// Severities, most severe first, and the mail priority each is sent with.
var Severities = []string{"critical", "high", "medium", "low"}

// priority is the mail priority of severity (false: not a severity).
func priority(severity string) (maildir.Priority, bool) {
	switch severity {
	case "critical":
		return maildir.Urgent, true
	case "high":
		return maildir.High, true
	case "medium":
		return maildir.Normal, true
	case "low":
		return maildir.Low, true
	}
	return "", false
}

// severityPriority is priority without the check, for a record already read.
func severityPriority(severity string) maildir.Priority {
	p, _ := priority(severity)
	return p
}

// Defaults of a Config's zero fields.
const (
	DefaultResendAfter = 30 * time.Minute
	DefaultMaxResends  = 3
	DefaultRoute       = "mayor"
)

var (
	// ErrBadSeverity is returned for a severity that is not one of Severities.
	ErrBadSeverity = errors.New("escalation: unknown severity")
	// ErrNotFound is returned for an id no escalation has.
	ErrNotFound = errors.New("escalation: no such escalation")
	// ErrClosed is returned by Ack and Close for a closed escalation.
	ErrClosed = errors.New("escalation: already closed")
)

// Config is state/escalation.json.
type Config struct {
	Routes      map[string][]string `json:"routes"`
	ResendAfter string              `json:"resend_after,omitempty"` // a Go duration; default 30m
	MaxResends  int                 `json:"max_resends,omitempty"`  // default 3
}

// Record is one escalation's state, state/escalations/<id>.json.
type Record struct {
	ID       string    `json:"id"` // the first copy's id: the thread of every re-send
	Severity string    `json:"severity"`
	Subject  string    `json:"subject"`
	From     string    `json:"from"`
	To       []string  `json:"to"`
	Status   string    `json:"status"` // open, acked, closed
	SentAt   time.Time `json:"sent_at"`
	LastSent time.Time `json:"last_sent"`
	Resends  int       `json:"resends"`
	AckedBy  string    `json:"acked_by,omitempty"`
	AckedAt  time.Time `json:"acked_at,omitzero"`
	ClosedBy string    `json:"closed_by,omitempty"`
	ClosedAt time.Time `json:"closed_at,omitzero"`
	Reason   string    `json:"reason,omitempty"`
	// Host is the host that raised it, in a town of named hosts: only it
	// acknowledges, closes and re-sends the escalation (SPEC §10).
	Host string `json:"host,omitempty"`
}

// A Desk is the escalations of one root.
type Desk struct {
	Store *maildir.Store
	Now   func() time.Time // nil: time.Now
}

func (e *Desk) now() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

// Config reads the configuration, with the defaults filled in.
func (e *Desk) Config() (Config, time.Duration, error) {
	var c Config
	root := e.Store.Root()
	d, err := root.Dir("state")
	if d != nil {
		defer d.Close()
		data, _, rerr := d.ReadFile("escalation.json", 1<<20)
		switch {
		case rerr == nil:
			if err := json.Unmarshal(data, &c); err != nil {
				return c, 0, fmt.Errorf("escalation: %s: %w", ConfigFile, err)
			}
		case !errors.Is(rerr, fs.ErrNotExist):
			return c, 0, rerr
		}
	} else if err != nil {
		return c, 0, err
	}
	after := DefaultResendAfter
	if c.ResendAfter != "" {
		if after, err = time.ParseDuration(c.ResendAfter); err != nil || after <= 0 {
			return c, 0, fmt.Errorf("escalation: %s: resend_after %q is not a positive duration", ConfigFile, c.ResendAfter)
		}
	}
	c.MaxResends = cmp.Or(c.MaxResends, DefaultMaxResends)
	return c, after, nil
}

// Route returns the addresses severity goes to.
func (c Config) Route(severity string) []string {
	if r := c.Routes[severity]; len(r) > 0 {
		return r
	}
	return []string{DefaultRoute}
}

// Raise sends an escalation: to the route of its severity, as mail of type
// "escalation", and records it open. It returns the record and the copies.
func (e *Desk) Raise(from, severity, subject, body string) (*Record, []*maildir.Message, error) {
	p, ok := priority(severity)
	if !ok {
		return nil, nil, fmt.Errorf("%w %q (use %s)", ErrBadSeverity, severity, strings.Join(Severities, ", "))
	}
	c, _, err := e.Config()
	if err != nil {
		return nil, nil, err
	}
	to := c.Route(severity)
	text, err := maildir.FormatBody([][2]string{{"Severity", severity}}, body)
	if err != nil {
		return nil, nil, err
	}
	sent, err := e.Store.Send(&maildir.Message{From: from, To: to[0], CC: to[1:], Subject: subject, Body: text, Type: "escalation", Priority: p})
	if err != nil {
		return nil, sent, err
	}
	now := e.now()
	host, _ := e.Store.LocalHost()
	r := &Record{ID: sent[0].Thread, Severity: severity, Subject: subject, From: sent[0].From, To: to, Status: "open", SentAt: now, LastSent: now, Host: host}
	return r, sent, e.edit(r.ID, true, func(old *Record) error { *old = *r; return nil })
}

// List returns the escalations, oldest first: the open and acknowledged
// ones, or with all the closed ones too.
func (e *Desk) List(all bool) ([]*Record, error) {
	root := e.Store.Root()
	d, err := root.Dir(Dir)
	if d == nil {
		return nil, err
	}
	defer d.Close()
	var out []*Record
	var errs []error
	err = d.Each(func(ent fs.DirEntry) {
		name := ent.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			return
		}
		r, err := read(d, name)
		if err != nil {
			errs = append(errs, err)
			return
		}
		if all || r.Status != "closed" {
			out = append(out, r)
		}
	})
	slices.SortFunc(out, func(a, b *Record) int { return a.SentAt.Compare(b.SentAt) })
	return out, errors.Join(append(errs, err)...)
}

func read(d *durable.Dir, name string) (*Record, error) {
	data, _, err := d.ReadFile(name, 1<<20)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("escalation: %s: %w", d.Join(name), err)
	}
	return &r, nil
}

// Ack records that who acknowledged escalation id: it is re-sent no more.
func (e *Desk) Ack(id, who string) (*Record, error) {
	var out *Record
	err := e.edit(id, false, func(r *Record) error {
		if r.Status == "closed" {
			return ErrClosed
		}
		r.Status, r.AckedBy, r.AckedAt = "acked", who, e.now()
		out = r
		return nil
	})
	return out, err
}

// Close records that who closed escalation id, with a reason.
func (e *Desk) Close(id, who, reason string) (*Record, error) {
	var out *Record
	err := e.edit(id, false, func(r *Record) error {
		if r.Status == "closed" {
			return ErrClosed
		}
		r.Status, r.ClosedBy, r.ClosedAt, r.Reason = "closed", who, e.now(), reason
		out = r
		return nil
	})
	return out, err
}

// Bump re-sends every open escalation that nobody acknowledged within the
// configured time, at most the configured number of times, and returns the
// records it re-sent.
func (e *Desk) Bump() ([]*Record, error) {
	c, after, err := e.Config()
	if err != nil {
		return nil, err
	}
	open, err := e.List(false)
	if err != nil {
		return nil, err
	}
	var bumped []*Record
	var errs []error
	for _, r := range open {
		err := e.edit(r.ID, false, func(r *Record) error {
			now := e.now()
			if r.Status != "open" || r.Resends >= c.MaxResends || now.Sub(r.LastSent) < after {
				return errUnchanged
			}
			text, _ := maildir.FormatBody([][2]string{{"Severity", r.Severity}, {"Escalation", r.ID}, {"Resend", fmt.Sprint(r.Resends + 1)}},
				fmt.Sprintf("Not acknowledged since %s: mailfs escalate ack %s", r.SentAt.Format(time.RFC3339), r.ID))
			_, err := e.Store.Send(&maildir.Message{From: r.From, To: r.To[0], CC: r.To[1:], Subject: "BUMP: " + r.Subject,
				Body: text, Type: "escalation", Priority: severityPriority(r.Severity), Thread: r.ID})
			if err != nil {
				return err
			}
			r.Resends++
			r.LastSent = now
			bumped = append(bumped, r)
			return nil
		})
		if err != nil && !errors.Is(err, errUnchanged) && !errors.Is(err, maildir.ErrNotHome) {
			errs = append(errs, err)
		}
	}
	return bumped, errors.Join(errs...)
}

var errUnchanged = errors.New("unchanged")

// edit changes record id under the records folder's lock and writes it
// durably; create makes it if missing.
func (e *Desk) edit(id string, create bool, change func(*Record) error) error {
	if _, err := maildir.ParseID(id); err != nil {
		return err
	}
	root := e.Store.Root()
	r, err := root.Open(create)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w %q", ErrNotFound, id)
	}
	if err != nil {
		return err
	}
	d, err := r.MkdirAll(Dir)
	if err != nil {
		return err
	}
	defer d.Close()
	unlock, err := d.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec := &Record{}
	name := id + ".json"
	if old, err := read(d, name); err == nil {
		rec = old
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	} else if !create {
		return fmt.Errorf("%w %q", ErrNotFound, id)
	}
	if !create && rec.Host != "" {
		host, err := e.Store.LocalHost()
		if err != nil {
			return err
		}
		if host != rec.Host {
			return fmt.Errorf("%w: escalation %s was raised on host %s, and only %s changes its record; ack or close it there", maildir.ErrNotHome, id, rec.Host, rec.Host)
		}
	}
	if err := change(rec); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	return d.Replace(name, append(data, '\n'))
}
