// Command mailfs-codex runs Codex with live delivery and nothing typed
// into a terminal: see package live/codexdoor. "mailfs live codex" runs it
// in its place; it is a binary of its own because Codex's app server
// speaks WebSocket, and the WebSocket library links net/http, whose weight
// every hook call of the mailfs binary would otherwise pay.
//
//	mailfs-codex [--root DIR] [--host NAME] [--every D] [--codex CMD] AGENT [-- CODEX_ARGS]
//
// The agent defaults to $MAILFS_AGENT; the root to $MAILFS_ROOT, else the
// nearest .chipset in the working directory or above it. The exit status
// is the TUI's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/live"
	"github.com/mailfs/mailfs/live/codexdoor"
	"github.com/mailfs/mailfs/maildir"
)

func main() {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) { // a terminal or tmux server going away ends the session cleanly
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the session and returns the exit status: the TUI's, else
// mailfs's table.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailfs-codex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the mailfs root, the .chipset directory (default $MAILFS_ROOT, else the nearest .chipset)")
	host := fs.String("host", "", "this host's name in a town on several machines (default $MAILFS_HOST, else the root's runtime/host)")
	every := fs.Duration("every", 30*time.Second, "the least time between two doorbells for normal and low mail")
	codex := fs.String(string(agentrt.Codex), string(agentrt.Codex), "the codex command")
	buildinfo.Describe(fs, "mailfs-codex [flags] [AGENT] [-- CODEX-ARGS...]", `Codex with live delivery through its own app server, which "mailfs live
codex" runs (AGENT default $MAILFS_AGENT): "mailfs live codex --help" says
more.`)
	if done, code := buildinfo.ParseFlags(fs, args, stdout); done {
		return code
	}
	rest := fs.Args()
	agent := os.Getenv("MAILFS_AGENT")
	if len(rest) > 0 && rest[0] != "--" {
		agent, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "mailfs: error: %s\n", msg)
		return 80
	}
	if agent == "" {
		return usage("no agent: give AGENT or set $MAILFS_AGENT")
	}
	agent, err := maildir.ParseAgent(agent)
	if err != nil {
		return usage(err.Error())
	}
	if *every <= 0 {
		return usage("--every must be positive")
	}
	// The deliverer's warnings would draw over the TUI: dropped.
	s, q, err := town.Open(town.Config{Root: *root, Host: *host})
	if err != nil {
		fmt.Fprintf(stderr, "mailfs: error: %v\n", err)
		return 2
	}
	defer s.Close()
	defer q.Close()
	l := codexdoor.Launch{Codex: *codex, Args: rest, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Deliver: func(ctx context.Context, door *codexdoor.Door) error {
			if live.Off(os.Getenv) {
				<-ctx.Done()
				return nil
			}
			return live.Serve(ctx, &live.Deliverer{Store: s, Nudges: q, Agent: agent, Door: door, Every: *every, Warn: func(error) {}})
		}}
	err = codexdoor.Run(ctx, l)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		return 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
	case err != nil:
		fmt.Fprintf(stderr, "mailfs: error: %v\n", err)
		return 2
	}
	return 0
}
