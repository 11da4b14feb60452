package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Claim requests. A claim moves an item out of a queue, and only the
// queue's home host may do that. An agent on another host asks instead:
// [Store.RequestClaim] adds a request file — an add, which any host may
// make — and git sync carries it to the home. There [Store.ServeRequests]
// (run by every sync) claims one item for each request, oldest request
// first and in queue order, records the request's id in the claim, and
// removes the request; the item reaches the agent's mailbox with the next
// syncs. A request waits while the queue is empty.
//
// Exactly once: a request is removed after its claim, and a request whose
// id a claim in the agent's mailbox already records (a serve stopped
// between the two) is removed without a second claim.
const RequestDir = "state/requests"

// ErrClaimHere is returned by [Store.RequestClaim] for a queue this host
// may claim from itself.
var ErrClaimHere = errors.New("maildir: this host is the queue's home; claim from it directly")

// A Request asks a queue's home host for one item for an agent.
type Request struct {
	ID    string    `json:"-"`
	Queue string    `json:"queue"` // "queue:name"
	Agent string    `json:"agent"`
	Host  string    `json:"host"` // the host that asked
	At    time.Time `json:"at"`
	Path  string    `json:"-"` // relative to the root
}

// RequestClaim asks the home host of queue q for an item for agent a,
// and returns the request. While a request of a for q is still waiting
// here, it is returned instead of a second one (fresh is false).
func (s *Store) RequestClaim(q, a Address) (r *Request, fresh bool, err error) {
	if q.Kind != KindQueue || a.Kind != KindAgent {
		return nil, false, fmt.Errorf("%w: a request is for an agent, from a work queue", ErrWrongKind)
	}
	if err := s.check(a); err != nil {
		return nil, false, err
	}
	if err := validAddressName(q); err != nil {
		return nil, false, err
	}
	home, err := s.HomeOf(q)
	if err != nil {
		return nil, false, err
	}
	host, err := s.LocalHost()
	if err != nil {
		return nil, false, err
	}
	switch {
	case home.Host == "":
		return nil, false, s.mustExist(q)
	case home.Host == host:
		return nil, false, ErrClaimHere
	}
	waiting, err := s.Requests(q)
	if err != nil {
		return nil, false, err
	}
	for _, w := range waiting {
		if w.Agent == a.Name && w.Host == host {
			return w, false, nil
		}
	}
	r = &Request{Queue: q.String(), Agent: a.Name, Host: host, At: s.now().UTC()}
	folder := RequestDir + "/" + q.Name
	if r.ID, err = s.createRecord(folder, NewID(r.At, a.Name+"."+host), r); err != nil {
		return nil, false, err
	}
	r.Path = folder + "/" + r.ID + ".json"
	return r, true, nil
}

// Requests returns the claim requests waiting for queue q, oldest first.
// A file that is not a request is skipped with a warning.
func (s *Store) Requests(q Address) ([]*Request, error) {
	folder := RequestDir + "/" + q.Name
	names, err := s.recordNames(folder)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	var out []*Request
	err = readRecords(s, folder, names, "a claim request", func(id string, r *Request) (bool, bool) {
		if !ValidAgent(r.Agent) {
			return false, true
		}
		r.ID, r.Path = id, folder+"/"+id+".json"
		out = append(out, r)
		return true, true
	})
	return out, err
}

// OwnRequests returns the claim requests this host made that are still
// in its tree — waiting to be carried to the queue's home, or served there
// and not yet brought back by a sync — oldest first.
func (s *Store) OwnRequests() ([]*Request, error) {
	host, err := s.LocalHost()
	if err != nil || host == "" {
		return nil, err
	}
	all, err := s.AllRequests()
	if err != nil {
		return nil, err
	}
	var out []*Request
	for _, r := range all {
		if r.Host == host {
			out = append(out, r)
		}
	}
	return out, nil
}

// AllRequests returns the claim requests in this host's tree for every
// queue, by queue and oldest first within each: those waiting for the
// queue's home to serve them, and (off the home) those served there that
// no sync has yet brought back removed.
func (s *Store) AllRequests() ([]*Request, error) {
	queues, err := s.dirNames(RequestDir)
	if err != nil {
		return nil, err
	}
	var out []*Request
	for _, q := range queues {
		if !ValidAgent(q) {
			continue
		}
		rs, err := s.Requests(Address{Kind: KindQueue, Name: q})
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// ErrServed is returned by [Store.Withdraw] for a request a claim already
// served: the item is in the agent's mailbox (release it to put it back).
// The request's file, if still there, is removed all the same.
var ErrServed = errors.New("maildir: the request was served already")

// Withdraw removes claim request r, so the queue's home serves it no item:
// what a person does for a request whose agent stopped waiting. It runs on
// the queue's home ([NotHomeError] elsewhere), which alone removes a
// queue's requests, and holds the claimants' lock while it looks and
// removes, so a serve either claimed for r before (then [ErrServed]) or
// finds it gone and claims nothing. A request already gone is not found.
func (s *Store) Withdraw(r *Request) error {
	q, err := ParseAddress(r.Queue)
	if err != nil {
		return err
	}
	if q.Kind != KindQueue {
		return fmt.Errorf("%w: request %s names %s, not a queue", ErrWrongKind, r.ID, r.Queue)
	}
	if err := s.MayChange(q); err != nil {
		return err
	}
	_, done, err := s.lockQueue(q)
	if err != nil {
		return err
	}
	defer done()
	served, err := s.requestServed(Address{Kind: KindAgent, Name: r.Agent}, r.ID)
	if err != nil {
		return err
	}
	if err := s.removeRequest(r, served); err != nil {
		return err
	}
	if served {
		return fmt.Errorf("%w: request %s brought an item to %s's mailbox", ErrServed, r.ID, r.Agent)
	}
	return nil
}

// A Served request and the item its claim moved.
type Served struct {
	Request *Request
	Item    *Message // nil when an earlier, stopped serve had claimed it
}

// ServeRequests serves the claim requests waiting for every queue homed
// on this host (see [RequestDir]) and returns what it served. A queue that
// runs empty leaves its remaining requests waiting.
func (s *Store) ServeRequests() ([]Served, error) {
	queues, err := s.dirNames(RequestDir)
	if err != nil {
		return nil, err
	}
	var served []Served
	for _, name := range queues {
		q := Address{Kind: KindQueue, Name: name}
		if !ValidAgent(name) || s.MayChange(q) != nil {
			continue
		}
		sv, err := s.serveQueue(q)
		served = append(served, sv...)
		if err != nil {
			return served, err
		}
	}
	return served, nil
}

// ServeQueue serves the claim requests waiting for queue q, as
// [Store.ServeRequests] does for every queue: on q's home only
// ([NotHomeError] elsewhere). The claim command calls it on the home
// before an agent there claims, so the items a request waits for are not
// all taken by the home's own agents between two syncs: the requests,
// older, go first.
func (s *Store) ServeQueue(q Address) ([]Served, error) {
	if q.Kind != KindQueue {
		return nil, fmt.Errorf("%w: %s is %s, not a queue", ErrWrongKind, q, article(q.Kind))
	}
	if !ValidAgent(q.Name) {
		return nil, &NameError{Kind: q.Kind, Name: q.Name, Why: "not a canonical name"}
	}
	if err := s.MayChange(q); err != nil {
		return nil, err
	}
	return s.serveQueue(q)
}

// serveQueue serves the requests waiting for queue q, homed here.
func (s *Store) serveQueue(q Address) ([]Served, error) {
	reqs, err := s.Requests(q)
	if err != nil {
		return nil, err
	}
	var served []Served
	for _, r := range reqs {
		a := Address{Kind: KindAgent, Name: r.Agent}
		done, err := s.requestServed(a, r.ID)
		if err != nil {
			return served, err
		}
		var m *Message
		if !done {
			m, err = s.claim(q, a, r.ID)
			if errors.Is(err, ErrQueueEmpty) {
				break // the rest wait for items
			}
			if errors.Is(err, errWithdrawn) {
				continue // withdrawn since the listing: nothing to serve
			}
			if err != nil {
				return served, err
			}
		}
		if err := s.removeRequest(r, true); err != nil {
			return served, err
		}
		served = append(served, Served{Request: r, Item: m})
	}
	return served, nil
}

// requestServed reports whether a claim in a's mailbox (or archive)
// records request id.
func (s *Store) requestServed(a Address, id string) (bool, error) {
	for _, archived := range []bool{false, true} {
		ms, err := s.List(a, ListOptions{All: true, Archived: archived})
		if err != nil {
			return false, err
		}
		for _, m := range ms {
			if m.Claim != nil && m.Claim.Request == id {
				return true, nil
			}
		}
	}
	return false, nil
}

// removeRequest removes request r's file; one already gone is no error
// when gone is true, else an error matching [fs.ErrNotExist].
func (s *Store) removeRequest(r *Request, gone bool) error {
	d, err := s.root.Dir(RequestDir + "/" + strings.TrimPrefix(r.Queue, "queue:"))
	if d == nil {
		if err == nil && !gone {
			err = fmt.Errorf("%w: claim request %s", fs.ErrNotExist, r.ID)
		}
		return err
	}
	defer d.Close()
	if err := d.Remove(r.ID + ".json"); err != nil && (!gone || !errors.Is(err, fs.ErrNotExist)) {
		return err
	}
	return d.Sync()
}

// errWithdrawn is claim's answer, under the claimants' lock, for a request
// whose file is gone: withdrawn since the serve listed it.
var errWithdrawn = errors.New("maildir: the claim request was withdrawn")

// requestWaits reports whether request id of queue q still has its file;
// claim asks under the claimants' lock, which Withdraw holds too.
func (s *Store) requestWaits(q Address, id string) (bool, error) {
	d, err := s.root.Dir(RequestDir + "/" + q.Name)
	if d == nil {
		return false, err
	}
	defer d.Close()
	_, err = d.Lstat(id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// dirNames lists the folders in folder, sorted.
func (s *Store) dirNames(folder string) ([]string, error) {
	return s.listNames(folder, func(e fs.DirEntry) (string, bool) {
		return e.Name(), e.IsDir() && !strings.HasPrefix(e.Name(), ".")
	})
}
