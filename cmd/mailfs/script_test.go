package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/cmd/internal/servecmd"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/script from what the commands print")

func TestMain(m *testing.M) {
	// mailfs-gascity is the same binary under the name that selects the
	// Gas City provider mode.
	// mailfs-serve is the web view's binary, which "mailfs serve" and the
	// demo run.
	// mailfs-hook is the per-turn calls' slim binary, which setup writes
	// into runtimes' hooks.
	testscript.Main(m, map[string]func(){"mailfs": main, "mailfs-gascity": main, "mailfs-serve": serveMain,
		"mailfs-hook": func() { os.Exit(hookcmd.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }})
}

func serveMain() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := servecmd.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// TestScripts runs testdata/script/*.txtar: the command line, end to end,
// one process per command as a user or a shell script would run it.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("..", "..", "testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       *update,
		Setup: func(env *testscript.Env) error {
			// A race-instrumented binary sleeps a second at exit unless told not to.
			env.Setenv("GORACE", "atexit_sleep_ms=0")
			// The scripts see only the commands this test builds: a
			// mailfs-mcp or mailfs-serve installed on $PATH (go install
			// ./cmd/..., as the README says) must not change what
			// doctor and the demo find.
			env.Setenv("PATH", withoutInstalled(env.Getenv("PATH")))
			// Hook state is per user: each script gets its own.
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, ".state"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mkfifo":     cmdMkfifo,
			"mtime":      cmdMtime,
			"stdout2env": cmdStdout2env,
			"waitfor":    cmdWaitfor,
			"waitmatch":  cmdWaitmatch,
		},
	})
}

// mkfifo PATH creates a named pipe.
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: mkfifo PATH")
	}
	ts.Check(syscall.Mkfifo(ts.MkAbs(args[0]), 0o600))
}

// mtime PATH DURATION sets PATH's modification time to now plus DURATION
// (negative for the past), as a file that sat there that long would have.
func cmdMtime(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: mtime PATH DURATION")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	t := time.Now().Add(d)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
}

// stdout2env NAME sets $NAME to the last command's standard output,
// trimmed: the way a script captures an id with $(mailfs send …).
func cmdStdout2env(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: stdout2env NAME")
	}
	ts.Setenv(args[0], strings.TrimSpace(ts.ReadFile("stdout")))
}

// waitfor PATH waits until PATH exists: how a script knows a background
// command got somewhere. It gives up after ten seconds.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfor PATH")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Lstat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not appear within 10s", args[0])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitmatch FILE REGEXP waits until FILE's content matches REGEXP: how a
// script reads the output of a command still running in the background.
// It gives up after ten seconds.
func cmdWaitmatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitmatch FILE REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[1])
	ts.Check(err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[0])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(ts.MkAbs(args[0]))
			ts.Fatalf("%s did not match %q within 10s; it holds:\n%s", args[0], args[1], b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// withoutInstalled drops from a $PATH the folders that hold an installed
// mailfs helper binary, keeping the first: testscript's own, with the
// commands this test binary provides.
func withoutInstalled(path string) string {
	dirs := filepath.SplitList(path)
	if len(dirs) == 0 {
		return path
	}
	keep := dirs[:1]
	for _, dir := range dirs[1:] {
		installed := false
		for _, helper := range []string{"mailfs-mcp", "mailfs-serve", "mailfs-codex"} {
			if _, err := os.Stat(filepath.Join(dir, helper)); err == nil {
				installed = true
			}
		}
		if !installed {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}
