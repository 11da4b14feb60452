package maildir_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/maildir"
)

// The fault matrix: every operation that writes, failed or killed
// (SIGKILL) at each step of the durable write it reaches, the fault standing
// in for that step's system call. Afterwards nothing acknowledged is
// missing, nothing unacknowledged is half-visible, and at most dot-temps are
// left.
//
// One errno stands for all: no code path branches on which error a system
// call returned. TestRealDiskFull gives a real ENOSPC from a real file
// system.
var injected = []error{syscall.EIO}

// faultOp is one writing operation under test.
type faultOp struct {
	name  string
	steps []durable.Step // the steps this operation goes through
	// setup prepares the tree, with no fault installed.
	setup func(t *testing.T, s *maildir.Store)
	// run performs the operation.
	run func(s *maildir.Store) error
	// check verifies the tree afterwards; acked is whether run returned nil.
	check func(t *testing.T, ts *testStore, acked bool)
}

var (
	writeSteps = []durable.Step{durable.StepCreateTemp, durable.StepWrite, durable.StepSync, durable.StepRename, durable.StepSyncDir}
	moveSteps  = []durable.Step{durable.StepRename, durable.StepSyncDir}
)

// visible returns the non-dot entries of a folder, and whether any other
// (dot) entry is there.
func visible(t *testing.T, ts *testStore, rel string) (names []string, dots []string) {
	ents, err := os.ReadDir(ts.path(rel))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			dots = append(dots, e.Name())
		} else if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names, dots
}

// parses asserts every visible file of a folder is a whole message.
func parses(t *testing.T, ts *testStore, rel string) []*maildir.Message {
	t.Helper()
	names, _ := visible(t, ts, rel)
	var out []*maildir.Message
	for _, n := range names {
		data, err := os.ReadFile(ts.path(rel + "/" + n))
		if err != nil {
			t.Fatal(err)
		}
		m, err := maildir.Parse(data)
		if err != nil {
			t.Fatalf("%s/%s is half-written: %v", rel, n, err)
		}
		out = append(out, m)
	}
	return out
}

var faultOps = []faultOp{
	{
		name:  "send",
		steps: writeSteps,
		setup: func(t *testing.T, s *maildir.Store) { s.Init() },
		run: func(s *maildir.Store) error {
			_, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "the one"})
			return err
		},
		check: func(t *testing.T, ts *testStore, acked bool) {
			msgs := parses(t, ts, "state/mail/toast")
			if acked && len(msgs) != 1 {
				t.Fatalf("acknowledged, but %d messages visible", len(msgs))
			}
			if len(msgs) > 1 {
				t.Fatalf("%d copies of one send", len(msgs))
			}
		},
	},
	{
		name:  "mark-read",
		steps: writeSteps,
		setup: func(t *testing.T, s *maildir.Store) {
			if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "mark me"}); err != nil {
				t.Fatal(err)
			}
		},
		run: func(s *maildir.Store) error {
			_, err := s.MarkRead(mbox("toast"), "2")
			return err
		},
		check: func(t *testing.T, ts *testStore, acked bool) {
			msgs := parses(t, ts, "state/mail/toast")
			if len(msgs) != 1 || msgs[0].Subject != "mark me" {
				t.Fatalf("after the mark: %d messages", len(msgs))
			}
			if acked && !msgs[0].Read {
				t.Fatal("acknowledged, but not read")
			}
		},
	},
	{
		name:  "archive",
		steps: moveSteps,
		setup: func(t *testing.T, s *maildir.Store) {
			if _, err := s.Send(&maildir.Message{From: "mayor", To: "toast", Subject: "old"}); err != nil {
				t.Fatal(err)
			}
		},
		run: func(s *maildir.Store) error {
			errs, err := s.Archive(mbox("toast"), []string{"2"})
			return errors.Join(append(errs, err)...)
		},
		check: func(t *testing.T, ts *testStore, acked bool) {
			active, archived := parses(t, ts, "state/mail/toast"), parses(t, ts, "state/mail/toast/archive")
			if len(active)+len(archived) != 1 {
				t.Fatalf("%d in the mailbox, %d in the archive; want exactly one in all", len(active), len(archived))
			}
			if acked && len(archived) != 1 {
				t.Fatal("acknowledged, but not archived")
			}
		},
	},
	{
		name:  "claim",
		steps: writeSteps, // the claim record's rewrite, then the move
		setup: func(t *testing.T, s *maildir.Store) {
			if err := s.CreateQueue("work"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(&maildir.Message{From: "mayor", To: "queue:work", Subject: "item"}); err != nil {
				t.Fatal(err)
			}
		},
		run: func(s *maildir.Store) error {
			_, err := s.Claim(mbox("queue:work"), mbox("toast"))
			return err
		},
		check: func(t *testing.T, ts *testStore, acked bool) {
			queued, claimed := parses(t, ts, "state/queue/work"), parses(t, ts, "state/mail/toast")
			if len(queued)+len(claimed) != 1 {
				t.Fatalf("%d queued, %d claimed; want exactly one in all", len(queued), len(claimed))
			}
			if acked && len(claimed) != 1 {
				t.Fatal("acknowledged, but not claimed")
			}
		},
	},
}

func TestFaultMatrixErrors(t *testing.T) {
	for _, op := range faultOps {
		for _, step := range op.steps {
			for _, inj := range injected {
				t.Run(fmt.Sprintf("%s/%v/%v", op.name, step, inj), func(t *testing.T) {
					ts := newStore(t)
					op.setup(t, ts.Store)
					calls := map[durable.Step]int{}
					faulty := ts.reopen(t, durable.WithFault(func(s durable.Step, path string) error {
						calls[s]++
						if s == step {
							return inj
						}
						return nil
					}))
					err := op.run(faulty.Store)
					if calls[step] == 0 {
						t.Fatalf("the operation never reached %v: this case tests nothing", step)
					}
					if !errors.Is(err, inj) {
						t.Fatalf("%v injected at %v, the operation returned %v", inj, step, err)
					}
					if step == durable.StepSync && calls[durable.StepSync] > 1 {
						t.Fatalf("fsync failed, then ran %d times: a failed fsync must not be retried", calls[durable.StepSync])
					}
					op.check(t, ts, err == nil)
				})
			}
		}
	}
}

// TestMain's "fault" child: run $OP on $ROOT and kill itself with SIGKILL
// at $STEP.
func childFault() {
	step := os.Getenv("STEP")
	s, err := maildir.OpenWith(os.Getenv("ROOT"), durable.WithFault(func(st durable.Step, path string) error {
		if st.String() == step {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
		return nil
	}))
	if err != nil {
		os.Exit(1)
	}
	for _, op := range faultOps {
		if op.name == os.Getenv("OP") {
			if err := op.run(s); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println("done")
			os.Exit(0)
		}
	}
	os.Exit(2)
}

func TestFaultMatrixKills(t *testing.T) {
	for _, op := range faultOps {
		// The last case kills nowhere: the operation runs to its end.
		for _, step := range append(stepNames(op.steps), "none") {
			t.Run(op.name+"/"+step, func(t *testing.T) {
				ts := newStore(t)
				op.setup(t, ts.Store)
				cmd := exec.Command(os.Args[0], "-test.run=^$")
				cmd.Env = append(os.Environ(), "MAILDIR_TEST_CHILD=fault", "ROOT="+ts.dir, "OP="+op.name, "STEP="+step,
					"GORACE=atexit_sleep_ms=0")
				out, err := cmd.Output()
				var exit *exec.ExitError
				killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
				if !killed && err != nil {
					t.Fatalf("child: %v", err)
				}
				acked := strings.TrimSpace(string(out)) == "done"
				if killed == acked || killed != (step != "none") {
					t.Fatalf("step %s: killed %v, acknowledged %v", step, killed, acked)
				}
				op.check(t, ts, acked)
				for _, dir := range []string{"state/mail/toast", "state/mail/toast/archive", "state/queue/work"} {
					_, dots := visible(t, ts, dir)
					for _, d := range dots {
						if !strings.HasPrefix(d, durable.TempPrefix) && !strings.HasPrefix(d, durable.SwapPrefix) {
							t.Errorf("left %s/%s, which is not a mailfs temp", dir, d)
						}
					}
				}
			})
		}
	}
}

func stepNames(steps []durable.Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.String()
	}
	return out
}
