package nudgeq_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// gastownNudge writes a nudge file exactly as Gas Town's nudge.Enqueue
// does: "<unixnano>-<8 hex>.json", json.MarshalIndent of its QueuedNudge
// (omitempty fields left out), the mtime the write gave it.
func gastownNudge(t *testing.T, f *fixture, agent string, at time.Time, hex, body string) string {
	t.Helper()
	name := fmt.Sprintf("%d-%s.json", at.UnixNano(), hex)
	dir := f.box(agent)
	os.MkdirAll(dir, 0o700)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(dir, name), at, at)
	return name
}

// A queue shared with Gas Town: its files, priorities, deferrals and claim
// names are read by Gas Town's rules, and mailfs's claims do not look
// orphaned to Gas Town's mtime-based recovery.
func TestSharedQueueWithGasTown(t *testing.T) {
	f := newFixture(t)
	// The kernel's clock, not t0: a claim's ctime is the kernel's.
	now := time.Now().UTC().Truncate(time.Millisecond)
	f.set(now)
	ts := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }

	// An old nudge (queued an hour ago), with a priority word mailfs does
	// not write and no expires_at: drained, as normal, with the default TTL
	// counted from its timestamp (so still alive at 20 minutes old).
	old := gastownNudge(t, f, "toast", now.Add(-20*time.Minute), "a1b2c3d4",
		`{
  "sender": "gastown/witness",
  "message": "status?",
  "priority": "high",
  "kind": "health_check",
  "timestamp": "`+ts(-20*time.Minute)+`"
}`)
	// A deferred reminder: held back until deliver_after.
	gastownNudge(t, f, "toast", now.Add(-time.Minute), "0badcafe",
		`{
  "sender": "deacon",
  "message": "remember the release",
  "priority": "normal",
  "timestamp": "`+ts(-time.Minute)+`",
  "expires_at": "`+ts(time.Hour)+`",
  "deliver_after": "`+ts(10*time.Minute)+`"
}`)
	// A nudge queued 40 minutes ago that Gas Town claimed a moment ago: its
	// claim name carries no time and the rename kept the old mtime, but the
	// rename set the ctime: a live claim, not an orphan.
	held := gastownNudge(t, f, "toast", now.Add(-40*time.Minute), "feedf00d",
		`{"sender":"mayor","message":"held by gas town","priority":"urgent","timestamp":"`+ts(-40*time.Minute)+`","expires_at":"`+ts(time.Hour)+`"}`)
	os.Rename(filepath.Join(f.box("toast"), held), filepath.Join(f.box("toast"), held+".claimed.deadbeef"))

	b, err := f.q.Claim("toast")
	if err != nil {
		t.Fatal(err)
	}
	got := messages(b.Nudges)
	slices.Sort(got)
	if want := []string{"status?"}; !slices.Equal(got, want) {
		t.Fatalf("drained %q, want %q (not the held claim, not the deferred one)", got, want)
	}
	for _, n := range b.Nudges {
		if n.Message == "status?" && (n.Priority != nudgeq.Normal || !n.ExpiresAt.Equal(now.Add(-20*time.Minute).Add(nudgeq.DefaultTTL))) {
			t.Fatalf("Gas Town's nudge read as %+v", n)
		}
	}
	// mailfs's own claim is fresh by its mtime, which Gas Town reads: its
	// recovery (mtime older than five minutes) would not steal it.
	ents, _ := os.ReadDir(f.box("toast"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), old+".claimed.") {
			info, _ := e.Info()
			if now.Sub(info.ModTime()) >= 5*time.Minute {
				t.Fatalf("mailfs's claim of an old nudge keeps an mtime %v old: Gas Town would take it for an orphan", now.Sub(info.ModTime()))
			}
		}
	}
	b.Commit()
	if _, err := os.Stat(filepath.Join(f.box("toast"), held+".claimed.deadbeef")); err != nil {
		t.Fatalf("mailfs touched Gas Town's live claim: %v", err)
	}
	// Gas Town's drainer dies: eleven minutes on, its claim is an orphan
	// (by the time of its rename) and is delivered, with the deferred
	// nudge whose time has come; each only once.
	f.set(now.Add(11 * time.Minute))
	b, _ = f.q.Drain("toast")
	got = messages(b.Nudges)
	slices.Sort(got)
	if want := []string{"held by gas town", "remember the release"}; !slices.Equal(got, want) {
		t.Fatalf("eleven minutes on: %q, want %q", got, want)
	}
	if b, _ := f.q.Drain("toast"); len(b.Nudges) != 0 {
		t.Fatalf("delivered twice: %q", messages(b.Nudges))
	}
}

// Gas Town writes nudges from no agent with an empty sender (or none):
// they are delivered, shown as from (no sender), and never left queued to
// warn at every drain.
func TestGasTownNudgeWithoutSender(t *testing.T) {
	f := newFixture(t)
	ts := t0.UTC().Format(time.RFC3339Nano)
	gastownNudge(t, f, "toast", t0, "a1b2c3d4", `{"sender":"","message":"system check","priority":"normal","timestamp":"`+ts+`"}`)
	gastownNudge(t, f, "toast", t0.Add(time.Millisecond), "a1b2c3d5", `{"message":"no sender key","timestamp":"`+ts+`"}`)
	b, err := f.q.Drain("toast")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Nudges) != 2 || b.Nudges[0].Sender != nudgeq.NoSender || b.Nudges[1].Sender != nudgeq.NoSender {
		t.Fatalf("drained %+v", b.Nudges)
	}
	if b.Nudges[0].Message != "system check" {
		t.Fatalf("drained %+v", b.Nudges[0])
	}
	if n, _ := f.q.Len("toast"); n != 0 || len(f.warns) != 0 {
		t.Fatalf("%d left queued, warnings %v", n, f.warns)
	}
}

// An agent's queue folder may be a symbolic link to Gas Town's nudge folder
// for the agent, the one link mailfs follows below the root: both tools
// then share one queue.
func TestQueueSharedThroughALink(t *testing.T) {
	f := newFixture(t)
	gt := filepath.Join(t.TempDir(), "gastown", ".runtime", "nudge_queue", "gt-gastown-toast")
	os.MkdirAll(gt, 0o700)
	os.MkdirAll(filepath.Join(f.dir, "runtime", "nudge"), 0o700)
	if err := os.Symlink(gt, f.box("toast")); err != nil {
		t.Fatal(err)
	}
	ts := t0.UTC().Format(time.RFC3339Nano)
	os.WriteFile(filepath.Join(gt, fmt.Sprintf("%d-a1b2c3d4.json", t0.UnixNano())), []byte(`{"sender":"gastown/witness","message":"from gas town","timestamp":"`+ts+`"}`), 0o600)
	if _, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "from mailfs"}, 0); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(gt)
	if len(ents) != 2 {
		t.Fatalf("mailfs's nudge did not land in Gas Town's folder: %v", ents)
	}
	if n, err := f.q.Len("toast"); n != 2 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
	b, err := f.q.Drain("toast")
	if err != nil {
		t.Fatal(err)
	}
	got := messages(b.Nudges)
	slices.Sort(got)
	if !slices.Equal(got, []string{"from gas town", "from mailfs"}) {
		t.Fatalf("drained %q", got)
	}
	b.Commit()
	if st, err := os.Lstat(f.box("toast")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	// A link to a file is refused, and nothing is written through it.
	os.Remove(f.box("toast"))
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	os.Symlink(file, f.box("toast"))
	if _, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "x"}, 0); err == nil {
		t.Fatal("a nudge was queued through a link to a file")
	}
}

// sharedWithGasTown links toast's queue to a Gas Town town's queue folder
// for its session and returns the town's folder and the queue's.
func sharedWithGasTown(t *testing.T, f *fixture) (town, queue string) {
	t.Helper()
	town = filepath.Join(t.TempDir(), "gastown")
	queue = filepath.Join(town, ".runtime", "nudge_queue", "gt-gastown-toast")
	os.MkdirAll(queue, 0o700)
	os.MkdirAll(filepath.Join(f.dir, "runtime", "nudge"), 0o700)
	if err := os.Symlink(queue, f.box("toast")); err != nil {
		t.Fatal(err)
	}
	return town, queue
}

// A reply clears the reply reminders Gas Town queued for the message it
// answers, as Gas Town's own send does (ClearReplyReminders: by thread,
// else by the original's sender and subject, "Re:" aside); other nudges,
// other threads' reminders and claimed files stay (gagecane/gastown
// 57bcb59d, internal/nudge/queue.go RemoveKindByThread and
// RemoveKindByOriginal).
func TestAReplyClearsGasTownsReplyReminders(t *testing.T) {
	f := newFixture(t)
	_, queue := sharedWithGasTown(t, f)
	ts := t0.UTC().Format(time.RFC3339Nano)
	name := func(i int, hex string) string { return fmt.Sprintf("%d-%s.json", t0.UnixNano()+int64(i), hex) }
	put := func(name, extra string) {
		os.WriteFile(filepath.Join(queue, name), []byte(`{"sender":"gastown/witness","message":"reply to it","timestamp":"`+ts+`"`+extra+`}`), 0o600)
	}
	put(name(1, "aaaaaaaa"), `,"kind":"reply-reminder","thread_id":"T1"`)
	put(name(2, "bbbbbbbb"), `,"kind":"reply-reminder","thread_id":"T2"`)
	put(name(3, "cccccccc"), `,"kind":"reply-reminder","original_from":"mayor/","original_subject":"WORK gt-9"`)
	put(name(4, "dddddddd"), `,"kind":"status","thread_id":"T1"`)
	claimed := name(5, "eeeeeeee") + fmt.Sprintf(".claimed.%d-ff", t0.UnixNano())
	put(claimed, `,"kind":"reply-reminder","thread_id":"T1"`)
	n, err := f.q.ClearReplyReminders("toast", &maildir.Message{From: "toast", To: "mayor", Subject: "Re: re:WORK gt-9", Thread: "T1", ReplyTo: "X"})
	if err != nil || n != 2 {
		t.Fatalf("cleared %d, %v; want the thread's reminder and the subject's", n, err)
	}
	var left []string
	ents, _ := os.ReadDir(queue)
	for _, e := range ents {
		left = append(left, e.Name())
	}
	if want := []string{name(2, "bbbbbbbb"), name(4, "dddddddd"), claimed}; !slices.Equal(left, want) {
		t.Fatalf("left %v, want %v", left, want)
	}
}

// A queue shared with Gas Town takes its depth and its stale-claim time
// from the town's settings (settings/config.json, "operational" →
// "nudge": max_queue_depth, stale_claim_threshold), as Gas Town does
// (internal/config/operational.go, 57bcb59d): both tools then agree.
func TestSharedQueueTakesTheTownsLimits(t *testing.T) {
	f := newFixture(t)
	town, queue := sharedWithGasTown(t, f)
	os.MkdirAll(filepath.Join(town, "settings"), 0o700)
	os.WriteFile(filepath.Join(town, "settings", "config.json"), []byte(`{"operational":{"nudge":{"max_queue_depth":2,"stale_claim_threshold":"30s"}}}`), 0o600)
	for i := range 2 {
		if _, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: fmt.Sprint("n", i)}, 0); err != nil {
			t.Fatal(err)
		}
	}
	var full *nudgeq.FullError
	if _, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "third"}, 0); !errors.As(err, &full) || full.Max != 2 {
		t.Fatalf("a third nudge past the town's depth of 2: %v", err)
	}
	// A claim a minute old is stale by the town's 30s (mailfs's default
	// is 5 minutes): the next drain takes it back.
	ents, _ := os.ReadDir(queue)
	var first string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".json") {
			first = e.Name()
			break
		}
	}
	claimed := fmt.Sprintf("%s.claimed.%d-abcd", first, f.clock.Add(-time.Minute).UnixNano())
	if err := os.Rename(filepath.Join(queue, first), filepath.Join(queue, claimed)); err != nil {
		t.Fatal(err)
	}
	b, err := f.q.Drain("toast")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Nudges) != 2 {
		t.Fatalf("drained %d, want both (the stale claim back)", len(b.Nudges))
	}
	b.Commit()
}

// gtQueuedNudge is Gas Town's QueuedNudge (internal/nudge/queue.go,
// 57bcb59d): json.MarshalIndent of it is the file its Enqueue writes.
type gtQueuedNudge struct {
	Sender          string    `json:"sender"`
	Message         string    `json:"message"`
	Priority        string    `json:"priority"`
	Kind            string    `json:"kind,omitempty"`
	ThreadID        string    `json:"thread_id,omitempty"`
	Severity        string    `json:"severity,omitempty"`
	Timestamp       time.Time `json:"timestamp"`
	ExpiresAt       time.Time `json:"expires_at,omitempty"`
	DeliverAfter    time.Time `json:"deliver_after,omitempty"`
	OriginalFrom    string    `json:"original_from,omitempty"`
	OriginalSubject string    `json:"original_subject,omitempty"`
}

// gtReminder writes into queue a reply reminder as Gas Town's
// enqueueReplyReminder queues it, and returns its file name.
func gtReminder(t *testing.T, queue string, i int, thread string, armed time.Time, delay time.Duration) string {
	t.Helper()
	n := gtQueuedNudge{Sender: "system", Message: "Remember to reply to mayor/ (subject: \"WORK gt-9\") via `gt mail send mayor/` — not in chat.",
		Priority: "normal", Kind: nudgeq.ReplyReminder, ThreadID: thread, Timestamp: armed, ExpiresAt: armed.Add(30 * time.Minute),
		DeliverAfter: armed.Add(delay), OriginalFrom: "mayor/", OriginalSubject: "WORK gt-9"}
	data, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("%d-%08x.json", armed.UnixNano()+int64(i), i)
	if err := os.WriteFile(filepath.Join(queue, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// Reading, marking read, archiving a message do to the reply reminders
// Gas Town queued for its thread what Gas Town's own verbs do
// (internal/cmd/mail_inbox.go: read → DeferReplyReminders, by the town's
// reply_reminder_delay; mark-read, archive → ClearReplyReminders), and
// the message's send --nudge announcement dies with the read; every key
// of a deferred file but deliver_after is kept, and Gas Town still reads
// it.
func TestMailSeenFollowsGasTownsReminderRules(t *testing.T) {
	f := newFixture(t)
	town, queue := sharedWithGasTown(t, f)
	os.MkdirAll(filepath.Join(town, "settings"), 0o700)
	os.WriteFile(filepath.Join(town, "settings", "config.json"), []byte(`{"operational":{"mail":{"reply_reminder_delay":"10m"}}}`), 0o600)
	armed := f.clock.Add(-time.Minute)
	r1 := gtReminder(t, queue, 1, "T1", armed, 5*time.Minute)
	r2 := gtReminder(t, queue, 2, "T2", armed, 5*time.Minute)
	ann, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "mayor", Message: "new mail", MailID: "M1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := &maildir.Message{ID: "M1", Thread: "T1"}
	if n, err := f.q.MailSeen("toast", nudgeq.MailRead, read); err != nil || n != 2 {
		t.Fatalf("a read changed %d nudges, %v; want the announcement gone and T1's reminder deferred", n, err)
	}
	if _, err := os.Stat(filepath.Join(queue, ann.ID+".json")); !os.IsNotExist(err) {
		t.Fatalf("the announcement outlived the read: %v", err)
	}
	var got gtQueuedNudge
	data, _ := os.ReadFile(filepath.Join(queue, r1))
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("Gas Town cannot read the deferred reminder: %v\n%s", err, data)
	}
	if !got.DeliverAfter.Equal(f.clock.Add(10*time.Minute)) || got.OriginalFrom != "mayor/" || got.ThreadID != "T1" || got.Kind != nudgeq.ReplyReminder || !got.Timestamp.Equal(armed) {
		t.Fatalf("deferred reminder: %+v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(queue, r2)); !strings.Contains(string(b), `"deliver_after": "`+armed.Add(5*time.Minute).Format(time.RFC3339Nano)) {
		t.Fatalf("another thread's reminder changed:\n%s", b)
	}
	// Drained now, the deferred reminder stays queued (its deadline is
	// ahead), so does T2's (5 minutes after arming).
	b, err := f.q.Drain("toast")
	if err != nil || len(b.Nudges) != 0 {
		t.Fatalf("drained %v, %v; want nothing yet", b, err)
	}
	// A mark-read (or an archive) of a message of T1 clears T1's reminder.
	if n, err := f.q.MailSeen("toast", nudgeq.MailSettled, &maildir.Message{ID: "M7", Thread: "T1"}); err != nil || n != 1 {
		t.Fatalf("a settle removed %d, %v", n, err)
	}
	left, _ := os.ReadDir(queue)
	if len(left) != 1 || left[0].Name() != r2 {
		t.Fatalf("left %v, want only T2's reminder", left)
	}
}

// At delivery, a reply reminder for a thread its agent has answered since
// it was armed is dropped, unseen (Gas Town's
// FilterDeliverableReplyReminders); one for a thread not answered, or
// not in this tree, is delivered.
func TestDrainDropsAnsweredReminders(t *testing.T) {
	f := newFixture(t)
	_, queue := sharedWithGasTown(t, f)
	s, err := maildir.Open(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clock := t0.Add(-time.Hour)
	s.Now = func() time.Time { clock = clock.Add(time.Second); return clock }
	f.q.Mail = s
	sent, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "WORK gt-9", Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "WORK gt-10", Body: "y"})
	if err != nil {
		t.Fatal(err)
	}
	armed := clock.Add(time.Second)
	answered := gtReminder(t, queue, 1, sent[0].Thread, armed, 0)
	gtReminder(t, queue, 2, other[0].Thread, armed, 0)
	gtReminder(t, queue, 3, "a-gas-town-thread", armed, 0)
	clock = armed.Add(time.Second)
	if _, err := s.ReplyTo(sent[0], &maildir.Message{From: "Toast", Body: "done"}); err != nil {
		t.Fatal(err)
	}
	f.clock = clock.Add(time.Second) // the drain's now: the reminders are due, not expired
	b, err := f.q.Drain("toast")
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Nudges) != 2 {
		t.Fatalf("delivered %d reminders, want 2 (the answered thread's dropped)", len(b.Nudges))
	}
	for _, n := range b.Nudges {
		if n.ThreadID == sent[0].Thread {
			t.Fatalf("the answered thread's reminder was delivered: %+v", n)
		}
	}
	if _, err := os.Stat(filepath.Join(queue, answered)); !os.IsNotExist(err) {
		t.Fatalf("the answered reminder is still queued: %v", err)
	}
}

// In a queue Gas Town reads, mailfs spells a nudge's sender as Gas Town
// does (gastown/witness, not gastown.witness); in its own, as its ids.
func TestSharedQueueSpellsSendersAsGasTown(t *testing.T) {
	f := newFixture(t)
	_, queue := sharedWithGasTown(t, f)
	n, err := f.q.Enqueue("toast", nudgeq.Nudge{Sender: "gastown.witness", Message: "check your mail"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got gtQueuedNudge
	data, _ := os.ReadFile(filepath.Join(queue, n.ID+".json"))
	if err := json.Unmarshal(data, &got); err != nil || got.Sender != "gastown/witness" {
		t.Fatalf("sender in Gas Town's queue: %q, %v", got.Sender, err)
	}
	own, err := f.q.Enqueue("nux", nudgeq.Nudge{Sender: "gastown/witness", Message: "check your mail"}, 0)
	if err != nil || own.Sender != "gastown.witness" {
		t.Fatalf("sender in mailfs's own queue: %+v, %v", own, err)
	}
}
