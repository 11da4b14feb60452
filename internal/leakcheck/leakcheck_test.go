package leakcheck

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fake is a T whose cleanups run when the test says, and whose errors are
// kept.
type fake struct {
	cleanups []func()
	errs     []string
}

func (f *fake) Helper()                           {}
func (f *fake) Cleanup(fn func())                 { f.cleanups = append(f.cleanups, fn) }
func (f *fake) Errorf(format string, args ...any) { f.errs = append(f.errs, format) }
func (f *fake) end() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestCheckFindsALeakedGoroutineAndAHeldLock(t *testing.T) {
	f := &fake{}
	Check(f)
	stop := make(chan struct{})
	go func() { <-stop }()
	file, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := syscall.Flock(int(file.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { f.end(); close(done) }()
	<-done
	close(stop)
	var goroutine, lock bool
	for _, e := range f.errs {
		goroutine = goroutine || strings.Contains(e, "goroutine")
		lock = lock || strings.Contains(e, "file lock")
	}
	if !goroutine {
		t.Errorf("a goroutine left running was not reported: %q", f.errs)
	}
	if _, err := os.Stat("/proc/locks"); err == nil && !lock {
		t.Errorf("a lock left held was not reported: %q", f.errs)
	}
}

func TestCheckPassesATidyTest(t *testing.T) {
	f := &fake{}
	Check(f)
	done := make(chan struct{})
	go func() { close(done) }()
	<-done
	file, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(file.Fd()), syscall.LOCK_EX)
	file.Close()
	f.end()
	if len(f.errs) > 0 {
		t.Fatalf("a tidy test failed: %q", f.errs)
	}
}
