package main

import (
	"os"

	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// hookCmd is hookcmd.Hook, which mailfs-hook runs too: hooks written by
// an earlier release name "mailfs hook".
type hookCmd struct{ hookcmd.Hook }

func (c *hookCmd) Run(a *app) error {
	return c.Hook.Run(a.hookEnv())
}

// hookEnv is the per-turn calls' view of a: they read, and report every
// problem without failing.
func (a *app) hookEnv() *hookcmd.Env {
	return &hookcmd.Env{Ctx: a.ctx, In: a.in, Out: a.out, Err: a.err,
		Open: func() (*maildir.Store, *nudgeq.Queue, error) {
			s, err := a.peek()
			if err != nil {
				return nil, nil, err
			}
			q, err := a.nudges()
			return s, q, err
		},
		Report: func(err error) { a.exit(err) }, Warn: a.warn}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return hookcmd.IsTerminal(f) }
