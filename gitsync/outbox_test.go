package gitsync_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/gitsync"
)

// The put-back a refusal names, after another host took the rewrite: a
// person squashes the remote; alpha, up to date, takes it and pushes on
// it; beta, behind, refuses and names the force-push of its own copy; the
// person runs it, which drops what alpha sent since beta last synced;
// alpha now refuses and names mailfs sync --adopt; the person runs it.
// Every message acknowledged on either host is then in its place on both,
// and nothing deleted or archived comes back (issue 39, item 2).
func TestAPutBackAfterAnotherHostTookTheSquashLosesNothing(t *testing.T) {
	t.Parallel()
	tw, a, b := twoHosts(t)
	l := newLedger()
	l.work(t, a, "mayor", "witness", 1)
	l.work(t, b, "witness", "mayor", 1)
	a.syncOK(t)
	b.syncOK(t)
	a.syncOK(t)
	l.work(t, a, "mayor", "witness", 2) // beta never sees these before the squash
	a.syncOK(t)
	tw.squash(t, "main")
	a.syncOK(t) // alpha saw these very files: it takes the squash on its own
	l.work(t, a, "mayor", "witness", 1)
	a.syncOK(t) // and builds on it
	l.work(t, b, "witness", "mayor", 1)
	_, err := b.sync.Sync(context.Background())
	put := regexp.MustCompile(`git -C (\S+) (push --force \S+ \S+:refs/heads/main)\.`).FindStringSubmatch(errString(err))
	if !errors.Is(err, gitsync.ErrRewritten) || put == nil {
		t.Fatalf("beta's sync = %v; want it refused, naming the force-push", err)
	}
	gitRun(t, put[1], strings.Fields(put[2])...) // the person, as told
	_, err = a.sync.Sync(context.Background())
	if !errors.Is(err, gitsync.ErrRewritten) || !strings.Contains(err.Error(), "mailfs sync --adopt") {
		t.Fatalf("alpha's sync after the put-back = %v; want it refused, naming --adopt", err)
	}
	a.adoptOK(t)
	for range 2 {
		b.syncOK(t)
		a.syncOK(t)
	}
	l.check(t, a, b)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
