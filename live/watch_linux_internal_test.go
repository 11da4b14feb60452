package live

import (
	"os/exec"
	"testing"
	"time"
)

// A process's end is seen through its pidfd, without looking: the channel
// closes when it exits, and a stopped watch ends without it.
func TestWatchExit(t *testing.T) {
	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	p, err := ProcessOf(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	exited, stop, err := p.watchExit()
	if err != nil {
		t.Skipf("no pidfd here: %v", err)
	}
	defer stop()
	select {
	case <-exited:
		t.Fatal("the watch says a running process exited")
	default:
	}
	cmd.Process.Kill()
	cmd.Wait()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch did not see the process exit")
	}
	// A watch stopped before the process ends never says it did.
	other := exec.Command("sleep", "600")
	other.Start()
	defer func() { other.Process.Kill(); other.Wait() }()
	q, _ := ProcessOf(other.Process.Pid)
	exited, stop, err = q.watchExit()
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // twice is fine
	select {
	case <-exited:
		t.Fatal("a stopped watch said the process exited")
	case <-time.After(100 * time.Millisecond):
	}
}
