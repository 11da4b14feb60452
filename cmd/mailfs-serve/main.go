// Command mailfs-serve serves the overseer's web view of a town: see
// packages webview and internal/servecmd. "mailfs serve" runs it; it is a binary of its own
// because net/http and html/template double a binary and add about half a
// millisecond to every start, which every hook call of the mailfs binary
// would otherwise pay.
//
//	mailfs-serve [--root DIR] [--host NAME] [--addr HOST:PORT] [--as NAME] [--token SECRET|auto]
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mailfs/mailfs/cmd/internal/servecmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := servecmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
