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
				reached := false
				f := newFixture(t, durable.WithFault(func(s durable.Step, _ string) error {
					if s == step {
						reached = true
						return inj
					}
					return nil
				}))
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

// A claim rename that fails: that nudge is not shown now, stays queued, and
// the next drain shows it, once; the others are shown at once.
func TestDrainFaults(t *testing.T) {
	for _, inj := range injected {
		t.Run(inj.Error(), func(t *testing.T) {
			f := newFixture(t)
			for i := range 3 {
				f.enqueue(t, "a", fmt.Sprint(i))
			}
			failed := false
			f.reopen(t, durable.WithFault(func(s durable.Step, _ string) error {
				if s == durable.StepRename && !failed {
					failed = true
					return inj // in place of the first nudge's claim rename
				}
				return nil
			}))
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
			if n, _ := f.q.Len("a"); len(seen) != 2 || n != 1 {
				t.Fatalf("after the failed claim: shown %v, %d still queued; want 2 shown, 1 queued", seen, n)
			}
			drain()
			checkOnce(t, seen, 3)
		})
	}
}

// childEnqueue queues one nudge on $ROOT, killing itself at $STEP.
func childEnqueue() {
	q, err := nudgeq.OpenWith(os.Getenv("ROOT"), durable.WithFault(func(s durable.Step, _ string) error {
		if s.String() == os.Getenv("STEP") {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}))
	if err != nil {
		os.Exit(1)
	}
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

// When no nudge can be claimed at all (a root that cannot be written), a
// drain is an error, not an empty queue, and every nudge stays queued.
func TestDrainThatCanClaimNothingFails(t *testing.T) {
	f := newFixture(t)
	for i := range 3 {
		f.enqueue(t, "a", fmt.Sprint(i))
	}
	f.reopen(t, durable.WithFault(func(s durable.Step, _ string) error {
		if s == durable.StepRename {
			return syscall.EROFS
		}
		return nil
	}))
	b, err := f.q.Drain("a")
	if !errors.Is(err, syscall.EROFS) || b != nil {
		t.Fatalf("Drain = %v, %v; want the claim's error", b, err)
	}
	if n, _ := f.q.Len("a"); n != 3 {
		t.Fatalf("%d queued after the failed drain, want 3", n)
	}
}
