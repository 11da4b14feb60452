package maildir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Homes (SPEC §10). A town may span hosts that share the state tree
// through git. Each mailbox, queue, channel and group has a home host,
// recorded in the committed tree; any host may add files anywhere (a send
// is an add), and only the home host renames, rewrites or deletes an
// object's files. Two hosts then never change the same file, so merging
// their commits never conflicts and never resurrects or duplicates mail.
const (
	// HomeDir holds one record per homed object:
	// state/homes/<kind>/<name>.json, {"host": …, "since": …}. It is
	// committed; a record is added once and rewritten only by its host.
	HomeDir = "state/homes"
	// HostFile names this host: runtime/host, one line, never committed.
	HostFile = "runtime/host"
)

var (
	// ErrNotHome is matched by the error a change to another host's object
	// returns (a [*NotHomeError]), and by the error for an object with no
	// home on a named host. Nothing was changed.
	ErrNotHome = errors.New("maildir: not this object's home host")

	// ErrUnnamedHost is returned (matching [ErrNotHome] too) when a home
	// is claimed on a host that has no name.
	ErrUnnamedHost error = &narrower{ErrNotHome, "this host has no name"}

	// ErrInvalidHost is returned for a host name that is not one path
	// segment of a-z 0-9 . _ - (the rules for agent ids).
	ErrInvalidHost = errors.New("maildir: invalid host name")
)

// narrower is a sentinel error that matches a wider one too, as
// fmt.Errorf("%w: …") would make it, but without fmt at start-up: a
// package-level fmt.Errorf ran fmt's first call in every command, 0.1 ms
// of a prompt hook that otherwise never formats.
type narrower struct {
	wider error
	text  string
}

func (e *narrower) Error() string { return e.wider.Error() + ": " + e.text }
func (e *narrower) Unwrap() error { return e.wider }

// A NotHomeError says which host may change an object that this host may
// not. It matches [ErrNotHome].
type NotHomeError struct {
	Object Address
	Home   string // the object's home host; "" when it has none
	Host   string // this host; "" when it has no name
}

func (e *NotHomeError) Error() string {
	obj := e.Object.String()
	switch {
	case e.Home == "":
		return fmt.Sprintf("%s has no home host, and in a town of named hosts only an object's home may change its files", obj)
	case e.Host == "":
		return fmt.Sprintf("%s is homed on host %s; this host has no name, and only %s may change its files", obj, e.Home, e.Home)
	}
	return fmt.Sprintf("%s is homed on host %s, and only %s may mark, move, claim or delete its files (this is host %s)", obj, e.Home, e.Home, e.Host)
}

// Is makes a NotHomeError match ErrNotHome.
func (e *NotHomeError) Is(target error) bool { return target == ErrNotHome }

// A Home is an object's home record.
type Home struct {
	Object Address   `json:"-"`
	Host   string    `json:"host"`
	Since  time.Time `json:"since"`
}

// ParseHost checks a host name: the rules of an agent id, lowercased.
func ParseHost(name string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(name))
	if !ValidAgent(h) {
		return "", fmt.Errorf("%w %q: use 1-64 of a-z 0-9 . _ -, not starting with . or -", ErrInvalidHost, name)
	}
	return h, nil
}

// LocalHost returns this host's name: [Store.Host] when set, else the
// one in runtime/host, else "" (a host with no name: a town on one
// machine, where every object is local).
func (s *Store) LocalHost() (string, error) {
	if s.Host != "" {
		return ParseHost(s.Host)
	}
	d, err := s.root.Dir("runtime")
	if d == nil || err != nil {
		return "", err
	}
	defer d.Close()
	data, _, err := d.ReadFile("host", 1024)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	h, err := ParseHost(string(data))
	if err != nil {
		return "", fmt.Errorf("%s: %w", HostFile, err)
	}
	return h, nil
}

// SetLocalHost names this host, in runtime/host.
func (s *Store) SetLocalHost(name string) error {
	h, err := ParseHost(name)
	if err != nil {
		return err
	}
	d, err := s.mkdir("runtime")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Replace("host", []byte(h+"\n"))
}

// homeFolder is the folder of kind's home records and the record's name.
func homeFile(a Address) (folder, name string) {
	return HomeDir + "/" + a.Kind.String(), a.Name + ".json"
}

// HomeOf returns a's home record; a Home with no Host when it has none.
func (s *Store) HomeOf(a Address) (Home, error) {
	h := Home{Object: a}
	folder, name := homeFile(a)
	d, err := s.root.Dir(folder)
	if d == nil || err != nil {
		return h, err
	}
	defer d.Close()
	data, _, err := d.ReadFile(name, 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, err
	}
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("%s/%s: %w", folder, name, err)
	}
	if _, err := ParseHost(h.Host); err != nil {
		return Home{Object: a}, fmt.Errorf("%s/%s: %w", folder, name, err)
	}
	h.Object = a
	return h, nil
}

// Homes lists every home record, by kind then name.
func (s *Store) Homes() ([]Home, error) {
	var all []Home
	for _, k := range []Kind{KindAgent, KindQueue, KindChannel, KindGroup} {
		names, err := s.homedNames(k)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			h, err := s.HomeOf(Address{Kind: k, Name: n})
			if err != nil {
				return nil, err
			}
			all = append(all, h)
		}
	}
	return all, nil
}

// homedNames lists the names of kind's objects that have a home record,
// sorted, reading the folder of records but none of them.
func (s *Store) homedNames(k Kind) ([]string, error) { return s.jsonNames(HomeDir + "/" + k.String()) }

// MayChange returns nil when this host may rename, rewrite or delete a's
// files, else an error matching [ErrNotHome] that names the home host.
// An object with no home is local to a host with no name, and to nobody
// on a named host. A host with no name may not change an object homed
// anywhere.
func (s *Store) MayChange(a Address) error {
	host, err := s.LocalHost()
	if err != nil {
		return err
	}
	home, err := s.HomeOf(a)
	if err != nil {
		return err
	}
	if home.Host == host && (host != "" || home.Host == "") {
		return nil
	}
	return &NotHomeError{Object: a, Home: home.Host, Host: host}
}

// ClaimHome records this (named) host as a's home. Claiming an object
// already homed here is not an error; one homed elsewhere is refused with
// a [*NotHomeError]. The record is added, never replaced, so two hosts
// claiming at once are settled by git: the first to push keeps it (see
// package gitsync).
func (s *Store) ClaimHome(a Address) error {
	host, err := s.LocalHost()
	if err != nil {
		return err
	}
	if host == "" {
		return ErrUnnamedHost
	}
	return s.writeHome(a, host, host, false)
}

// MoveHome makes to the home of a. Only a's home host may move it.
func (s *Store) MoveHome(a Address, to string) error {
	to, err := ParseHost(to)
	if err != nil {
		return err
	}
	if err := s.MayChange(a); err != nil {
		return err
	}
	host, err := s.LocalHost()
	if err != nil {
		return err
	}
	return s.writeHome(a, host, to, true)
}

// writeHome writes a's record naming host to; with replace false an
// existing record is kept (and must name host).
func (s *Store) writeHome(a Address, host, to string, replace bool) error {
	if err := validAddressName(a); err != nil {
		return err
	}
	folder, name := homeFile(a)
	d, err := s.mkdir(folder)
	if err != nil {
		return err
	}
	defer d.Close()
	data, _ := json.MarshalIndent(Home{Host: to, Since: s.now().UTC()}, "", "  ")
	data = append(data, '\n')
	if replace {
		return d.Replace(name, data)
	}
	err = d.Create(name, data)
	if errors.Is(err, fs.ErrExist) {
		h, herr := s.HomeOf(a)
		if herr != nil {
			return herr
		}
		if h.Host == host {
			return nil
		}
		return &NotHomeError{Object: a, Home: h.Host, Host: host}
	}
	return err
}

// homeHere records this host as the home of an object it has just
// created, when the host has a name.
func (s *Store) homeHere(a Address) error {
	host, err := s.LocalHost()
	if err != nil || host == "" {
		return err
	}
	return s.writeHome(a, host, host, false)
}

// homed reports whether a has a home record.
func (s *Store) homed(a Address) bool {
	h, err := s.HomeOf(a)
	return err == nil && h.Host != ""
}

// validAddressName checks that a's name is a canonical name of its kind.
func validAddressName(a Address) error {
	if !ValidAgent(a.Name) {
		return &NameError{Kind: a.Kind, Name: a.Name, Why: "not a canonical name"}
	}
	return nil
}

// Homeless returns every mailbox, queue, channel and group that has no
// home record, by kind then name.
func (s *Store) Homeless() ([]Address, error) {
	var out []Address
	for _, k := range []Kind{KindAgent, KindQueue, KindChannel, KindGroup} {
		var names []string
		var err error
		switch k {
		case KindAgent:
			names, err = s.Agents()
		case KindQueue:
			names, err = s.Queues()
		case KindChannel:
			names, err = s.Channels()
		case KindGroup:
			names, err = s.Groups()
		}
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			a := Address{Kind: k, Name: n}
			if !s.homed(a) {
				out = append(out, a)
			}
		}
	}
	return out, nil
}
