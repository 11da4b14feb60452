package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Bad command lines are refused before anything is opened, with mailfs's
// statuses: 80 for usage, 2 for an error.
func TestRefusesBadCommandLines(t *testing.T) {
	t.Setenv("MAILFS_AGENT", "")
	root := t.TempDir() + "/.chipset"
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"--root", root}, 80, "no agent: give --agent or set $MAILFS_AGENT"},
		{[]string{"--root", root, "--agent", "toast", "extra"}, 80, `unexpected argument "extra"`},
		{[]string{"--root", root, "--bogus"}, 80, "flag provided but not defined: -bogus"},
		{[]string{"--root", root, "--agent", "../etc"}, 2, `mailfs: error: invalid agent name "../etc"`},
		{[]string{"--host", "../x", "--agent", "toast"}, 80, "invalid host name"},
	} {
		var errs bytes.Buffer
		if code := run(context.Background(), tc.args, &bytes.Buffer{}, &errs); code != tc.code || !strings.Contains(errs.String(), tc.err) {
			t.Errorf("%q: status %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.err)
		}
	}
}

// -h prints the usage and succeeds; --version prints the version.
func TestHelpAndVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errs); code != 0 || !strings.Contains(errs.String(), "-agent") || !strings.Contains(errs.String(), `that "mailfs mcp" runs`) {
		t.Fatalf("-h: status %d, %q", code, errs.String())
	}
	if code := run(context.Background(), []string{"--version"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: status %d, %q", code, out.String())
	}
}
