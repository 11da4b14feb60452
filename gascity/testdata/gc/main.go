// Command gc stands in for Gas City's gc in a test: it runs the command
// named by $FAKE_GC_PROVIDER as its child, as gc runs a mail provider,
// whatever its own arguments.
package main

import (
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command(os.Getenv("FAKE_GC_PROVIDER"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.Exit(1)
	}
}
