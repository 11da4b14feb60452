package maildir

import (
	"errors"
	"path/filepath"
	"testing"
)

// A request withdrawn on the queue's home gets no item, even from a serve
// that listed it before the withdrawal: its claim looks again under the
// claimants' lock, which Withdraw holds too. A request served already is
// withdrawn with ErrServed, naming what happened.
func TestAWithdrawnRequestIsServedNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	open := func(host string) *Store {
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		s.Host = host
		t.Cleanup(func() { s.Close() })
		return s
	}
	alpha, beta := open("alpha"), open("beta")
	if err := alpha.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	q := Address{Kind: KindQueue, Name: "work"}
	nux, toast := Address{Kind: KindAgent, Name: "nux"}, Address{Kind: KindAgent, Name: "toast"}
	for _, a := range []Address{nux, toast} {
		if err := beta.ClaimHome(a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alpha.Send(&Message{From: "mayor", To: "queue:work", Subject: "WORK 1", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	rn, _, err := beta.RequestClaim(q, nux)
	if err != nil {
		t.Fatal(err)
	}
	if err := beta.Withdraw(rn); !errors.Is(err, ErrNotHome) {
		t.Fatalf("withdraw off the queue's home: %v, want ErrNotHome", err)
	}
	listed, err := alpha.Requests(q) // a serve lists...
	if err != nil || len(listed) != 1 {
		t.Fatalf("requests: %v, %v", listed, err)
	}
	if err := alpha.Withdraw(listed[0]); err != nil { // ...a person withdraws...
		t.Fatal(err)
	}
	if _, err := alpha.claim(q, nux, listed[0].ID); !errors.Is(err, errWithdrawn) { // ...the serve's claim
		t.Fatalf("claim for a withdrawn request: %v, want errWithdrawn", err)
	}
	if all, _ := alpha.AllRequests(); len(all) != 0 {
		t.Fatalf("requests left: %v", all)
	}

	rt, _, err := beta.RequestClaim(q, toast)
	if err != nil {
		t.Fatal(err)
	}
	served, err := alpha.ServeQueue(q)
	if err != nil || len(served) != 1 || served[0].Item == nil || served[0].Item.Box != toast {
		t.Fatalf("serve: %+v, %v; want toast's request served", served, err)
	}
	if err := alpha.Withdraw(rt); !errors.Is(err, ErrServed) {
		t.Fatalf("withdraw of a served request: %v, want ErrServed", err)
	}
	if m, err := alpha.Held(q, toast); err != nil || m == nil || m.ID != served[0].Item.ID {
		t.Fatalf("held by toast: %v, %v; want the served item", m, err)
	}
	if m, err := alpha.Held(q, nux); err != nil || m != nil {
		t.Fatalf("held by nux: %v, %v; want nothing", m, err)
	}
}
