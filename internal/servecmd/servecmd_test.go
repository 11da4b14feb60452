package servecmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// mailfs-serve -h prints the usage and succeeds; --version prints the
// version; a wrong flag is a usage error.
func TestCommandHelpAndVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"-h"}, &out, &errs); code != 0 || !strings.Contains(errs.String(), "-addr") {
		t.Fatalf("-h: status %d, %q", code, errs.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"--version"}, &out, &errs); code != 0 || !strings.Contains(out.String(), "go1.") {
		t.Fatalf("--version: status %d, %q", code, out.String())
	}
	if code := Run(context.Background(), []string{"--bogus"}, &out, &errs); code != 80 {
		t.Fatalf("--bogus: status %d", code)
	}
}
