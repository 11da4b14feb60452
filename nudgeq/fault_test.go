package nudgeq_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/durable"
	"github.com/mailfs/mailfs/nudgeq"
)

// The fault matrix for nudges: enqueue (an atomic write without fsyncs)
// and drain (claims by rename), failed or killed at each step they reach.

// One errno stands for all: no code path branches on which error a system
// call returned (maildir's TestRealDiskFull gives a real ENOSPC).
var injected = []error{syscall.EIO}

func TestEnqueueFaults(t *testing.T) {
	for _, step := range []durable.Step{durable.StepCreateTemp, durable.StepWrite, durable.StepRename} {
		for _, inj := range injected {
			t.Run(fmt.Sprintf("%v/%v", step, inj), func(t *testing.T) {
				f := newFixture(t)
				reached := false
				nudgeq.SetFault(f.q, func(s durable.Step, _ string) error {
					if s == step {
						reached = true
						return inj
					}
					return nil
				})
				_, err := f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "x"}, 0)
				if !reached || !errors.Is(err, inj) {
					t.Fatalf("reached %v, got %v; want %v", reached, err, inj)
				}
				if left := files(t, f.box("a")); len(left) != 0 {
					t.Fatalf("a failed enqueue left %q", left)
				}
			})
		}
	}
}

// A fault while claiming: the nudge is not shown now, and comes back after
// the orphan timeout, once.
func TestDrainFaults(t *testing.T) {
	for _, inj := range injected {
		t.Run(inj.Error(), func(t *testing.T) {
			f := newFixture(t)
			for i := range 3 {
				f.enqueue(t, "a", fmt.Sprint(i))
			}
			failed := false
			nudgeq.SetFault(f.q, func(s durable.Step, _ string) error {
				if s == durable.StepRename && !failed {
					failed = true
					return inj // the claim rename of the first nudge "fails" after happening
				}
				return nil
			})
			f.q.Close() // the fault is installed when the root is opened
			seen := map[string]int{}
			drain := func() {
				b, err := f.q.Drain("a")
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range b.Nudges {
					seen[n.Message]++
				}
			}
			drain()
			if !failed {
				t.Fatal("the claim never reached the fault")
			}
			f.advance(nudgeq.DefaultOrphanAfter)
			drain()
			checkOnce(t, seen, 3)
		})
	}
}

// childEnqueue queues one nudge on $ROOT, killing itself at $STEP.
func childEnqueue() {
	q, err := nudgeq.Open(os.Getenv("ROOT"))
	if err != nil {
		os.Exit(1)
	}
	nudgeq.SetFault(q, func(s durable.Step, _ string) error {
		if s.String() == os.Getenv("STEP") {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	})
	if _, err := q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "the one"}, 0); err != nil {
		os.Exit(1)
	}
	fmt.Println("done")
	os.Exit(0)
}

func TestEnqueueKills(t *testing.T) {
	// The last case kills nowhere: the enqueue runs to its end.
	for _, step := range []string{"create-temp", "write", "rename", "none"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t)
			f.set(time.Now())
			f.q.Enqueue("a", nudgeq.Nudge{Sender: "m", Message: "before"}, 0) // makes the queue
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "NUDGEQ_TEST_CHILD=enqueue", "ROOT="+f.dir, "STEP="+step, "GORACE=atexit_sleep_ms=0")
			out, _ := cmd.Output()
			acked := strings.TrimSpace(string(out)) == "done"
			if (step == "none") != acked {
				t.Fatalf("step %s: acknowledged %v: a kill must stop the enqueue, and no kill must not", step, acked)
			}
			b, err := f.q.Drain("a")
			if err != nil {
				t.Fatal(err)
			}
			got := messages(b.Nudges)
			switch {
			case acked && len(got) != 2:
				t.Fatalf("acknowledged, but drained %q", got)
			case len(got) < 1 || len(got) > 2 || got[0] != "before":
				t.Fatalf("drained %q", got)
			}
			for _, name := range files(t, f.box("a")) {
				if !strings.HasPrefix(name, durable.TempPrefix) && name != "refused" {
					t.Errorf("left %s, which is not a temp", name)
				}
			}
		})
	}
}
