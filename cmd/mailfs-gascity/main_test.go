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

// The protocol itself is tested through the mailfs command
// (testdata/script/gascity_*.txtar); this checks that this binary serves it.
func TestMain(m *testing.M) {
	if os.Getenv("MAILFS_GASCITY_TEST_MAIN") == "1" {
		main()
	}
	os.Exit(m.Run())
}

func TestServesTheProtocol(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	call := func(stdin string, args ...string) (string, int) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "MAILFS_GASCITY_TEST_MAIN=1", "MAILFS_ROOT="+root, "GORACE=atexit_sleep_ms=0")
		cmd.Stdin = strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return out.String(), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), 0
	}
	if out, code := call("", "inbox", "toast"); code != 0 || out != "" {
		t.Fatalf("empty inbox: %q, status %d", out, code)
	}
	if out, code := call(`{"from":"mayor","subject":"hi","body":"x"}`, "send", "rig/toast"); code != 0 || !strings.Contains(out, `"to":"rig/toast","subject":"hi"`) {
		t.Fatalf("send: %q, status %d", out, code)
	}
	if out, code := call("", "count", "rig/toast"); code != 0 || out != `{"total":1,"unread":1}`+"\n" {
		t.Fatalf("count: %q, status %d", out, code)
	}
	if out, code := call("", "--help"); code != 0 || !strings.HasPrefix(out, "Usage: mailfs-gascity <op> [<arg>]") {
		t.Fatalf("--help: %q, status %d", out, code)
	}
	if out, code := call("", "--version"); code != 0 || !strings.Contains(out, "go1.") {
		t.Fatalf("--version: %q, status %d", out, code)
	}
	if _, code := call("", "frobnicate"); code != 2 {
		t.Fatalf("unknown op: status %d, want 2", code)
	}
	if _, code := call("", "get", "../x"); code != 1 {
		t.Fatalf("bad id: status %d, want 1", code)
	}
}
