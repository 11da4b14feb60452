package gascity

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// A person who runs "mailfs-gascity --help" gets the usage and status 0,
// and the usage names exactly the ops Run serves; an unknown op still
// exits 2 (Gas City's "not supported"), naming the ops.
func TestUsageNamesTheOpsServed(t *testing.T) {
	noStore := func(func(error)) (*maildir.Store, error) {
		t.Fatal("--help must not open a town")
		return nil, nil
	}
	for _, arg := range []string{"--help", "-h"} {
		var out, errw bytes.Buffer
		if code := Run([]string{arg}, strings.NewReader(""), &out, &errw, noStore); code != 0 || out.String() != usage || errw.Len() != 0 {
			t.Fatalf("%s: status %d, stdout %q, stderr %q; want 0 and the usage", arg, code, out.String(), errw.String())
		}
	}
	for _, op := range ops {
		if _, ok := gcOpNamed(op); !ok {
			t.Errorf("ops lists %q, which Run does not serve", op)
		}
	}
	m := regexp.MustCompile(`(?s)\nOps: (.*?)\.\n`).FindStringSubmatch(usage)
	if m == nil {
		t.Fatal("the usage lists no ops")
	}
	listed := strings.Split(strings.Join(strings.Fields(m[1]), " "), ", ")
	if !slices.Equal(listed, ops) {
		t.Errorf("the usage lists %q; ops are %q", listed, ops)
	}
	var errw bytes.Buffer
	if code := Run([]string{"frobnicate"}, strings.NewReader(""), &bytes.Buffer{}, &errw, noStore); code != 2 || !strings.Contains(errw.String(), "the ops: ensure-running, send,") {
		t.Errorf("unknown op: status %d, stderr %q; want 2 naming the ops", code, errw.String())
	}
}
