package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// fakeEnv makes this test binary a stand-in for codex: "app-server
// --listen unix://PATH" listens there; any other call is the TUI, which
// writes its arguments, one a line, to the file fakeEnv names and exits
// with status 7.
const fakeEnv = "MAILFS_CODEX_TEST_FAKE"

func TestMain(m *testing.M) {
	out := os.Getenv(fakeEnv)
	switch {
	case out == "":
		os.Exit(m.Run())
	case len(os.Args) > 3 && os.Args[1] == "app-server":
		ln, err := net.Listen("unix", strings.TrimPrefix(os.Args[3], "unix://"))
		if err != nil {
			os.Exit(1)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Close()
		}
	default:
		os.WriteFile(out, []byte(strings.Join(os.Args[1:], "\n")), 0o600)
		os.Exit(7)
	}
}

// fake sets up a town and the stand-in: the root, the stand-in's path and
// the file it writes its arguments to.
func fake(t *testing.T) (root, codex, argsFile string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, ".chipset")
	s, err := maildir.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	argsFile = filepath.Join(base, "tui-args")
	t.Setenv(fakeEnv, argsFile)
	t.Setenv("TMPDIR", base)
	t.Setenv("MAILFS_LIVE", "off") // the stand-in's server speaks no JSON-RPC
	codex, err = os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return root, codex, argsFile
}

// wantTUIArgs checks the stand-in TUI was given the server's socket, then
// extra.
func wantTUIArgs(t *testing.T, argsFile string, extra ...string) {
	t.Helper()
	data, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the TUI did not run: %v", err)
	}
	got := strings.Split(string(data), "\n")
	if len(got) != 2+len(extra) || got[0] != "--remote" || !strings.HasPrefix(got[1], "unix://") || strings.Join(got[2:], " ") != strings.Join(extra, " ") {
		t.Fatalf("the TUI got %q, want --remote unix://… %q", got, extra)
	}
}

// The TUI gets the arguments after --, and its exit status is the
// launcher's.
func TestTUIArgsAndStatus(t *testing.T) {
	root, codex, argsFile := fake(t)
	var errs bytes.Buffer
	code := run(context.Background(), []string{"--root", root, "--codex", codex, "toast", "--", "--model", "o3"}, nil, &bytes.Buffer{}, &errs)
	if code != 7 {
		t.Fatalf("status %d (stderr %q), want the TUI's 7", code, errs.String())
	}
	wantTUIArgs(t, argsFile, "--model", "o3")
}

// "mailfs live codex" runs mailfs-codex beside it in its place, with the
// same arguments, and exits with its status.
func TestMailfsLiveCodexRunsIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mailfs")
	}
	root, codex, argsFile := fake(t)
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/mailfs/mailfs/cmd/mailfs", "github.com/mailfs/mailfs/cmd/mailfs-codex").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(bin, "mailfs"), "--root", root, "live", "codex", "toast", "--every", "1m", "--codex", codex, "--", "--model", "o3", "fix it")
	var errs bytes.Buffer
	cmd.Stderr = &errs
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("mailfs live codex: %v (stderr %q), want exit status 7", err, errs.String())
	}
	wantTUIArgs(t, argsFile, "--model", "o3", "fix it")
}

// Bad command lines are refused before anything starts, with mailfs's
// statuses.
func TestRefusesBadCommandLines(t *testing.T) {
	t.Setenv("MAILFS_AGENT", "")
	root := t.TempDir() + "/.chipset"
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--root", root}, 80, "no agent"},
		{[]string{"--root", root, "--every", "0s", "toast"}, 80, "--every must be positive"},
		{[]string{"--root", root, "../etc"}, 80, "invalid"},
		{[]string{"--bogus"}, 80, "flag provided but not defined: -bogus"},
	} {
		var errs bytes.Buffer
		if code := run(context.Background(), tc.args, nil, &bytes.Buffer{}, &errs); code != tc.code || !strings.Contains(errs.String(), tc.err) {
			t.Errorf("%q: status %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.err)
		}
	}
}
