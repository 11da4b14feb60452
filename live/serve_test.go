package live_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mailfs/mailfs/live"
)

func TestOff(t *testing.T) {
	for v, want := range map[string]bool{"off": true, "OFF": true, "0": true, "false": true, "No": true, "": false, "on": false, "1": false, "yes": false} {
		if got := live.Off(func(string) string { return v }); got != want {
			t.Errorf("MAILFS_LIVE=%q: off %v, want %v", v, got, want)
		}
	}
}

// A second deliverer for a session already served is a clean end for
// Serve, where Run says why.
func TestServeBesideARunningDeliverer(t *testing.T) {
	f := start(t, time.Hour, nil)
	second := func() *live.Deliverer {
		return &live.Deliverer{Store: f.s, Nudges: f.q, Agent: "toast", Door: f.door, Every: time.Hour}
	}
	if err := second().Run(context.Background()); !errors.Is(err, live.ErrRunning) {
		t.Fatalf("Run beside a running deliverer: %v, want ErrRunning", err)
	}
	if err := live.Serve(context.Background(), second()); err != nil {
		t.Fatalf("Serve beside a running deliverer: %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := live.Serve(ctx, second()); err != nil {
		t.Fatalf("Serve with its context ended: %v, want nil", err)
	}
}
