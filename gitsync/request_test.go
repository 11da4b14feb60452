package gitsync_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// Agents on beta ask for items of alpha's queue. alpha serves the
// requests at its next sync, oldest first and in queue order, one item
// each, recording the request in the claim; the items reach beta with
// its next sync. A request made while the queue is empty waits for the
// next item. A request asked twice is one request, and a request whose
// claim was made but not yet removed (a serve stopped between the two)
// is not served twice.
func TestClaimRequestsAreServedByTheQueuesHome(t *testing.T) {
	t.Parallel()
	_, a, b, work, items := queueOnAlpha(t, "first", "second")
	if _, err := b.store.Claim(work, agent("witness")); !errors.Is(err, maildir.ErrNotHome) {
		t.Fatalf("beta's own claim: %v", err)
	}
	if _, _, err := a.store.RequestClaim(work, agent("mayor")); !errors.Is(err, maildir.ErrClaimHere) {
		t.Fatalf("a request on the home: %v", err)
	}
	must(t, b.store.ClaimHome(agent("nux")))
	r1, fresh, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	again, fresh2, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	if !fresh || fresh2 || again.ID != r1.ID {
		t.Fatalf("asked twice: %v %v %s %s", fresh, fresh2, r1.ID, again.ID)
	}
	r2, _, err := b.store.RequestClaim(work, agent("nux"))
	must(t, err)
	r3, _, err := b.store.RequestClaim(work, maildir.Address{Kind: maildir.KindAgent, Name: "slit"}) // the queue has two items
	must(t, err)
	b.syncOK(t)
	rep := a.syncOK(t)
	if len(rep.Served) != 2 {
		t.Fatalf("served %v", rep.Served)
	}
	b.syncOK(t)
	for i, w := range []struct {
		agent, req string
	}{{"witness", r1.ID}, {"nux", r2.ID}} {
		m, err := b.store.Get(agent(w.agent), items[i])
		if err != nil {
			t.Fatalf("%s did not get %s: %v", w.agent, items[i], err)
		}
		if m.Claim == nil || m.Claim.Request != w.req || m.Claim.Agent != w.agent {
			t.Errorf("%s's claim record: %+v", w.agent, m.Claim)
		}
	}
	if reqs, _ := b.store.Requests(work); len(reqs) != 1 || reqs[0].ID != r3.ID {
		t.Fatalf("waiting on beta: %v", reqs)
	}

	// The third waits for work, and gets the next item.
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "third"})
	must(t, err)
	rep = a.syncOK(t)
	if len(rep.Served) != 1 {
		t.Fatalf("served %v", rep.Served)
	}
	b.syncOK(t)
	if m, err := b.store.Get(agent("slit"), ms[0].ID); err != nil || m.Claim.Request != r3.ID {
		t.Fatalf("slit: %v %v", m, err)
	}

	// A serve stopped after its claim: the request is back, the claim
	// stands; it is removed, not served again.
	back := filepath.Join(a.store.Dir(), filepath.FromSlash(r3.Path))
	must(t, os.MkdirAll(filepath.Dir(back), 0o700))
	must(t, os.WriteFile(back, []byte(`{"agent":"slit","at":"2026-01-01T00:00:00Z","host":"beta","queue":"queue:work"}`+"\n"), 0o600))
	_, err = a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "fourth"})
	must(t, err)
	served, err := a.store.ServeRequests()
	must(t, err)
	if len(served) != 1 || served[0].Item != nil {
		t.Fatalf("served again: %+v", served)
	}
	if n, err := a.store.List(work, maildir.ListOptions{All: true}); err != nil || len(n) != 1 {
		t.Fatalf("the fourth item should still wait: %v %v", n, err)
	}
}

// An agent that got an item through a claim request gives it back from
// its own host: the item goes back into the queue as an add, waiting and
// without its claim, leaves the mailbox, and after the syncs the queue's
// home hands it to the next claimant.
func TestAnItemARequestBroughtGoesBack(t *testing.T) {
	t.Parallel()
	_, a, b, work, ids := queueOnAlpha(t, "the job")
	id := ids[0]
	_, _, err := b.store.RequestClaim(work, agent("witness"))
	must(t, err)
	b.syncOK(t)
	a.syncOK(t)
	b.syncOK(t)
	if m, err := b.store.Get(agent("witness"), id); err != nil || m.Claim == nil || m.Claim.Request == "" {
		t.Fatalf("the request did not bring the item: %v %v", m, err)
	}
	releasedOffHome(t, a, b, work, "witness", id)
}

// releasedOffHome releases item id from agent's mailbox on b, which is
// not the home (a) of queue work, and checks that it goes back: waiting
// and unclaimed in the queue, gone from the mailbox, handed out again by
// the home after the syncs, and in the agent's mailbox on neither host.
func releasedOffHome(t *testing.T, a, b *host, work maildir.Address, agentName, id string) {
	t.Helper()
	back, err := b.store.Release(agent(agentName), id)
	if err != nil {
		t.Fatalf("release on %s: %v", b.name, err)
	}
	if back.Claim != nil || back.Read || back.Box != work {
		t.Fatalf("released %+v", back)
	}
	if _, err := b.store.Get(agent(agentName), id); !errors.Is(err, maildir.ErrNotFound) {
		t.Fatalf("still in the mailbox: %v", err)
	}
	b.syncOK(t)
	a.syncOK(t)
	m, err := a.store.Claim(work, agent("mayor"))
	if err != nil || m.ID != id {
		t.Fatalf("the home's next claim: %v %v", m, err)
	}
	b.syncOK(t)
	for _, h := range []*host{a, b} {
		if _, err := h.store.Get(agent(agentName), id); !errors.Is(err, maildir.ErrNotFound) {
			t.Errorf("%s: the item is still in %s's mailbox: %v", h.name, agentName, err)
		}
	}
}

// sync --every does not make a claim request wait for its tick: a
// request made on this host starts a sync at once (the tick here is an
// hour), whether it is made between syncs or the moment one ends (while
// its report runs: the loop compares the requests with those before the
// sync, not after it), and the loop ends with its context. OwnRequests
// counts only this host's requests, until the item they brought is back.
func TestARequestMadeHereSyncsAtOnce(t *testing.T) {
	t.Parallel()
	for _, during := range []bool{false, true} {
		name := "between-syncs"
		if during {
			name = "as-a-sync-ends"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tw, a, b, work, _ := queueOnAlpha(t, "job")
			ctx, cancel := context.WithCancel(context.Background())
			reports := make(chan error, 16)
			done := make(chan struct{})
			var r *maildir.Request
			request := func() (err error) {
				r, _, err = b.store.RequestClaim(work, agent("witness"))
				return err
			}
			go func() {
				defer close(done)
				first := true
				b.sync.Every(ctx, time.Hour, func(_ *gitsync.Report, err error) {
					if during && first && err == nil {
						first, err = false, request()
					}
					reports <- err
				})
			}()
			next := func(what string) {
				t.Helper()
				select {
				case err := <-reports:
					must(t, err)
				case <-time.After(2 * time.Minute):
					t.Fatalf("no sync %s", what)
				}
			}
			next("at the start")
			if !during {
				must(t, request())
			}
			next("after the request, with the next tick an hour away")
			if got := gitRun(t, tw.remote, "ls-tree", "-r", "--name-only", "main", "--", "state/requests"); !strings.Contains(got, r.ID) {
				t.Fatalf("the request is not on the remote: %q", got)
			}
			own, err := b.store.OwnRequests()
			must(t, err)
			if len(own) != 1 || own[0].ID != r.ID {
				t.Errorf("beta's own requests: %v", own)
			}
			cancel()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatal("the loop did not end with its context")
			}

			a.syncOK(t) // serves it
			if own, err := a.store.OwnRequests(); err != nil || len(own) != 0 {
				t.Errorf("alpha counts beta's request as its own: %v %v", own, err)
			}
			b.syncOK(t)
			if own, err := b.store.OwnRequests(); err != nil || len(own) != 0 {
				t.Errorf("beta's request is still waiting after the item came: %v %v", own, err)
			}
		})
	}
}

// An item the queue's home claimed for an agent homed on another host
// (claim queue:work --as nux, run on the queue's home) is released on the
// agent's host, as an item a request brought is: back into the queue as
// an add, then out of the mailbox; the queue's home hands it out again.
// On the queue's home the release is refused, naming the agent's home.
func TestAnItemTheHomeClaimedForAnotherHostsAgentGoesBack(t *testing.T) {
	t.Parallel()
	_, a, b := twoHosts(t)
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	must(t, b.store.ClaimHome(agent("nux")))
	ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "the job"})
	must(t, err)
	id := ms[0].ID
	a.syncOK(t)
	b.syncOK(t)
	a.syncOK(t)
	if m, err := a.store.Claim(work, agent("nux")); err != nil || m.ID != id {
		t.Fatalf("the home's claim for nux: %v %v", m, err)
	}
	a.syncOK(t)
	b.syncOK(t)
	var nh *maildir.NotHomeError
	if _, err := a.store.Release(agent("nux"), id); !errors.As(err, &nh) || nh.Home != "beta" {
		t.Fatalf("release on the queue's home: %v, want refused naming beta", err)
	}
	releasedOffHome(t, a, b, work, "nux", id)
}

// queueOnAlpha is a town of two hosts where alpha homes queue:work and
// holds an item for each subject, both hosts synced: where a claim
// request from beta starts. It returns the items' ids.
func queueOnAlpha(t *testing.T, subjects ...string) (tw *town, a, b *host, work maildir.Address, ids []string) {
	t.Helper()
	tw, a, b = twoHosts(t)
	work = maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	for _, subj := range subjects {
		ms, err := a.store.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: subj})
		must(t, err)
		ids = append(ids, ms[0].ID)
	}
	a.syncOK(t)
	b.syncOK(t)
	return tw, a, b, work, ids
}
