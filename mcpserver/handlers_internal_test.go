package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// The tools are methods a test calls without the SDK: each answers as the
// tool does, bounded as the tool is.
func TestToolsAsMethods(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	q, err := nudgeq.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Store: s, Nudges: q, Agent: "toast", StateDir: t.TempDir()}
	other := &Server{Store: s, Nudges: q, Agent: "mayor", StateDir: t.TempDir()}
	ctx := context.Background()

	if out, err := srv.check(ctx, struct{}{}); err != nil || !strings.Contains(out, "Nothing waits") {
		t.Fatalf("check with nothing: %+v %v", out, err)
	}
	// A 200 KB body: sent whole, read in bounded parts.
	big := strings.Repeat("0123456789abcdef", 200*1024/16)
	sent, err := other.send(ctx, sendIn{To: "toast", Subject: "the log", Body: big, Priority: "urgent"})
	if err != nil || len(sent.IDs) != 1 {
		t.Fatalf("send: %+v %v", sent, err)
	}
	if again, err := other.send(ctx, sendIn{To: "toast", Subject: "once", Key: "k1"}); err != nil || again.Again {
		t.Fatalf("a first keyed send: %+v %v", again, err)
	}
	if again, err := other.send(ctx, sendIn{To: "toast", Subject: "once", Key: "k1"}); err != nil || !again.Again {
		t.Fatalf("the same key again: %+v %v", again, err)
	}
	if _, err := other.send(ctx, sendIn{To: "toast", Subject: "x", Priority: "loud"}); err == nil {
		t.Fatal("a bad priority was sent")
	}
	list, err := srv.inbox(ctx, inboxIn{})
	if err != nil || len(list.Messages) != 2 || list.Messages[0].Body != "" {
		t.Fatalf("inbox: %+v %v", list, err)
	}
	one := 1
	if list, err := srv.inbox(ctx, inboxIn{Limit: &one}); err != nil || len(list.Messages) != 1 || list.More != 1 || list.Note == "" {
		t.Fatalf("inbox with a limit: %+v %v", list, err)
	}
	var got strings.Builder
	for off := 0; ; {
		m, err := srv.read(ctx, readIn{ID: sent.IDs[0], Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := json.Marshal(m); len(b) > MaxBodyBytes+2000 {
			t.Fatalf("one read answered %d bytes", len(b))
		}
		got.WriteString(m.Body)
		if m.BodyBytes != len(big) || !strings.Contains(m.Note, "-byte body") {
			t.Fatalf("a part of the body says %d bytes, %q", m.BodyBytes, m.Note)
		}
		if strings.Contains(m.Note, "the end") {
			break
		}
		off = m.Offset + len(m.Body)
	}
	if got.String() != big {
		t.Fatalf("the parts make %d bytes, not the %d-byte body", got.Len(), len(big))
	}
	if m, _ := s.Get(maildir.Address{Kind: maildir.KindAgent, Name: "toast"}, sent.IDs[0]); !m.Read {
		t.Fatal("read did not mark the message read")
	}
	reply, err := srv.reply(ctx, replyIn{ID: sent.IDs[0], Body: "on it"})
	if err != nil || len(reply.IDs) != 1 {
		t.Fatalf("reply: %+v %v", reply, err)
	}
	th, err := srv.thread(ctx, idIn{ID: reply.IDs[0]})
	if err != nil || len(th.Messages) != 2 {
		t.Fatalf("thread: %+v %v", th, err)
	}
	if b, _ := json.Marshal(th); len(b) > MaxInboxBytes+2000 {
		t.Fatalf("the thread answered %d bytes", len(b))
	}
	if _, err := srv.claim(ctx, claimIn{Queue: "queue:none"}); err == nil {
		t.Fatal("a claim of a queue that does not exist succeeded")
	}
	if out, err := srv.check(ctx, struct{}{}); err != nil || !strings.Contains(out, "once") {
		t.Fatalf("check with mail: %+v %v", out, err)
	}
}

// The claim tool hands back an item the agent claimed and has not marked
// done, as the CLI's claim does: an agent whose session ended between its
// claim and the answer gets the same item, and the second item stays in
// the queue. Once the first is marked done, the next claim takes the next.
func TestClaimHandsBackWhatIsHeld(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Store: s, Agent: "toast", StateDir: t.TempDir()}
	mayor := &Server{Store: s, Agent: "mayor", StateDir: t.TempDir()}
	ctx := context.Background()
	for _, subj := range []string{"WORK 1", "WORK 2"} {
		if _, err := mayor.send(ctx, sendIn{To: "queue:work", Subject: subj}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	if err != nil || first.Subject != "WORK 1" || first.Note != "" {
		t.Fatalf("the first claim: %+v %v", first, err)
	}
	again, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	if err != nil || again.ID != first.ID || !strings.Contains(again.Note, "still hold") {
		t.Fatalf("a claim while %s is held took %+v (%v), not the held item", first.ID, again, err)
	}
	q, _ := s.Resolve("queue:work")
	if left, _ := s.List(q, maildir.ListOptions{}); len(left) != 1 || left[0].Subject != "WORK 2" {
		t.Fatalf("the queue after a hand-back holds %+v, want WORK 2 alone", left)
	}
	// Another agent's held item is not handed to this one.
	other := &Server{Store: s, Agent: "nux", StateDir: t.TempDir()}
	if _, err := other.claim(ctx, claimIn{Queue: "queue:work"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkRead(srv.me(), first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.claim(ctx, claimIn{Queue: "queue:work"}); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("a claim after the held item was done and the queue emptied: %v, want ErrQueueEmpty", err)
	}
}

// On the queue's home the claim tool serves the claim requests other
// hosts' agents made first, as the CLI's claim does: an agent there does
// not take the item an off-home agent has been waiting for.
func TestClaimOnTheHomeServesRequestsFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	open := func(host string) *maildir.Store {
		s, err := maildir.Open(dir)
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
	q, _ := alpha.Resolve("queue:work")
	nux := maildir.Address{Kind: maildir.KindAgent, Name: "nux"}
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if err := alpha.ClaimHome(nux); err != nil {
		t.Fatal(err)
	}
	if err := beta.ClaimHome(toast); err != nil {
		t.Fatal(err)
	}
	if _, _, err := beta.RequestClaim(q, toast); err != nil {
		t.Fatal(err)
	}
	if _, err := alpha.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK 1", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Store: alpha, Agent: "nux", StateDir: t.TempDir()}
	if m, err := srv.claim(context.Background(), claimIn{Queue: "queue:work"}); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("nux's claim on the home took %+v (%v); want the item served to toast's request first", m, err)
	}
	if m, err := alpha.Held(q, toast); err != nil || m == nil || m.Subject != "WORK 1" {
		t.Fatalf("toast holds %+v (%v), want WORK 1", m, err)
	}
}

// Off the queue's home the claim tool does what the CLI's claim does
// there, through the same code path (watch.Claim): with nothing in this
// host's copy of the queue it answers ErrQueueEmpty and asks nothing;
// with an item there it leaves a claim request for the home (once: a
// second call finds it waiting) and says so; once the home served it,
// the next call hands the item over, and the one after hands the same
// item back while the agent has not marked it done.
func TestClaimOffTheHomeLeavesARequest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".chipset")
	open := func(host string) *maildir.Store {
		s, err := maildir.Open(dir)
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
	q, _ := alpha.Resolve("queue:work")
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if err := beta.ClaimHome(toast); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Store: beta, Agent: "toast", StateDir: t.TempDir()}
	ctx := context.Background()
	if m, err := srv.claim(ctx, claimIn{Queue: "queue:work"}); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("a claim off the home of an empty queue: %+v %v", m, err)
	}
	if reqs, _ := beta.Requests(q); len(reqs) != 0 {
		t.Fatalf("an empty queue was asked: %+v", reqs)
	}
	if _, err := alpha.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK 1", Body: "x"}); err != nil {
		t.Fatal(err)
	}
	asked, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	reqs, _ := beta.Requests(q)
	if err != nil || asked.ID != "" || len(reqs) != 1 || reqs[0].Agent != "toast" || reqs[0].Host != "beta" ||
		!strings.Contains(asked.Note, "asked it for an item") || !strings.Contains(asked.Note, reqs[0].ID) {
		t.Fatalf("a claim off the home: %+v %v; requests %+v", asked, err, reqs)
	}
	again, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	if reqs2, _ := beta.Requests(q); err != nil || len(reqs2) != 1 || !strings.Contains(again.Note, "already asked") {
		t.Fatalf("a second claim before the home served: %+v %v; requests %+v", again, err, reqs2)
	}
	if served, err := alpha.ServeRequests(); err != nil || len(served) != 1 {
		t.Fatalf("the home served %+v %v", served, err)
	}
	got, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	if err != nil || got.Subject != "WORK 1" {
		t.Fatalf("the claim after the home served: %+v %v", got, err)
	}
	back, err := srv.claim(ctx, claimIn{Queue: "queue:work"})
	if err != nil || back.ID != got.ID || !strings.Contains(back.Note, "still hold") {
		t.Fatalf("a claim while the item is held: %+v %v", back, err)
	}
}
