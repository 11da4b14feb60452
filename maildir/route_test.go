package maildir_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
)

func sendTo(t testing.TB, ts *testStore, to string, cc ...string) []*maildir.Message {
	t.Helper()
	sent, err := ts.Send(&maildir.Message{From: "mayor", To: to, CC: cc, Subject: "to " + to})
	if err != nil {
		t.Fatal(err)
	}
	return sent
}

func agentsOf(msgs []*maildir.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Box.String())
	}
	slices.Sort(out)
	return out
}

func TestGroups(t *testing.T) {
	ts := newStore(t)
	for _, a := range []string{"gastown/toast", "gastown/nux", "beads/ace", "witness", "mayor"} {
		sendTo(t, ts, a) // make the mailboxes the patterns will match
	}
	if _, err := ts.CreateGroup("polecats", []string{"Gastown/*"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.CreateGroup("@town", []string{"@polecats", "witness", "mayor", "gastown.toast"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ts.Expand("town"); !slices.Equal(got, []string{"gastown.nux", "gastown.toast", "mayor", "witness"}) {
		t.Fatalf("@town reaches %v", got)
	}
	// One copy per distinct member, never the sender.
	sent := sendTo(t, ts, "@town", "witness", "@polecats")
	if got := agentsOf(sent); !slices.Equal(got, []string{"gastown.nux", "gastown.toast", "witness"}) {
		t.Fatalf("delivered to %v", got)
	}
	for _, m := range sent {
		if m.To != "@town" || !slices.Equal(m.CC, []string{"witness", "@polecats"}) || m.Thread != sent[0].ID {
			t.Fatalf("copy in %s: to %q cc %v thread %q", m.Box.String(), m.To, m.CC, m.Thread)
		}
	}
	if all, _ := ts.Expand("@all"); len(all) != 5 {
		t.Fatalf("@all reaches %v", all)
	}
	data, _ := os.ReadFile(ts.path("state/groups/town.json"))
	if string(data) != "{\n  \"members\": [\n    \"@polecats\",\n    \"witness\",\n    \"mayor\",\n    \"gastown.toast\"\n  ]\n}\n" {
		t.Fatalf("group file:\n%s", data)
	}

	for name, tc := range map[string]struct {
		err  func() error
		want error
		text string
	}{
		"cycle through another group": {func() error { _, err := ts.AddMembers("polecats", []string{"@town"}); return err },
			maildir.ErrGroupCycle, "@polecats → @town → @polecats"},
		"itself": {func() error { _, err := ts.AddMembers("town", []string{"@town"}); return err }, maildir.ErrGroupCycle, "@town"},
		"unknown member group": {func() error { _, err := ts.AddMembers("town", []string{"@nope"}); return err },
			maildir.ErrNoGroup, "@nope"},
		"invalid member": {func() error { _, err := ts.AddMembers("town", []string{"../etc"}); return err },
			maildir.ErrInvalidAddress, `"../etc"`},
		"queue as member": {func() error { _, err := ts.AddMembers("town", []string{"queue:work"}); return err },
			maildir.ErrWrongKind, "queue:work"},
		"send to unknown group": {func() error { _, err := ts.Send(&maildir.Message{From: "m", To: "@ghosts"}); return err },
			maildir.ErrNoGroup, "@ghosts"},
		"create twice": {func() error { _, err := ts.CreateGroup("town", nil); return err }, os.ErrExist, "exists"},
		"create @all":  {func() error { _, err := ts.CreateGroup("all", nil); return err }, nil, "built in"},
	} {
		err := tc.err()
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("%s: got %v, want %v naming %q", name, err, tc.want, tc.text)
		}
	}
	if g, _ := ts.Group("polecats"); !slices.Equal(g.Members, []string{"gastown.*"}) {
		t.Fatalf("a refused edit changed the group: %v", g.Members)
	}
	// A group of only the sender has nobody to deliver to.
	ts.CreateGroup("me", []string{"mayor"})
	if _, err := ts.Send(&maildir.Message{From: "mayor", To: "@me"}); !errors.Is(err, maildir.ErrNoRecipients) {
		t.Fatalf("send to a group of the sender: %v", err)
	}
	if err := ts.DeleteGroup("me"); err != nil {
		t.Fatal(err)
	}
	if names, _ := ts.Groups(); !slices.Equal(names, []string{"polecats", "town"}) {
		t.Fatalf("groups %v", names)
	}
}

func TestConcurrentGroupEditsLoseNothing(t *testing.T) {
	ts := newStore(t)
	ts.CreateGroup("g", nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			if _, err := ts.AddMembers("g", []string{fmt.Sprintf("agent%d", i)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if g, _ := ts.Group("g"); len(g.Members) != 16 {
		t.Fatalf("%d members after 16 concurrent adds", len(g.Members))
	}
}

func TestAmbiguousBareNames(t *testing.T) {
	ts := newStore(t)
	// A bare name means the one thing of that name that exists.
	ts.CreateGroup("work", []string{"toast"})
	if sent := sendTo(t, ts, "work"); len(sent) != 1 || sent[0].Box.String() != "toast" || sent[0].To != "@work" {
		t.Fatalf("the bare name of the only thing called work went to %+v", sent[0])
	}
	// Two things of one name can only be had by hand (the commands refuse
	// to create the second): then the bare name is ambiguous.
	ts.write(t, "state/queue/work/.keep", "")
	_, err := ts.Send(&maildir.Message{From: "m", To: "work"})
	if !errors.Is(err, maildir.ErrAmbiguousAddress) || !strings.Contains(err.Error(), "@work or queue:work") {
		t.Fatalf("bare name of a group and a queue: %v", err)
	}
	if sent := sendTo(t, ts, "agent:work"); sent[0].Box.String() != "work" || sent[0].To != "work" {
		t.Fatalf("agent:work went to %s", sent[0].Box.String())
	}
	if _, err := ts.Resolve("work"); !errors.Is(err, maildir.ErrAmbiguousAddress) {
		t.Fatalf("resolving a bare ambiguous name: %v", err)
	}
	// An Address built by hand is checked too: no name leads outside.
	for _, bad := range []maildir.Address{{Kind: maildir.KindAgent, Name: "../x"}, {Kind: maildir.KindAgent, Name: "Toast"}, {Kind: maildir.KindQueue, Name: ""}} {
		if _, err := ts.List(bad, maildir.ListOptions{}); !errors.Is(err, maildir.ErrInvalidAddress) && !errors.Is(err, maildir.ErrInvalidName) {
			t.Fatalf("List(%+v) = %v, want an invalid name", bad, err)
		}
	}
	if _, err := ts.List(mbox("@work"), maildir.ListOptions{}); !errors.Is(err, maildir.ErrWrongKind) {
		t.Fatalf("listing a group: %v", err)
	}
}

func TestWorkQueue(t *testing.T) {
	ts := newStore(t)
	if err := ts.CreateQueue("work"); err != nil {
		t.Fatal(err)
	}
	var items []string
	for i := range 3 {
		m, err := ts.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, m[0].ID)
	}
	if _, err := os.Stat(ts.path("state/queue/work/" + items[0] + ".json")); err != nil {
		t.Fatal(err)
	}
	got, err := ts.Claim(mbox("queue:work"), mbox("Gastown/Toast"))
	if err != nil || got.ID != items[0] || got.Box.String() != "gastown.toast" || got.To != "queue:work" {
		t.Fatalf("Claim = %+v, %v; want the oldest item in gastown.toast", got, err)
	}
	ts.MarkRead(mbox("gastown.toast"), got.ID)
	back, err := ts.Release(mbox("gastown/toast"), got.ID)
	if err != nil || back.Box.String() != "queue:work" || back.Read {
		t.Fatalf("Release = %+v, %v; want it back in the queue, unread", back, err)
	}
	for range 3 {
		if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.Claim(mbox("queue:work"), mbox("nux")); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("claim from an empty queue: %v", err)
	}
	if _, err := ts.Claim(mbox("queue:never"), mbox("nux")); !errors.Is(err, maildir.ErrNoQueue) {
		t.Fatalf("claim from a missing queue: %v", err)
	}
	direct := sendTo(t, ts, "nux")[0]
	if _, err := ts.Release(mbox("nux"), direct.ID); !errors.Is(err, maildir.ErrNotClaimed) {
		t.Fatalf("release of direct mail: %v", err)
	}
	if _, err := ts.Claim(mbox("nux"), mbox("toast")); !errors.Is(err, maildir.ErrWrongKind) {
		t.Fatalf("claim from a mailbox: %v", err)
	}
	if qs, _ := ts.Queues(); !slices.Equal(qs, []string{"work"}) {
		t.Fatalf("queues %v", qs)
	}
}

// putItems lays out n queue items (setup, not what is measured).
func putItems(t testing.TB, ts *testStore, queue string, n int) {
	t.Helper()
	dir := ts.path("state/queue/" + queue)
	os.MkdirAll(dir, 0o700)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		m := &maildir.Message{From: "mayor", To: "queue:" + queue, Subject: fmt.Sprint(i), Type: "work_assignment",
			Priority: maildir.Normal, Timestamp: base.Add(time.Duration(i))}
		if err := os.WriteFile(dir+"/"+maildir.NewID(m.Timestamp, "mayor")+".json", m.Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// where counts, for each item subject, the folders it is in.
func where(t *testing.T, ts *testStore, boxes []string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, b := range boxes {
		msgs, err := ts.List(mbox(b), maildir.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			seen[m.Subject]++
		}
	}
	return seen
}

func checkEachOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	for i := range n {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("item %d is in %d places", i, c)
		}
	}
}

func TestClaimersRacingGoroutines(t *testing.T) { renameModes(t, claimersRacing) }

func claimersRacing(t *testing.T, ts *testStore) {
	putItems(t, ts, "work", 2000)
	var wg sync.WaitGroup
	var boxes []string
	for c := range 16 {
		agent := fmt.Sprintf("polecat%02d", c)
		boxes = append(boxes, agent)
		wg.Go(func() {
			for {
				_, err := ts.Claim(mbox("queue:work"), mbox(agent))
				if errors.Is(err, maildir.ErrQueueEmpty) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkEachOnce(t, where(t, ts, append(boxes, "queue:work")), 2000)
	if left, _, _ := ts.Entries(mbox("queue:work"), false); len(left) != 0 {
		t.Fatalf("%d items left in the queue", len(left))
	}
}

// childClaim claims from $QUEUE as $AGENT until the queue is empty,
// printing each id.
func childClaim() {
	s, err := maildir.Open(os.Getenv("ROOT"))
	if err != nil {
		os.Exit(1)
	}
	for {
		m, err := s.Claim(mbox(os.Getenv("QUEUE")), mbox(os.Getenv("AGENT")))
		if errors.Is(err, maildir.ErrQueueEmpty) {
			os.Exit(0)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(m.ID)
	}
}

func claimProcess(t *testing.T, root, agent string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=claim", "ROOT="+root, "QUEUE=queue:work", "AGENT="+agent, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	return cmd
}

func TestClaimerProcessesRacing(t *testing.T) {
	ts := newStore(t)
	putItems(t, ts, "work", 2000)
	var cmds []*exec.Cmd
	var boxes []string
	for c := range 4 {
		agent := fmt.Sprintf("polecat%d", c)
		boxes = append(boxes, agent)
		cmd := claimProcess(t, ts.dir, agent)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	checkEachOnce(t, where(t, ts, append(boxes, "queue:work")), 2000)
}

// Claimers killed while claiming in a loop lose nothing: every item is in
// the queue or in exactly one mailbox. Where in a claim each kill lands is
// up to the scheduler; TestClaimAndReleaseKilledAtEveryStep kills a claim
// at each of its steps in turn.
func TestKilledClaimerLosesNothing(t *testing.T) {
	ts := newStore(t)
	putItems(t, ts, "work", 300)
	boxes := []string{"queue:work"}
	claimed := 0
	for k := range 20 {
		agent := fmt.Sprintf("polecat%02d", k)
		boxes = append(boxes, agent)
		cmd := claimProcess(t, ts.dir, agent)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Let it claim one: it claims in a tight loop, so it is now inside
		// the next claim, at whatever step the scheduler left it.
		line := make([]byte, 64)
		if _, err := out.Read(line); err != nil {
			t.Fatalf("kill %d: the claimer claimed nothing: %v", k, err)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		io.Copy(io.Discard, out)
		cmd.Wait()
	}
	seen := where(t, ts, boxes)
	checkEachOnce(t, seen, 300)
	for _, b := range boxes[1:] {
		n, _ := ts.Count(mbox(b))
		claimed += n.Total
	}
	t.Logf("%d of 300 items claimed before the kills", claimed)
}

func TestChannels(t *testing.T) {
	ts := newStore(t)
	if _, err := ts.Send(&maildir.Message{From: "m", To: "channel:merges"}); !errors.Is(err, maildir.ErrNoChannel) {
		t.Fatalf("post to a channel that does not exist: %v", err)
	}
	if err := ts.CreateChannel("merges", maildir.ChannelChange{RetainCount: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	var posts []string
	for i := range 5 {
		m, err := ts.Send(&maildir.Message{From: "refinery", To: "channel:merges", Subject: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		posts = append(posts, m[0].ID)
	}
	kept, _ := ts.List(mbox("channel:merges"), maildir.ListOptions{}) // all posts, read or not
	if got := ids(kept); !slices.Equal(got, posts[2:]) {
		t.Fatalf("channel keeps %v, want the newest 3", got)
	}
	old, _ := ts.List(mbox("channel:merges"), maildir.ListOptions{Archived: true, All: true})
	if got := ids(old); !slices.Equal(got, posts[:2]) {
		t.Fatalf("channel archive holds %v", got)
	}
	// By age: a post older than the limit moves at the next retention run.
	ts.CreateChannel("merges", maildir.ChannelChange{RetainHours: ptr(1.0)})
	ts.write(t, "state/channel/merges/2020-01-01T00-00-00Z-old.json", `{"from":"x"}`)
	if moved, err := ts.Retain(mbox("channel:merges")); err != nil || !slices.Equal(moved, []string{"2020-01-01T00-00-00Z-old"}) {
		t.Fatalf("Retain = %v, %v", moved, err)
	}
	if cs, _ := ts.Channels(); !slices.Equal(cs, []string{"merges"}) {
		t.Fatalf("channels %v", cs)
	}
}

// Retention running after every post, posts racing: nothing is lost
// beyond the rule, which only moves posts to the archive.
func TestRetentionRacingPosts(t *testing.T) {
	ts := newStore(t)
	ts.CreateChannel("c", maildir.ChannelChange{RetainCount: ptr(5)})
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 25 {
				if _, err := ts.Send(&maildir.Message{From: "m", To: "channel:c", Subject: fmt.Sprint(p*25 + i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	ts.Retain(mbox("channel:c")) // settle: the last racing runs may each have seen 6
	live, _ := ts.List(mbox("channel:c"), maildir.ListOptions{})
	if len(live) != 5 {
		t.Fatalf("%d live posts, want 5", len(live))
	}
	seen := map[string]int{}
	for _, archived := range []bool{false, true} {
		msgs, _ := ts.List(mbox("channel:c"), maildir.ListOptions{All: true, Archived: archived})
		for _, m := range msgs {
			seen[m.Subject]++
		}
	}
	checkEachOnce(t, seen, 200)
}

func TestProtocolFields(t *testing.T) {
	body, err := maildir.FormatBody([][2]string{{"Branch", "polecat/nux/gt-7"}, {"Issue", "gt-7"}}, "Ready to merge.\nBranch: not a field")
	if err != nil {
		t.Fatal(err)
	}
	if body != "Branch: polecat/nux/gt-7\nIssue: gt-7\n\nReady to merge.\nBranch: not a field" {
		t.Fatalf("body %q", body)
	}
	m := &maildir.Message{Body: body}
	if v, ok := m.Field("branch"); !ok || v != "polecat/nux/gt-7" {
		t.Fatalf("Field(branch) = %q, %v", v, ok)
	}
	if _, ok := m.Field("Ready to merge."); ok {
		t.Fatal("free text read as a field")
	}
	// Fields stand anywhere in the body (RECOVERED_BEAD puts them after its
	// text); the first of a key wins; prose ending in a colon is no field.
	m = &maildir.Message{Body: "Recovered abandoned bead.\n\nBead: gt-9\nPrevious Status: hooked\nBead: later\n\nPlease re-dispatch:\n"}
	if got := m.Fields(); !slices.Equal(got, [][2]string{{"Bead", "gt-9"}, {"Previous Status", "hooked"}, {"Bead", "later"}}) {
		t.Fatalf("fields %v", got)
	}
	if v, _ := m.Field("bead"); v != "gt-9" {
		t.Fatalf("Field(bead) = %q, want the first", v)
	}
	if v, _ := m.Field("previous status"); v != "hooked" {
		t.Fatalf("Field(previous status) = %q", v)
	}
	for _, bad := range [][2]string{{"two  spaces", "x"}, {"trailing ", "x"}, {"9lives", "x"}, {"Key", "multi\nline"}, {"", "x"}, {"Key", "bad\xff"}} {
		if _, err := maildir.FormatBody([][2]string{bad}, ""); !errors.Is(err, maildir.ErrInvalidMessage) {
			t.Errorf("FormatBody(%q) = %v", bad, err)
		}
	}
}

// An empty value is written as Gas Town writes it ("Error: "), and reads
// back as no field.
func TestEmptyFieldValue(t *testing.T) {
	body, err := maildir.FormatBody([][2]string{{"Branch", "polecat/nux"}, {"Error", ""}}, "merged")
	if err != nil || body != "Branch: polecat/nux\nError: \n\nmerged" {
		t.Fatalf("FormatBody = %q, %v", body, err)
	}
	m := &maildir.Message{Body: body}
	if v, ok := m.Field("Error"); ok {
		t.Fatalf("an empty field reads as %q", v)
	}
}

func ptr[T any](v T) *T { return &v }

// Search finds by text, sender (any spelling), type, priority and time,
// including text a script spelled with \u escapes, which the raw-bytes
// prefilter must not rule out.
func TestSearchAndFilters(t *testing.T) {
	ts := newStore(t)
	ts.send(t, "gastown/polecats/nux", "toast", "MERGE_READY nux")
	ts.send(t, "mayor", "toast", "WORK gt-1")
	ts.write(t, "state/mail/witness/escaped.json", `{"from": "cron", "subject": "the \u004eeedle here"}`)
	ts.write(t, "state/mail/witness/plain.json", `{"from": "cron", "subject": "nothing to see", "body": "Needle in the body"}`)
	find := func(f maildir.Filter) []string {
		t.Helper()
		m, err := f.Compile()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ts.Search(context.Background(), m, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		var subjects []string
		for _, g := range got {
			subjects = append(subjects, g.Subject)
		}
		slices.Sort(subjects)
		return subjects
	}
	if got := find(maildir.Filter{Text: "needle"}); !slices.Equal(got, []string{"nothing to see", "the Needle here"}) {
		t.Fatalf("text search: %q", got)
	}
	if got := find(maildir.Filter{From: "gastown/crew/nux"}); !slices.Equal(got, []string{"MERGE_READY nux"}) {
		t.Fatalf("from, another spelling: %q", got)
	}
	if got := find(maildir.Filter{Subject: `^WORK gt-\d+$`, Regexp: true}); !slices.Equal(got, []string{"WORK gt-1"}) {
		t.Fatalf("regexp: %q", got)
	}
	if got := find(maildir.Filter{Since: time.Now().Add(time.Hour)}); len(got) != 0 {
		t.Fatalf("since the future: %q", got)
	}
	if _, err := (maildir.Filter{Subject: "(", Regexp: true}).Compile(); !errors.Is(err, maildir.ErrInvalidMessage) {
		t.Fatalf("a bad pattern: %v", err)
	}
}

// A claim keeps only the oldest names of each pass over the queue: when
// more of the oldest items than one pass keeps cannot be had, it looks
// further, and claims still come oldest first.
func TestClaimLooksPastManyUnclaimableItems(t *testing.T) {
	ts := newStore(t)
	putItems(t, ts, "work", 60)
	dir := ts.path("state/queue/work")
	names, _ := os.ReadDir(dir)
	var warned []string
	ts.Warn = func(err error) { warned = append(warned, err.Error()) }
	for _, e := range names[:40] { // the 40 oldest are corrupt
		os.WriteFile(filepath.Join(dir, e.Name()), []byte("{not json"), 0o600)
	}
	for want := 40; want < 60; want++ {
		m, err := ts.Claim(mbox("queue:work"), mbox("polecat"))
		if err != nil {
			t.Fatalf("claim %d: %v", want, err)
		}
		if m.Subject != fmt.Sprint(want) {
			t.Fatalf("claimed item %s, want %d: not oldest first", m.Subject, want)
		}
	}
	if _, err := ts.Claim(mbox("queue:work"), mbox("polecat")); !errors.Is(err, maildir.ErrQueueEmpty) {
		t.Fatalf("after the last good item: %v, want ErrQueueEmpty", err)
	}
	if len(warned) < 40 {
		t.Fatalf("%d warnings, want one for each corrupt item at least", len(warned))
	}
}
