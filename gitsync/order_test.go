package gitsync_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

// Claim order follows arrival at the queue's home, not the senders'
// clocks (issue 59, item 5). gamma's clock is two hours ahead, beta's two
// hours behind: gamma's item reaches alpha (the queue's home) first, then
// beta's, then alpha sends one itself. By their names (the senders'
// clocks) the order would be beta's, alpha's, gamma's; alpha hands them
// out gamma's, beta's, alpha's. An item released back from another host
// is no arrival: it keeps its place by name, as a release on the home
// does.
func TestClaimOrderFollowsArrivalAtTheHome(t *testing.T) {
	t.Parallel()
	tw := newTown(t, "alpha", "beta", "gamma")
	a, b, g := tw.hosts["alpha"], tw.hosts["beta"], tw.hosts["gamma"]
	b.store.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	g.store.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	work := maildir.Address{Kind: maildir.KindQueue, Name: "work"}
	must(t, a.store.CreateQueue("work"))
	must(t, a.store.ClaimHome(agent("nux")))
	a.syncOK(t)
	b.syncOK(t)
	g.syncOK(t)

	send := func(h *host, subject string) string {
		t.Helper()
		ms, err := h.store.Send(&maildir.Message{From: "mayor." + h.name, To: "queue:work", Subject: subject})
		must(t, err)
		return ms[0].ID
	}
	fromGamma := send(g, "sent first, from a clock ahead")
	g.syncOK(t)
	a.syncOK(t)
	fromBeta := send(b, "sent second, from a clock behind")
	b.syncOK(t)
	a.syncOK(t)
	fromAlpha := send(a, "sent third, on the home")
	if !(fromBeta < fromAlpha && fromAlpha < fromGamma) {
		t.Fatalf("the senders' clocks do not disagree as meant: %s %s %s", fromBeta, fromAlpha, fromGamma)
	}
	noted, err := a.store.Arrivals(work)
	must(t, err)
	if len(noted) != 2 || !noted[fromGamma+".json"].Before(noted[fromBeta+".json"]) {
		t.Fatalf("arrivals noted on the home: %v", noted)
	}

	want := []string{fromGamma, fromBeta, fromAlpha}
	var got []string
	for range want {
		m, err := a.store.Claim(work, agent("nux"))
		must(t, err)
		got = append(got, m.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v\nwant (by arrival at alpha) %v", got, want)
	}

	// beta's item, released on the home, goes back to its place; and
	// only what is still in the queue stays noted once a sync notes
	// more.
	_, err = a.store.Release(agent("nux"), fromBeta)
	must(t, err)
	later := send(g, "sent last")
	g.syncOK(t)
	a.syncOK(t)
	if noted, err = a.store.Arrivals(work); err != nil || len(noted) != 2 || noted[fromGamma+".json"] != (time.Time{}) {
		t.Fatalf("arrivals noted after the claims: %v %v", noted, err)
	}
	for _, id := range []string{fromBeta, later} {
		m, err := a.store.Claim(work, agent("nux"))
		if err != nil || m.ID != id {
			t.Fatalf("claimed %v %v, want %s", m, err, id)
		}
	}
}
