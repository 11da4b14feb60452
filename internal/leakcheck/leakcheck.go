// Package leakcheck fails a test that leaves a goroutine running or a
// file lock held when it ends: call Check(t) first thing in the test.
// It is for tests only, and for tests that do not run in parallel with
// others (it compares the whole process before and after).
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// T is the part of testing.TB Check uses.
type T interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
}

// Wait is how long Check lets goroutines take to end after the test (a
// Close that waits makes it instant; a cancelled context, a moment).
const Wait = 5 * time.Second

// Check records the goroutines and this process's file locks now, and at
// the test's end (after the cleanups registered after it) fails t for
// each goroutine started since that is still running once Wait has passed,
// and each flock(2) lock taken since that is still held.
func Check(t T) {
	t.Helper()
	before, locks := goroutines(), heldLocks()
	t.Cleanup(func() {
		t.Helper()
		deadline := time.Now().Add(Wait)
		left := leftSince(before)
		for len(left) > 0 && time.Now().Before(deadline) {
			runtime.Gosched()
			time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
			left = leftSince(before)
		}
		for _, g := range left {
			t.Errorf("leakcheck: a goroutine the test started is still running:\n%s", g)
		}
		for _, l := range heldLocks() {
			if !slices.Contains(locks, l) {
				t.Errorf("leakcheck: a file lock the test took is still held (/proc/locks: %s)", l)
			}
		}
	})
}

// goroutines returns every goroutine's stack by its id.
func goroutines() map[int]string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[int]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		head, _, _ := strings.Cut(string(g), "\n")
		f := strings.Fields(head) // goroutine 7 [chan receive]:
		if len(f) < 2 || f[0] != "goroutine" {
			continue
		}
		if id, err := strconv.Atoi(f[1]); err == nil {
			out[id] = string(g)
		}
	}
	return out
}

// leftSince returns the goroutines running now that were not in before,
// but those that live as long as the process (os/signal's).
func leftSince(before map[int]string) []string {
	var left []string
	for id, g := range goroutines() {
		if _, old := before[id]; old || strings.Contains(g, "os/signal.signal_recv") || strings.Contains(g, "os/signal.loop") {
			continue
		}
		left = append(left, g)
	}
	slices.Sort(left)
	return left
}

// heldLocks returns the flock(2) locks this process holds, as
// /proc/locks says them (without the line number); none where there is
// no /proc.
func heldLocks() []string {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return nil
	}
	pid := strconv.Itoa(os.Getpid())
	var out []string
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line) // 1: FLOCK  ADVISORY  WRITE 1234 00:2e:5678 0 EOF
		if len(f) >= 6 && f[1] == "FLOCK" && f[4] == pid {
			out = append(out, fmt.Sprint(f[1:]))
		}
	}
	return out
}
