package maildir

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/mailfs/mailfs/internal/durable"
)

// What a claim does with an item, at each step, for each thing it can
// find there: the decisions are pure, so every case is in the table.
func TestClaimSteps(t *testing.T) {
	regular := durable.Stat{Nlink: 1}
	dir := durable.Stat{Mode: fs.ModeDir, Nlink: 2}
	boom := errors.New("EIO")
	type want struct {
		next, fail bool
		warn       error // errors.Is target; nil: no warning
	}
	check := func(t *testing.T, what string, got claimStep, w want) {
		t.Helper()
		if got.next != w.next || got.fail != w.fail || (got.warn == nil) != (w.warn == nil) || w.warn != nil && !errors.Is(got.warn, w.warn) {
			t.Errorf("%s: %+v, want %+v", what, got, w)
		}
	}
	for _, c := range []struct {
		what string
		st   durable.Stat
		err  error
		want want
	}{
		{"a waiting item", regular, nil, want{next: true}},
		{"deleted since the listing", durable.Stat{}, fs.ErrNotExist, want{}},
		{"a folder named like an item", dir, nil, want{}},
		{"a second name elsewhere", durable.Stat{Nlink: 2}, nil, want{warn: ErrUnfinishedMove}},
		{"the lstat failed", durable.Stat{}, boom, want{fail: true}},
	} {
		check(t, "before the record: "+c.what, beforeStamp(c.st, c.err), c.want)
	}
	for _, c := range []struct {
		what string
		err  error
		want want
	}{
		{"written", nil, want{next: true}},
		{"deleted under the claim", fs.ErrNotExist, want{}},
		{"rewritten under the claim", durable.ErrChanged, want{}},
		{"a set-aside copy in the way", fs.ErrExist, want{warn: ErrUnfinishedMove}},
		{"too large with its record", fmt.Errorf("x: %w", ErrTooLarge), want{warn: ErrUnclaimable}},
		{"no message", fmt.Errorf("x: %w", ErrInvalidMessage), want{warn: ErrInvalidMessage}},
		{"a disk error", boom, want{fail: true}},
	} {
		check(t, "the record: "+c.what, afterStamp(c.err, "item.json"), c.want)
	}
	for _, c := range []struct {
		what string
		err  error
		want want
	}{
		{"moved", nil, want{next: true}},
		{"removed since its record", fs.ErrNotExist, want{}},
		{"the claimant holds that id", fs.ErrExist, want{warn: ErrClash}},
		{"a disk error", boom, want{fail: true}},
	} {
		check(t, "the move: "+c.what, afterMove(c.err), c.want)
	}
}
