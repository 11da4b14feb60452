// Command mailfs-hook answers the calls an agent runtime makes every turn
// or tool call — "hook EVENT [AGENT]" and "check --inject" — exactly as
// mailfs does, from a binary whose grammar holds only them, so that each
// turn pays less to start. "mailfs setup" writes it into runtimes' hooks;
// mailfs keeps both commands, so hooks that name mailfs keep working.
package main

import (
	"os"

	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
)

func main() { os.Exit(hookcmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
