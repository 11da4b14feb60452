package maildir_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mailfs/mailfs/maildir"
)

// A mayor sends work; the polecat lists its inbox, reads the message (which
// marks it read) and replies in the same thread.
func Example() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	s, err := maildir.Open(filepath.Join(dir, ".chipset"))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	sent, err := s.Send(&maildir.Message{From: "mayor", To: "gastown/toast", Subject: "WORK gt-101", Priority: maildir.High})
	if err != nil {
		panic(err)
	}
	unread, _ := s.List(mbox("gastown/toast"), maildir.ListOptions{})
	fmt.Println(len(unread), "unread for", sent[0].Box.String()+":", unread[0].Subject)

	m, _ := s.MarkRead(mbox("gastown.toast"), sent[0].ID)
	fmt.Println("read:", m.Read)

	reply, _ := s.Reply(mbox("gastown/toast"), m.ID, &maildir.Message{Body: "fixed"})
	fmt.Println(reply[0].To, reply[0].Subject, reply[0].Thread == m.Thread)
	// Output:
	// 1 unread for gastown.toast: WORK gt-101
	// read: true
	// mayor Re: WORK gt-101 true
}

// A work queue hands each item to exactly one claimant, which may give it
// back; only what a claim took can be released.
func ExampleStore_Claim() {
	dir, _ := os.MkdirTemp("", "mailfs-example-")
	defer os.RemoveAll(dir)
	s, _ := maildir.Open(filepath.Join(dir, ".chipset"))
	defer s.Close()

	if err := s.CreateQueue("work"); err != nil {
		panic(err)
	}
	s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "WORK gt-7"})

	item, _ := s.Claim(mbox("queue:work"), mbox("nux"))
	fmt.Println(item.Box.String(), "claimed", item.Subject, "from", item.Claim.Queue)
	if _, err := s.Claim(mbox("queue:work"), mbox("toast")); err != nil {
		fmt.Println(err)
	}
	back, _ := s.Release(mbox("nux"), item.ID)
	fmt.Println("released to", back.Box.String(), "read:", back.Read)
	// Output:
	// nux claimed WORK gt-7 from queue:work
	// maildir: queue empty: nothing waits in queue:work
	// released to queue:work read: false
}

// Protocol messages carry "Key: value" fields; Field finds one anywhere in
// the body.
func ExampleFormatBody() {
	body, _ := maildir.FormatBody([][2]string{
		{"Branch", "polecat/nux/gt-42"},
		{"Verified", "clean git state, issue closed"},
	}, "Ready to merge.")
	m := &maildir.Message{Body: body}
	v, _ := m.Field("verified")
	fmt.Println(v)
	// Output: clean git state, issue closed
}
