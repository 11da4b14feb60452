package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What the commands answer is tested through the mailfs command
// (testdata/script/hook_slim.txtar holds the two binaries to the same
// bytes); this checks that this binary serves them.
func TestMain(m *testing.M) {
	if os.Getenv("MAILFS_HOOK_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func TestServesThePerTurnCalls(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	call := func(stdin string, args ...string) (string, string, int) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "MAILFS_HOOK_TEST_MAIN=1", "MAILFS_AGENT=", "MAILFS_ROOT="+root, "MAILFS_STATE_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), errb.String(), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), 0
	}
	if out, errs, code := call("", "check", "toast", "--inject"); code != 0 || out != "" || errs != "" {
		t.Fatalf("check --inject of no mail: %q %q, status %d", out, errs, code)
	}
	if out, _, code := call(`{"hook_event_name":"SessionStart"}`, "hook", "session-start", "--runtime", "plain"); code != 0 || !strings.Contains(out, "no agent") {
		t.Fatalf("session-start without an agent: %q, status %d", out, code)
	}
	if _, _, code := call("", "inbox", "toast"); code != 80 {
		t.Fatalf("a command mailfs-hook does not have: status %d, want 80", code)
	}
	if _, errs, code := call("", "check", "toast"); code != 80 || !strings.Contains(errs, "--inject") {
		t.Fatalf("check without --inject: %q, status %d, want 80", errs, code)
	}
}
