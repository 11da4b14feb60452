package hook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// DefaultBudget is the time a prompt hook may take when none is given.
const DefaultBudget = 3 * time.Second

// A Collector gathers an agent's reminder: its unread mail and its
// nudges. Set the fields before use; a Collector may be used by several
// goroutines at once.
type Collector struct {
	Store  *maildir.Store
	Nudges *nudgeq.Queue
	Budget time.Duration // 0 means DefaultBudget

	// claim, fromIndex and list stand in for Nudges.ClaimContext,
	// Store.ListFromIndex and Store.ListContext in tests.
	claim     func(ctx context.Context, agent string) (*nudgeq.Batch, error)
	fromIndex func(ctx context.Context, agent string) ([]*maildir.Message, error)
	list      func(ctx context.Context, agent string) ([]*maildir.Message, error)
}

// A Result is one collected reminder. Print Reminder.String(), then call
// Commit.
type Result struct {
	Reminder *Reminder
	Errs     []error // problems met, each once; the reminder has what could be had
	Held     Held    // what do not disturb held back (see SetDND)

	batch *nudgeq.Batch
}

// Held is what do not disturb held back from a reminder: still delivered,
// still queued, shown once it is off.
type Held struct {
	Mail   int // normal and low unread messages left out
	Nudges int // normal nudges returned to the queue
}

// Commit removes the nudges the reminder shows from the queue. Call it
// only after the reminder has been printed.
func (r *Result) Commit() error {
	if r.batch == nil {
		return nil
	}
	err := r.batch.Commit()
	r.batch = nil
	return err
}

// Collect claims agent's nudges and lists its unread mail, and
// returns what it has when both are done or when the budget (or ctx) runs
// out, whichever comes first; then Reminder.Partial says why. agent is an
// agent id (not a group, queue or channel). Nothing it started outlives
// it: a listing cut short by the budget stops at its next file, keeps no
// index, and has ended when Collect returns.
func (c *Collector) Collect(ctx context.Context, agent string) *Result {
	res := &Result{}
	agent, err := maildir.ParseAgent(agent) // the reminder names the mailbox one way
	if err != nil {
		res.Errs = append(res.Errs, err)
		return res
	}
	res.Reminder = &Reminder{Agent: agent}
	budget := c.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	defer c.holdBack(res, agent)
	mail, claim, listed := c.read(ctx, agent)
	res.gather(ctx, budget, mail, claim)
	cancel()
	<-listed
	return res
}

// What the two reads of a collection bring back.
type (
	mailRead struct {
		msgs []*maildir.Message
		err  error
	}
	claimRead struct {
		b   *nudgeq.Batch
		err error
	}
)

// fewFiles is how many unread messages the prompt hook reads on the
// caller's goroutine, from a current index; a folder that changed, or
// more mail, is read on a goroutine of its own.
const fewFiles = 32

// read makes the collection's two reads, each answering on its channel:
// a claim of the agent's nudges, then its unread mail. listed is closed
// once the mail read has ended.
//
// The claim runs here: it is quick, and it stops at its next nudge once
// ctx is done, so its answer always comes (gather waits for it anyway, to
// give back what came too late). The mail is read here too when the
// folder's index answers with a few files read (the hook's every turn,
// when little changed): a few small reads, each begun only while the
// budget lasts, can take long only on a disk that hangs — and there the
// claim, made of the same operations, would have hung first. A folder
// that changed costs a listing and a stat of each file, which can take
// long on a big, cold folder: that read runs on a goroutine of its own,
// so that the caller can stop waiting when the budget is spent: the
// reminder is then partial, and the listing stops at its next file (it
// checks ctx before each). (Starting a goroutine wakes a second thread:
// 0.1 ms of a 2.2 ms prompt hook, paid only then.)
func (c *Collector) read(ctx context.Context, agent string) (mailc chan mailRead, claimc chan claimRead, listed chan struct{}) {
	claim, fromIndex, list := c.claim, c.fromIndex, c.list
	box := maildir.Address{Kind: maildir.KindAgent, Name: agent}
	if claim == nil {
		claim = c.Nudges.ClaimContext
	}
	if fromIndex == nil {
		fromIndex = func(ctx context.Context, agent string) ([]*maildir.Message, error) {
			return c.Store.ListFromIndex(ctx, box, fewFiles)
		}
	}
	if list == nil {
		list = func(ctx context.Context, agent string) ([]*maildir.Message, error) {
			return c.Store.ListContext(ctx, box, maildir.ListOptions{})
		}
	}
	mailc, claimc, listed = make(chan mailRead, 1), make(chan claimRead, 1), make(chan struct{})
	b, err := claim(ctx, agent)
	claimc <- claimRead{b, err}
	if msgs, err := fromIndex(ctx, agent); !errors.Is(err, maildir.ErrNeedsListing) {
		mailc <- mailRead{msgs, err}
		close(listed)
		return mailc, claimc, listed
	}
	go func() {
		defer close(listed)
		msgs, err := list(ctx, agent)
		mailc <- mailRead{msgs, err}
	}()
	return mailc, claimc, listed
}

// gather takes the two reads' answers into the reminder as they come,
// until both are in or the budget is spent: then the reminder says it is
// partial, and nudges claimed too late to be shown go back to the queue
// at once (not after the orphan timeout).
func (res *Result) gather(ctx context.Context, budget time.Duration, mailc <-chan mailRead, claimc <-chan claimRead) {
	claimed := false
	for pending := 2; pending > 0; {
		// The budget comes first: once it is spent, results that are
		// ready too are not waited for.
		if ctx.Err() != nil {
			res.Reminder.Partial = fmt.Sprintf("it took longer than its %v budget", budget)
			if !claimed {
				// The claim stops at its next nudge now that ctx is done.
				if cl := <-claimc; cl.b != nil {
					if err := cl.b.Release(); err != nil {
						res.note(err)
					}
				}
			}
			return
		}
		select {
		case m := <-mailc:
			pending--
			if m.err != nil {
				res.note(m.err)
			}
			res.Reminder.Mail = m.msgs
		case cl := <-claimc:
			pending--
			claimed = true
			if cl.err != nil {
				res.note(cl.err)
				continue
			}
			res.batch = cl.b
			res.Reminder.Nudges, res.Reminder.Refused = cl.b.Nudges, cl.b.Refused
		case <-ctx.Done():
		}
	}
}

// note adds err to the result's problems, once: mail and nudges often
// fail alike.
func (res *Result) note(err error) {
	for _, e := range res.Errs {
		if e.Error() == err.Error() {
			return
		}
	}
	res.Errs = append(res.Errs, err)
}

// holdBack applies do not disturb to a collected reminder: normal nudges go
// back to the queue, normal and low mail is left out, and the reminder says
// how much it holds.
func (c *Collector) holdBack(res *Result, agent string) {
	on, _, err := DND(c.Store, agent)
	if err != nil {
		res.Errs = append(res.Errs, err)
	}
	if !on || res.Reminder == nil {
		return
	}
	heldNudges := 0
	if res.batch != nil {
		before := len(res.batch.Nudges)
		if err := res.batch.Keep(func(n *nudgeq.Nudge) bool { return n.Priority == nudgeq.Urgent }); err != nil {
			res.Errs = append(res.Errs, err)
		}
		heldNudges = before - len(res.batch.Nudges)
		res.Reminder.Nudges = res.batch.Nudges
	}
	var kept []*maildir.Message
	heldMail := 0
	for _, m := range res.Reminder.Mail {
		if m.Priority == maildir.Urgent || m.Priority == maildir.High {
			kept = append(kept, m)
		} else {
			heldMail++
		}
	}
	res.Reminder.Mail = kept
	res.Held = Held{Mail: heldMail, Nudges: heldNudges}
}
