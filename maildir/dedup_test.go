package maildir_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// keyedHelperEnv makes the test binary one keyed sender (see
// TestKeyedSendHelper): "root dedup supersede kill".
const keyedHelperEnv = "MAILFS_KEYED_HELPER"

// TestKeyedSendHelper is not a test: run by the racing tests as a child
// process, it makes one keyed send to toast and exits; with kill set, it
// kills itself (SIGKILL) the moment the copy is durable in toast's
// mailbox, before anything is superseded.
func TestKeyedSendHelper(t *testing.T) {
	args := os.Getenv(keyedHelperEnv)
	if args == "" {
		t.Skip("a child process of the racing keyed-send tests")
	}
	f := strings.Split(args, "|")
	root, dedup, supersede, kill := f[0], f[1], f[2], f[3] == "kill"
	var opts []durable.Option
	if kill {
		opts = append(opts, durable.WithFault(func(step durable.Step, path string) error {
			if step == durable.StepDone && strings.Contains(path, "state/mail/toast/") && !strings.Contains(path, "/archive/") {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal arrives
			}
			return nil
		}))
	}
	s, err := maildir.OpenWith(root, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	res, err := s.SendKeyed(&maildir.Message{From: "gastown/witness", To: "toast", Subject: "patrol: refinery stalled", Body: fmt.Sprint(os.Getpid())}, dedup, supersede)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(res.Message.ID, res.Suppressed)
	os.Exit(0)
}

// race runs n keyed senders at once, as separate processes, and returns
// what each printed and how it ended.
func race(t *testing.T, root string, n int, dedup, supersede string, kill bool) (outs []string, errs []error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	k := ""
	if kill {
		k = "kill"
	}
	outs, errs = make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cmd := exec.Command(self, "-test.run=^TestKeyedSendHelper$")
			cmd.Env = append(os.Environ(), keyedHelperEnv+"="+strings.Join([]string{root, dedup, supersede, k}, "|"))
			out, err := cmd.Output()
			outs[i], errs[i] = string(out), err
		})
	}
	wg.Wait()
	return outs, errs
}

// inbox is toast's mailbox: live (read or not) and archived.
func inbox(t *testing.T, root string) (live, archived []*maildir.Message) {
	t.Helper()
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if live, err = s.List(toast, maildir.ListOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if archived, err = s.List(toast, maildir.ListOptions{All: true, Archived: true}); err != nil {
		t.Fatal(err)
	}
	return live, archived
}

// Eight processes racing one dedup key deliver one message; every one of
// them succeeds and names it. Once it is archived, the next send with the
// key delivers again.
func TestDedupKeyUnderRacingProcesses(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	outs, errs := race(t, root, 8, "refinery-stalled", "", false)
	delivered := map[string]bool{}
	for i, out := range outs {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
		id, suppressed, _ := strings.Cut(strings.TrimSpace(out), " ")
		delivered[id] = true
		_ = suppressed
	}
	live, _ := inbox(t, root)
	if len(live) != 1 || len(delivered) != 1 || !delivered[live[0].ID] {
		t.Fatalf("%d live messages, senders named %v; want one, named by all", len(live), delivered)
	}
	if n := strings.Count(strings.Join(outs, ""), " false\n"); n != 1 {
		t.Fatalf("%d senders say they delivered, want 1:\n%s", n, strings.Join(outs, ""))
	}
	s, _ := maildir.Open(root)
	defer s.Close()
	toast := maildir.Address{Kind: maildir.KindAgent, Name: "toast"}
	if errs, err := s.Archive(toast, []string{live[0].ID}); err != nil || errs[0] != nil {
		t.Fatal(err, errs)
	}
	res, err := s.SendKeyed(&maildir.Message{From: "gastown/witness", To: "toast", Subject: "again", Body: "x"}, "refinery-stalled", "")
	if err != nil || res.Suppressed {
		t.Fatalf("after the archive: %+v, %v; want a delivery", res, err)
	}
}

// Eight processes racing one supersede key leave exactly one unread
// message with it, the last delivered; the seven others are archived,
// none lost.
func TestSupersedeKeyUnderRacingProcesses(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	outs, errs := race(t, root, 8, "", "digest", false)
	for i := range outs {
		if errs[i] != nil {
			t.Fatalf("sender %d: %v", i, errs[i])
		}
	}
	live, archived := inbox(t, root)
	if len(live) != 1 || len(archived) != 7 {
		t.Fatalf("%d live, %d archived; want 1 and 7", len(live), len(archived))
	}
	for _, a := range archived {
		if !a.Timestamp.Before(live[0].Timestamp) {
			t.Fatalf("the live one (%s) is not the newest: %s was archived", live[0].ID, a.ID)
		}
	}
}

// A sender killed between its delivery and its superseding leaves the
// older message unread beside its own: never none. The next send with
// the key leaves one again. Every kill, every time.
func TestSupersedeKilledBetweenCopies(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	if _, errs := race(t, root, 1, "", "digest", false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	_, errs := race(t, root, 8, "", "digest", true)
	for i, err := range errs {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("sender %d was not killed mid-send: %v", i, err)
		}
	}
	live, archived := inbox(t, root)
	if len(live)+len(archived) != 9 {
		t.Fatalf("%d live, %d archived: a copy was lost or doubled (want 9 in all)", len(live), len(archived))
	}
	if len(live) < 2 {
		t.Fatalf("%d live after a kill before superseding; the killed senders' copies and the first stay unread", len(live))
	}
	if _, errs := race(t, root, 1, "", "digest", false); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if live, archived = inbox(t, root); len(live) != 1 || len(archived) != 9 {
		t.Fatalf("after one more send: %d live, %d archived; want 1 and 9", len(live), len(archived))
	}
}

// A dedup sender killed right after its delivery leaves the message
// there; the next sender with the key sees it and delivers nothing.
func TestDedupKilledAfterDelivery(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	if _, errs := race(t, root, 1, "stalled", "", true); errs[0] == nil {
		t.Fatal("the sender was not killed")
	}
	outs, errs := race(t, root, 8, "stalled", "", false)
	for i := range outs {
		if errs[i] != nil || !strings.HasSuffix(strings.TrimSpace(outs[i]), " true") {
			t.Fatalf("sender %d after the kill: %q, %v; want suppressed", i, outs[i], errs[i])
		}
	}
	if live, _ := inbox(t, root); len(live) != 1 {
		t.Fatalf("%d live, want the killed sender's one", len(live))
	}
}

// A key is validated as an idempotency key is; one recipient only; the
// keys and the metadata are kept in the file.
func TestSendKeyedRules(t *testing.T) {
	s, err := maildir.Open(filepath.Join(t.TempDir(), ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := &maildir.Message{From: "mayor", To: "toast", Subject: "s", Body: "b"}
	if _, err := s.SendKeyed(m, " padded", ""); !errors.Is(err, maildir.ErrBadKey) {
		t.Fatalf("a padded key: %v", err)
	}
	for _, to := range []string{"@all", "queue:work"} {
		if _, err := s.SendKeyed(&maildir.Message{From: "mayor", To: to, Subject: "s", Body: "b"}, "k", ""); err == nil {
			t.Fatalf("to %s: no error", to)
		}
	}
	if _, err := s.SendKeyed(&maildir.Message{From: "mayor", To: "toast", CC: []string{"nux"}, Subject: "s", Body: "b"}, "k", ""); !errors.Is(err, maildir.ErrKeyedRecipients) {
		t.Fatalf("with cc: %v", err)
	}
	m.Extra = map[string]json.RawMessage{maildir.MetaField: maildir.Meta(map[string]string{"rework": "gt-9", "attempt": "2"})}
	res, err := s.SendKeyed(m, "k1", "k2")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(s.Dir(), filepath.FromSlash(res.Message.Path)))
	for _, want := range []string{`"dedup_key": "k1"`, `"supersede_key": "k2"`, `"attempt": "2"`, `"rework": "gt-9"`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("%s not in the file:\n%s", want, data)
		}
	}
}
