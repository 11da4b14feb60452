// Command mailfs-mcp serves an agent's mail over the Model Context Protocol
// on stdin and stdout: see package mcpserver. "mailfs mcp" runs it; it is a
// binary of its own because the MCP SDK (with net/http and its TLS stack)
// roughly doubles a binary and adds a millisecond to every start, which
// every hook call of the mailfs binary would otherwise pay.
//
//	mailfs-mcp --agent NAME [--root DIR]
//
// The agent defaults to $MAILFS_AGENT; the root to $MAILFS_ROOT, else the
// nearest .chipset in the working directory or above it.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/mcpserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves on the process's stdin and stdout until the client goes or
// ctx is done, and returns the exit status (mailfs's table).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailfs-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	agent := fs.String("agent", os.Getenv("MAILFS_AGENT"), "the agent whose mail the tools read and send as ($MAILFS_AGENT)")
	root := fs.String("root", "", "the mailfs root, the .chipset directory (default $MAILFS_ROOT, else the nearest .chipset)")
	host := fs.String("host", "", "this host's name in a town on several machines (default $MAILFS_HOST, else the root's runtime/host)")
	buildinfo.Describe(fs, "mailfs-mcp [flags]", `The MCP server (on stdin and stdout) that "mailfs mcp" runs, for an agent's
MCP client to start: "mailfs mcp --help" says more.`)
	if done, code := buildinfo.ParseFlags(fs, args, stdout); done {
		return code
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mailfs: error: %s\n", town.UserText(err))
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mailfs: error: unexpected argument %q\n", fs.Arg(0))
		return 80
	}
	if h := cmp.Or(*host, os.Getenv("MAILFS_HOST")); h != "" {
		if _, err := maildir.ParseHost(h); err != nil {
			fmt.Fprintf(stderr, "mailfs: error: --host (or $MAILFS_HOST): %v\n", err)
			return 80
		}
	}
	if *agent == "" {
		fmt.Fprintln(stderr, "mailfs: error: no agent: give --agent or set $MAILFS_AGENT")
		return 80
	}
	warn := func(err error) { fmt.Fprintf(stderr, "mailfs: warning: %s\n", town.UserText(err)) }
	s, q, err := town.Open(town.Config{Root: *root, Host: *host, Warn: warn})
	if err != nil {
		return fail(err)
	}
	defer s.Close()
	defer q.Close()
	srv := &mcpserver.Server{Store: s, Nudges: q, Agent: *agent, Version: buildinfo.Version()}
	if err := srv.Run(ctx); err != nil && ctx.Err() == nil {
		return fail(err)
	}
	return 0
}
