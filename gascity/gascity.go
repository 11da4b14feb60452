// Package gascity serves Gas City's exec mail protocol on top of maildir:
// Gas City runs "<path> <op> [arg]" for each mail operation and exchanges
// JSON (GC_MAIL=exec:<path>). Both the mailfs command ("mailfs gascity",
// or the binary called mailfs-gascity) and the slim cmd/mailfs-gascity
// binary serve it through [Run].
//
// The protocol, not mailfs, sets the rules here: JSON on stdout and nothing
// else; an empty list as no output at all; exit status 2 for an unknown op
// and for nothing else (Gas City reads 2 as "not supported"); any other
// failure exits 1 with the reason on stderr. Ids arrive without a mailbox
// and are found across every mailbox and archive; an id that could lead
// outside the root is refused.
//
// It also knows how Gas City finds its city ([CityRoot], city.go): every
// agent of a city shares one root, wherever in the city (and in which
// rig) it works, so the programs that open a town for Gas City resolve
// the root through it. Run is given the opener, so this package imports
// no program's glue.
package gascity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// gcMessage is a message as Gas City reads it.
type gcMessage struct {
	ID        string    `json:"id"`
	From      string    `json:"from"`
	To        string    `json:"to"`
	Subject   string    `json:"subject"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	Read      bool      `json:"read"`
	ThreadID  string    `json:"thread_id,omitempty"`
	ReplyTo   string    `json:"reply_to,omitempty"`
	Priority  int       `json:"priority"`
	CC        []string  `json:"cc,omitempty"`
}

func toGC(m *maildir.Message) gcMessage {
	return gcMessage{
		ID: m.ID, From: m.From, To: m.To, Subject: m.Subject, Body: m.Body,
		CreatedAt: m.Timestamp, Read: m.Read, ThreadID: m.Thread, ReplyTo: m.ReplyTo,
		Priority: m.Priority.Rank(), // urgent 0, high 1, normal 2, low 3
		CC:       m.CC,
	}
}

// gcInput is what send and reply read from stdin.
type gcInput struct {
	From    string `json:"from"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// errAlreadyArchived is what Gas City looks for on stderr.
var errAlreadyArchived = errors.New("already archived")

// errGone is how Gas City is told a message is not there: since its PR
// #4350 (2026-07-18) the exec provider looks for this marker on stderr
// (internal/mail/exec/exec.go, messageNotFoundMarker, checked by
// normalizeMessageError for get, read, mark-read, mark-unread and reply)
// and reports mail.ErrNotFound, which its API answers with 404.
var errGone = errors.New("gc-mail-error:not-found")

// Run serves one call, "<op> [arg]", reading stdin and writing stdout and
// stderr, and returns the exit status. The root is $MAILFS_ROOT; else the
// city's, found as Gas City finds its city (see CityRoot), so that mail never
// splits by working directory or rig; else the nearest .chipset above the
// working directory.
//
// open opens the town's store, with the city's root (the program that
// serves Gas City gives it: cmd/internal/citytown.Open, which
// resolves the root with CityRoot).
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer, open func(warn func(error)) (*maildir.Store, error)) (code int) {
	defer func() {
		if r := recover(); r != nil { // a panic would exit 2, which means "unknown op"
			fmt.Fprintf(stderr, "mailfs: gascity: internal error: %v\n", r)
			code = 1
		}
	}()
	if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
		// A person, not Gas City, asks: no op is named "--help".
		io.WriteString(stdout, usage)
		return 0
	}
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprintln(stderr, "mailfs: gascity: usage: mailfs-gascity <op> [arg] (mailfs-gascity --help says more)")
		return 1
	}
	op, arg := args[0], ""
	if len(args) == 2 {
		arg = args[1]
	}
	handler, ok := gcOpNamed(op)
	if !ok {
		fmt.Fprintf(stderr, "mailfs: gascity: unknown op %q (the ops: %s)\n", op, strings.Join(ops, ", "))
		return 2
	}
	if op != "ensure-running" && arg == "" {
		fmt.Fprintf(stderr, "mailfs: gascity: %s needs an argument\n", op)
		return 1
	}
	s, err := open(func(err error) { fmt.Fprintf(stderr, "mailfs: warning: %v\n", err) })
	if err != nil {
		fmt.Fprintf(stderr, "mailfs: gascity: %v\n", err)
		return 1
	}
	defer s.Close()
	s.Verbatim = true // Gas City's addresses, not Gas Town's folding
	out, err := handler(&gcCall{store: s, arg: arg, stdin: stdin})
	if err != nil {
		fmt.Fprintf(stderr, "mailfs: gascity %s: %v\n", op, err)
		return 1
	}
	if out != nil {
		b, err := json.Marshal(out)
		if err != nil {
			fmt.Fprintf(stderr, "mailfs: gascity %s: %v\n", op, err)
			return 1
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return 1
		}
	}
	return 0
}

// gcCall is one call's input.
type gcCall struct {
	store *maildir.Store
	arg   string
	stdin io.Reader
}

// A gcOp returns what to print as JSON (nil: print nothing).
type gcOp func(c *gcCall) (any, error)

// ops are the ops Run serves (gcOpNamed has a handler for each), in the
// order Gas City's exec provider documents them.
var ops = []string{"ensure-running", "send", "reply", "inbox", "check", "all", "get", "read", "mark-read", "mark-unread", "archive", "delete", "thread", "count"}

// usage is what "mailfs-gascity --help" prints: what the binary is, how
// Gas City runs it, and its exit statuses (Gas City's, not mailfs's).
const usage = `Usage: mailfs-gascity <op> [<arg>]

Gas City's exec mail provider on a mailfs root: set
GC_MAIL=exec:/path/to/mailfs-gascity, and Gas City runs it once per mail
operation, with JSON on standard input and output.

Ops: ensure-running, send, reply, inbox, check, all, get, read, mark-read,
mark-unread, archive, delete, thread, count.

The root is $MAILFS_ROOT; else the city's (found as gc finds its city:
"mailfs gascity --help" gives the order); else the nearest .chipset in the
working directory or above it.

Exit status, Gas City's contract: 0 success; 2 an op it does not support;
1 every other failure, with the reason on standard error.
`

// gcOpNamed is the handler of Gas City's op (false: no such op). A switch,
// not a map: a table built at start-up is paid by every mailfs command.
func gcOpNamed(op string) (gcOp, bool) {
	switch op {
	case "ensure-running":
		return func(*gcCall) (any, error) { return nil, nil }, true
	case "send":
		return gcSend, true
	case "reply":
		return gcReply, true
	case "inbox", "check":
		return gcList(false), true
	case "all":
		return gcList(true), true
	case "get":
		return gcGet, true
	case "read":
		return gcRead, true
	case "mark-read":
		return gcMark(true), true
	case "mark-unread":
		return gcMark(false), true
	case "archive", "delete": // archive is delete in Gas City's model
		return gcArchive, true
	case "thread":
		return gcThread, true
	case "count":
		return gcCount, true
	}
	return nil, false
}

// recipient maps a Gas City recipient (human, rig/name, binding.name, a
// session id) to its mailbox, exactly as written: Gas City keeps
// "myrig/witness", "myrig.witness" and "MyRig/Witness" apart, and
// "frontend/mayor" is not the city's mayor (see maildir.VerbatimMailbox).
func (c *gcCall) recipient() (maildir.Address, error) {
	agent, err := maildir.VerbatimMailbox(c.arg)
	return maildir.Address{Kind: maildir.KindAgent, Name: agent}, err
}

// live resolves the message id as Gas City sees its mail: one archived
// (by Gas City's archive or delete, or by the sweep) or deleted has left
// every view, as an id nobody sent never was in one — all three are
// [errGone], which Gas City reads as not found. Archived mail stays on
// disk, for audit and for mailfs's own verbs (show, thread, restore).
func (c *gcCall) live() (*maildir.Message, error) {
	m, err := c.find()
	switch {
	case errors.Is(err, maildir.ErrNotFound):
		return nil, fmt.Errorf("%w: message not found: %s", errGone, c.arg)
	case err != nil:
		return nil, err
	case m.Archived:
		return nil, fmt.Errorf("%w: message archived: %s", errGone, m.ID)
	}
	return m, nil
}

// find resolves the message id, which arrives without a mailbox.
func (c *gcCall) find() (*maildir.Message, error) {
	if strings.Contains(c.arg, "..") {
		return nil, fmt.Errorf("%w %q", maildir.ErrInvalidID, c.arg)
	}
	if _, err := maildir.ParseID(c.arg); err != nil {
		return nil, err
	}
	return c.store.Find(c.arg)
}

func (c *gcCall) input() (gcInput, error) {
	var in gcInput
	data, err := io.ReadAll(io.LimitReader(c.stdin, 2*maildir.MaxSize))
	if err != nil {
		return in, err
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return in, fmt.Errorf("reading the message from stdin: %w", err)
	}
	if in.From == "" {
		return in, errors.New(`the message on stdin has no "from"`)
	}
	return in, nil
}

func list(msgs []*maildir.Message) any {
	if len(msgs) == 0 {
		return nil // nothing at all, not []
	}
	out := make([]gcMessage, len(msgs))
	for i, m := range msgs {
		out[i] = toGC(m)
	}
	return out
}

func gcSend(c *gcCall) (any, error) {
	_, err := c.recipient() // validates; the message records c.arg as written
	if err != nil {
		return nil, err
	}
	in, err := c.input()
	if err != nil {
		return nil, err
	}
	sent, err := c.store.Send(&maildir.Message{From: in.From, To: "agent:" + c.arg, Subject: in.Subject, Body: in.Body})
	if err != nil {
		return nil, err
	}
	return toGC(sent[0]), nil
}

func gcReply(c *gcCall) (any, error) {
	orig, err := c.live()
	if err != nil {
		return nil, err
	}
	in, err := c.input()
	if err != nil {
		return nil, err
	}
	sent, err := c.store.ReplyTo(orig, &maildir.Message{From: in.From, Subject: in.Subject, Body: in.Body})
	if err != nil {
		return nil, err
	}
	return toGC(sent[0]), nil
}

func gcList(all bool) gcOp {
	return func(c *gcCall) (any, error) {
		to, err := c.recipient()
		if err != nil {
			return nil, err
		}
		msgs, err := c.store.List(to, maildir.ListOptions{All: all})
		return list(msgs), err
	}
}

func gcGet(c *gcCall) (any, error) {
	m, err := c.live()
	if err != nil {
		return nil, err
	}
	return toGC(m), nil
}

func gcRead(c *gcCall) (any, error) {
	m, err := c.live()
	if err != nil {
		return nil, err
	}
	if m, err = c.store.MarkRead(box(m), m.ID); err != nil {
		return nil, err
	}
	return toGC(m), nil
}

func gcMark(read bool) gcOp {
	return func(c *gcCall) (any, error) {
		m, err := c.live()
		if err != nil {
			return nil, err
		}
		if read {
			_, err = c.store.MarkRead(box(m), m.ID)
		} else {
			_, err = c.store.MarkUnread(box(m), m.ID)
		}
		return nil, err
	}
}

func gcArchive(c *gcCall) (any, error) {
	m, err := c.find()
	if err != nil {
		return nil, err
	}
	if m.Archived {
		return nil, fmt.Errorf("%w: %s", errAlreadyArchived, m.ID)
	}
	errs, err := c.store.Archive(box(m), []string{m.ID})
	if err == nil {
		err = errs[0]
	}
	if errors.Is(err, maildir.ErrNotFound) { // archived by a concurrent call
		err = fmt.Errorf("%w: %s", errAlreadyArchived, m.ID)
	}
	return nil, err
}

func gcThread(c *gcCall) (any, error) {
	if strings.Contains(c.arg, "..") {
		return nil, fmt.Errorf("%w %q", maildir.ErrInvalidID, c.arg)
	}
	msgs, err := c.store.Thread(c.arg)
	if errors.Is(err, maildir.ErrNotFound) {
		return nil, nil
	}
	// Archived mail has left every view in Gas City's model.
	return list(slices.DeleteFunc(msgs, func(m *maildir.Message) bool { return m.Archived })), err
}

func gcCount(c *gcCall) (any, error) {
	to, err := c.recipient()
	if err != nil {
		return nil, err
	}
	n, err := c.store.Count(to)
	return struct {
		Total  int `json:"total"`
		Unread int `json:"unread"`
	}{n.Total, n.Unread}, err
}

// box is the folder m sits in.
func box(m *maildir.Message) maildir.Address { return m.Box }
