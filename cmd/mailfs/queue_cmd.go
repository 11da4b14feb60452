package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/watch"
)

type claimCmd struct {
	Queue   string         `arg:"" help:"The work queue, queue:NAME."`
	As      string         `required:"" env:"MAILFS_AGENT" placeholder:"AGENT" help:"The agent that takes the item into its mailbox."`
	ID      bool           `name:"id" help:"Print only the item's id, for a script."`
	Timeout *time.Duration `placeholder:"D" help:"On a host that is not the queue's home: ask even if this host's copy of the queue is empty, and give up waiting for the item after D (exit status 124; the request stays); 0 asks and does not wait. Default: wait while this host's copy holds an item."`
	jsonFlag
}

func (c *claimCmd) Help() string {
	return `Moves the oldest item waiting in the queue into the agent's mailbox and
records the claim in it (a "claim" key: the queue, the agent, the time).
Claims are serialised by a lock, and each item goes to exactly one claimant
however many run at once. Prints the item as show does (or as JSON).

Exit status 1, with nothing on stdout, when the queue is empty; 2 when the
queue does not exist or anything else fails. A worker's loop:

  while :; do
    id=$(mailfs claim queue:work --as me --id); status=$?
    [ $status -eq 1 ] && break        # the queue is empty: done
    [ $status -eq 0 ] || { echo "claim failed ($status)" >&2; exit 1; }
    mailfs show me "$id"              # ... do the work ...
    mailfs mark-read me "$id"         # done: no more reminders
  done

An item the agent claimed from the queue and has not marked read is
handed back first, on every host, with a note on stderr: a worker killed
after its claim but before it read the id claims again and gets the same
item, not a second one. Mark an item read when its work is done (or
release it), as the loop does.

"mailfs release" puts a claimed item back.

In a town on several machines only the queue's home host moves its items.
Elsewhere claim asks the home for one instead, and the loop above works
unchanged: it adds a claim request (state/requests/NAME/), says so on
stderr, and waits. The home serves requests at each of its syncs, oldest
first, one item each, and the item reaches the agent's mailbox with the
sync after that here (mailfs sync must run on both hosts): claim prints it
and exits 0, as on the home. It exits 1 when this host's copy of the
queue holds nothing a claim could take; the request, if one waits, stays
and is served when items come, and the next claim finds the item. An
item a request brought that the agent has not marked read yet is
returned first, without asking again. With --timeout, claim asks and
waits even while this host's copy of the queue is empty, so its request
is in line at the home when the next item comes. On the queue's home, a claim first
serves the requests waiting there (they are older), so the home's own
agents do not take every item between two syncs. While a request of the agent is
waiting, claim does not add another. --timeout bounds the wait (124).`
}

func (c *claimCmd) Run(a *app) error {
	if c.ID && c.JSON {
		return usage("", "--id and --json: choose one")
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	q, err := s.Resolve(c.Queue)
	if err != nil {
		return err
	}
	as, err := mailbox(c.As)
	if err != nil {
		return err
	}
	if c.Timeout != nil && *c.Timeout < 0 {
		return usage("write a duration such as 30s or 10m; 0 asks and does not wait", "--timeout must not be negative")
	}
	// The one claim path (watch.Claim, which the MCP claim tool runs too):
	// the agent's own held item first, on every host; on the queue's
	// home, the requests other hosts left first; elsewhere a request.
	got, err := watch.Claim(s, q, as, c.Timeout != nil)
	if got != nil && got.ServeErr != nil {
		a.warn(fmt.Errorf("serving the claim requests of %s first: %w", q, got.ServeErr))
	}
	if err == nil && got.Held {
		fmt.Fprintf(a.err, "mailfs: %s still holds %s, claimed from %s and not marked read: handing it back (mark it read when done, or release it)\n", as.Name, got.Item.ID, q)
	}
	var m *maildir.Message
	if err == nil {
		m = got.Item
		if m == nil {
			m, err = c.waitHome(a, s, q, as, got)
		}
	}
	if errors.Is(err, maildir.ErrQueueEmpty) {
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("queue empty: nothing waits in %s", q)}
	}
	if err != nil {
		return err
	}
	return printItem(a, m, c.ID, c.JSON)
}

// printItem prints a queue item a verb took or moved: only its id (--id),
// or as show does (or as JSON).
func printItem(a *app, m *maildir.Message, idOnly, asJSON bool) error {
	if idOnly {
		_, err := fmt.Fprintln(a.out, m.ID)
		return err
	}
	return printOne(a, m, asJSON)
}

// waitHome waits, on a host that is not the queue's home, for the item
// the claim request got (left or found by watch.Claim) brings.
func (c *claimCmd) waitHome(a *app, s *maildir.Store, q, as maildir.Address, got *watch.Claimed) (*maildir.Message, error) {
	r, home := got.Request, got.Home
	verb := "asked"
	if !got.Fresh {
		verb = "already asked"
	}
	wait := "waiting for it"
	if c.Timeout != nil && *c.Timeout == 0 {
		wait = "not waiting (--timeout 0s)"
	}
	fmt.Fprintf(a.err, "mailfs: %s is homed on %s: %s it for an item for %s (request %s); %s: %s serves it at its next sync, and it arrives with the sync after here\n",
		q, home, verb, as.Name, r.ID, wait, home)
	ctx, cancel := context.WithCancel(a.ctx)
	if c.Timeout != nil {
		ctx, cancel = context.WithTimeout(a.ctx, *c.Timeout)
	}
	defer cancel()
	m, err := watch.WaitServed(ctx, s, q, as, time.Second)
	for errors.Is(err, maildir.ErrQueueEmpty) && c.Timeout != nil && ctx.Err() == nil {
		// This host's copy is empty, and --timeout waits all the same
		// for what the request brings: look again shortly.
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
		m, err = watch.WaitServed(ctx, s, q, as, time.Second)
	}
	if errors.Is(err, maildir.ErrQueueEmpty) && ctx.Err() != nil {
		err = ctx.Err()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return nil, &exitStatus{code: exitTimeout, msg: fmt.Sprintf("timeout: request %s is not served yet; it stays, and a later claim finds what it brings", r.ID)}
	case a.ctx.Err() != nil:
		return nil, &exitStatus{code: exitError, msg: fmt.Sprintf("interrupted: request %s stays, and a later claim finds what it brings", r.ID)}
	}
	return m, err
}

type releaseCmd struct {
	Args  []string `arg:"" name:"agent-and-id" help:"[AGENT] ID: the mailbox holding the claimed item (default $MAILFS_AGENT's, else the one that holds the id) and the item."`
	Force bool     `help:"Release the item even if its claimant marked it done (read), handing finished work out again."`
}

func (c *releaseCmd) Help() string {
	return `Moves an item that "mailfs claim" took back to the queue it came from,
unread and without its claim record, for the next claimant. Only such an
item can be released: a copy delivered to the mailbox directly or by --cc
is refused, so a job can never be queued twice. The move is one rename
under the claimants' lock; a release killed part-way leaves the item either
still claimed or waiting in its queue.

On a host that is not the queue's home, an item a claim request brought
goes back as an add to the queue (waiting, unread, without its claim),
then leaves the mailbox; after the syncs the home hands it out again. A
release killed between the two leaves it in both, which fsck reports.

An item its claimant marked done (read) is finished work: releasing it
would hand it out again, so that is refused unless --force is given.`
}

func (c *releaseCmd) Run(a *app) error {
	s, t, err := a.oneTarget(c.Args, "release")
	if err != nil {
		return err
	}
	_, err = s.ReleaseSeen(t.box, t.id, maildir.Seen{Done: c.Force})
	return doneHint(err, "release")
}

// doneHint adds the way past a refusal to act on finished work.
func doneHint(err error, verb string) error {
	var se *maildir.StaleError
	if errors.As(err, &se) && se.Done {
		return withHint(err, fmt.Sprintf("the claimant finished it; give --force to %s it anyway", verb))
	}
	return err
}

// oneTarget opens the store for writing and resolves args, [AGENT] ID, to
// the one message a verb acts on.
func (a *app) oneTarget(args []string, verb string) (*maildir.Store, target, error) {
	s, err := a.open()
	if err != nil {
		return nil, target{}, err
	}
	ts, err := a.targets(s, args)
	if err == nil && len(ts) != 1 {
		err = usage("give [AGENT] ID", "%s one item at a time", verb)
	}
	if err != nil {
		return nil, target{}, err
	}
	return s, ts[0], nil
}

type reassignCmd struct {
	Args  []string `arg:"" name:"agent-and-id" help:"[AGENT] ID: the mailbox holding the claimed item (default $MAILFS_AGENT's, else the one that holds the id) and the item."`
	To    string   `required:"" placeholder:"AGENT" help:"The agent that takes the claim over."`
	Force bool     `help:"Reassign the item even if its claimant marked it done (read)."`
	By    string   `placeholder:"NAME" help:"Who is reassigning it, recorded in the town's audit log (state/audit/) with the time. Default: no entry."`
	ID    bool     `name:"id" help:"Print only the item's id, for a script."`
	jsonFlag
}

func (c *reassignCmd) Help() string {
	return `Moves an item that "mailfs claim" took into another agent's mailbox,
unread, with a claim record of the new agent's (its queue, the time now):
what a release and the other agent's claim of that very item would do, with
no claimant able to take it between the two. Only a claimed item can be
reassigned, as with release. Under the claimants' lock the item moves
back into its queue, takes its new claim record there, and moves on; a
reassign killed part-way leaves it with the old claimant, waiting in its
queue, or with the new one: never in two places or none.

Run it on the queue's home host, which must also be both agents' (exit 2
naming the home otherwise). With --by NAME the reassign is recorded in the
audit log (mailfs audit), as the web view's are. Prints the item as show
does (or as JSON). An item its claimant marked done (read) is refused
unless --force is given. An agent that had no mailbox gets one, and a
warning names it, with the agents its name is close to: a slip ("humna")
is seen, and a hand-off to a new agent still works.`
}

func (c *reassignCmd) Run(a *app) error {
	if c.ID && c.JSON {
		return usage("", "--id and --json: choose one")
	}
	if c.To == "" { // not $MAILFS_AGENT's to give: say which flag
		return usage("give --to the agent who takes the item over: --to nux", "--to is empty")
	}
	s, t, err := a.oneTarget(c.Args, "reassign")
	if err != nil {
		return err
	}
	to, err := mailbox(c.To)
	if err != nil {
		return err
	}
	if c.By != "" {
		if _, err := maildir.ParseAgent(c.By); err != nil {
			return usage("give --by an agent id, such as a person's name", "%v", err)
		}
	}
	before, _ := s.Agents() // a reassign to a slip ("humna") creates its mailbox, as a send does: say so
	m, err := s.ReassignSeen(t.box, t.id, to, maildir.Seen{Done: c.Force})
	if c.By != "" {
		e := maildir.AuditEntry{Action: "reassign", Actor: c.By, Addr: "cli", Agent: t.box.Name, Item: t.id, To: to.Name}
		if m != nil {
			e.Item, e.Queue = m.ID, m.Claim.Queue
		}
		if err != nil {
			e.Error = err.Error()
		}
		if _, rerr := s.Record(e); rerr != nil && err == nil {
			err = fmt.Errorf("reassigned, but the audit entry was not written: %w", rerr)
		}
	}
	if err != nil {
		return doneHint(err, "reassign")
	}
	newMailboxes(a, before, []*maildir.Message{m})
	return printItem(a, m, c.ID, c.JSON)
}

type queueCmd struct {
	Create   queueCreateCmd   `cmd:"" help:"Create a work queue."`
	List     queueListCmd     `cmd:"" help:"List the work queues with their waiting counts."`
	Show     queueShowCmd     `cmd:"" help:"List the items waiting in a queue."`
	Requests queueRequestsCmd `cmd:"" help:"List the claim requests in this host's tree, or withdraw them."`
}

func (c *queueCmd) Help() string {
	return `A work queue is a folder, state/queue/<name>/, of messages waiting for a
claimant: "mailfs queue create NAME" makes one, "mailfs send queue:NAME ..."
adds an item, "mailfs claim queue:NAME --as AGENT" takes the oldest,
"mailfs release" puts one back. Sending to or claiming from a queue that
does not exist is an error, so a typo cannot strand work.`
}

type queueCreateCmd struct {
	Names []string `arg:"" name:"name" help:"The queues to create (with or without queue:)."`
}

func (c *queueCreateCmd) Help() string {
	return `Creates each queue; one that exists already is left as it is. A name that an
agent's mailbox, a group or a channel has is refused.`
}

func (c *queueCreateCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	for _, n := range c.Names {
		if err := s.CreateQueue(n); err != nil {
			return err
		}
	}
	return nil
}

type queueListCmd struct {
	jsonRows
}

func (c *queueListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	names, err := s.Queues()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, n := range names {
		entries, _, err := s.Entries(maildir.Address{Kind: maildir.KindQueue, Name: n}, false)
		if err != nil {
			return err
		}
		if c.JSON {
			if err := printValue(a.out, struct {
				Queue   string `json:"queue"`
				Waiting int    `json:"waiting"`
			}{"queue:" + n, len(entries)}); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{"queue:" + n, strconv.Itoa(len(entries))})
	}
	return table(a.out, []string{"QUEUE", "WAITING"}, rows)
}

type queueShowCmd struct {
	Queue string `arg:"" help:"The queue, queue:NAME (the prefix may be left out)."`
	jsonFlag
}

func (c *queueShowCmd) Run(a *app) error {
	q, err := maildir.ParseAddress(c.Queue)
	if err != nil {
		return err
	}
	if q.Kind == maildir.KindAgent {
		q.Kind = maildir.KindQueue // "queue show work" means queue:work
	} else if q.Kind != maildir.KindQueue {
		return usage(`"mailfs inbox" lists other folders`, "queue show takes a queue, not %s", q)
	}
	return (&inboxCmd{Agent: q.String(), All: true, By: "time", jsonFlag: c.jsonFlag}).Run(a)
}

type queueRequestsCmd struct {
	Queue    string `arg:"" optional:"" help:"Only this queue's requests, queue:NAME (the prefix may be left out)."`
	Agent    string `placeholder:"AGENT" help:"Only the requests for this agent."`
	ID       string `name:"id" placeholder:"ID" help:"Only the request with this id."`
	Withdraw bool   `help:"Withdraw the requests listed, so no item is claimed for them; on the queue's home host."`
	jsonRows
}

func (c *queueRequestsCmd) Help() string {
	return `A claim on a host that is not the queue's home leaves a claim request
(state/requests/NAME/), which the home serves at its syncs: one item each,
oldest first. This lists the requests in this host's tree: waiting to be
served, or (off the home) served there and not yet removed here by a sync.
An agent that asked and then stopped still has its request served: the
item waits unread in its mailbox until it claims again (and gets it) or a
person releases it.

--withdraw removes the requests listed (narrow them with QUEUE, --agent
and --id), on the queue's home host only (exit 2 naming the home
elsewhere), under the claimants' lock: a request withdrawn is served no
item. One served already is removed and reported (exit 2): its item is in
the agent's mailbox, for "mailfs release".`
}

func (c *queueRequestsCmd) Run(a *app) error {
	s, err := a.open()
	if err != nil {
		return err
	}
	reqs, err := s.AllRequests()
	if err != nil {
		return err
	}
	var q maildir.Address
	if c.Queue != "" {
		if q, err = maildir.ParseAddress(c.Queue); err != nil {
			return err
		}
		if q.Kind == maildir.KindAgent {
			q.Kind = maildir.KindQueue // "queue requests work" means queue:work
		} else if q.Kind != maildir.KindQueue {
			return usage("", "queue requests takes a queue, not %s", q)
		}
	}
	var agent maildir.Address
	if c.Agent != "" {
		if agent, err = mailbox(c.Agent); err != nil {
			return err
		}
	}
	var rows [][]string
	var failed error
	n := 0
	for _, r := range reqs {
		if (c.Queue != "" && r.Queue != q.String()) || (c.Agent != "" && r.Agent != agent.Name) || (c.ID != "" && r.ID != c.ID) {
			continue
		}
		n++
		status := "waiting"
		if c.Withdraw {
			status = "withdrawn"
			if err := s.Withdraw(r); errors.Is(err, maildir.ErrServed) {
				status = "served"
				failed = errors.Join(failed, err)
			} else if err != nil {
				return err
			}
		}
		if c.JSON {
			if err := printValue(a.out, struct {
				ID     string    `json:"id"`
				Queue  string    `json:"queue"`
				Agent  string    `json:"agent"`
				Host   string    `json:"host"`
				At     time.Time `json:"at"`
				Status string    `json:"status"`
			}{r.ID, r.Queue, r.Agent, r.Host, r.At, status}); err != nil {
				return err
			}
			continue
		}
		rows = append(rows, []string{r.ID, r.Queue, r.Agent, r.Host, r.At.Format(time.RFC3339), status})
	}
	if !c.JSON && len(rows) > 0 {
		if err := table(a.out, []string{"ID", "QUEUE", "AGENT", "HOST", "AT", "STATUS"}, rows); err != nil {
			return err
		}
	}
	if failed != nil {
		return failed
	}
	if c.ID != "" && n == 0 {
		return &exitStatus{code: exitNothing, msg: fmt.Sprintf("no claim request %s here", c.ID)}
	}
	return nil
}

type channelCmd struct {
	Create channelCreateCmd `cmd:"" help:"Create a channel, or change its retention."`
	List   channelListCmd   `cmd:"" help:"List the channels with their retention."`
}

func (c *channelCmd) Help() string {
	return `A channel is a folder, state/channel/<name>/, of broadcast posts:
"mailfs send channel:NAME ..." posts, "mailfs inbox channel:NAME" and
"mailfs watch channel:NAME" read it. Its retention, in state/channel/<name>.json,
moves the oldest posts beyond a count, and those older than an age, into
its archive/ after each post and at each full archive sweep.`
}

type channelCreateCmd struct {
	Name        string   `arg:"" help:"The channel (with or without channel:)."`
	RetainCount *int     `name:"retain-count" placeholder:"N" help:"Keep at most N posts (0: no limit). Left as it is when not given."`
	RetainHours *float64 `name:"retain-hours" placeholder:"H" help:"Keep posts at most H hours (0: no limit). Left as it is when not given."`
}

func (c *channelCreateCmd) Help() string {
	return `Creates the channel, or changes the limits given and only those: on an
existing channel, "--retain-count 0" lifts the count limit and keeps the
age limit. A name that an agent's mailbox, a group or a queue has is
refused.`
}

func (c *channelCreateCmd) Run(a *app) error {
	if (c.RetainCount != nil && *c.RetainCount < 0) || (c.RetainHours != nil && *c.RetainHours < 0) {
		return usage("give 0 or more; 0 lifts the limit", "--retain-count and --retain-hours must not be negative")
	}
	s, err := a.open()
	if err != nil {
		return err
	}
	return s.CreateChannel(c.Name, maildir.ChannelChange{RetainCount: c.RetainCount, RetainHours: c.RetainHours})
}

type channelListCmd struct {
	jsonRows
}

func (c *channelListCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	names, err := s.Channels()
	if err != nil {
		return err
	}
	var rows [][]string
	for _, n := range names {
		// A channel that cannot be read (its configuration missing or
		// broken, its folder unreadable) is listed as such, with a
		// warning: the others are still listed.
		cfg, err := s.Channel(n)
		posts := "-"
		if err == nil {
			var entries []maildir.Entry
			entries, _, err = s.Entries(maildir.Address{Kind: maildir.KindChannel, Name: n}, false)
			posts = strconv.Itoa(len(entries))
		}
		if err != nil {
			a.warn(err)
		}
		if c.JSON {
			row := struct {
				Channel string `json:"channel"`
				Posts   int    `json:"posts"`
				maildir.ChannelConfig
				Error string `json:"error,omitempty"`
			}{Channel: "channel:" + n, ChannelConfig: cfg}
			row.Posts, _ = strconv.Atoi(posts)
			if err != nil {
				row.Error = err.Error()
			}
			if err := printValue(a.out, row); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			rows = append(rows, []string{"channel:" + n, posts, "malformed", "-"})
			continue
		}
		rows = append(rows, []string{"channel:" + n, posts, strconv.Itoa(cfg.RetainCount),
			strconv.FormatFloat(cfg.RetainHours, 'g', -1, 64)})
	}
	if c.JSON {
		return nil
	}
	return table(a.out, []string{"CHANNEL", "POSTS", "RETAIN-COUNT", "RETAIN-HOURS"}, rows)
}
