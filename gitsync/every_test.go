package gitsync

import (
	"testing"
	"time"
)

func TestWaitIsShorterWhileOwnRequestsWait(t *testing.T) {
	if got := waitFor(time.Minute, 0); got != time.Minute {
		t.Errorf("no requests: %v, want the tick", got)
	}
	if got := waitFor(time.Minute, 2); got != 15*time.Second {
		t.Errorf("requests waiting: %v, want a quarter of the tick", got)
	}
}
