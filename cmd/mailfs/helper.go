package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Commands whose weight would slow every other command's start (the MCP
// SDK, net/http and html/template) live in binaries of their own, which
// mailfs runs in its place: mailfs-mcp, mailfs-serve.

// helperBinary returns the helper name: beside the running mailfs, else
// on $PATH. what says what it is, for the error.
func helperBinary(name, what string) (string, error) {
	if self, err := os.Executable(); err == nil {
		bin := filepath.Join(filepath.Dir(self), name)
		if st, err := os.Stat(bin); err == nil && st.Mode().IsRegular() {
			return bin, nil
		}
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", withHint(fmt.Errorf("%s, %s, is neither beside this mailfs nor on $PATH", what, name),
			`install it with "CGO_ENABLED=0 go install ./cmd/..." from a clone of mailfs`)
	}
	return bin, nil
}

// runHelper becomes the helper bin with args (args[0] is bin): a real
// process execs it; in tests, where the command runs in-process on other
// streams, it runs as a child on them and its exit status is returned.
func runHelper(a *app, bin string, args []string) error {
	if a.out == os.Stdout && a.in == os.Stdin && a.err == os.Stderr {
		return syscall.Exec(bin, args, os.Environ())
	}
	cmd := exec.CommandContext(a.ctx, bin, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.in, a.out, a.err
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return &exitStatus{code: ee.ExitCode()}
	}
	return err
}
