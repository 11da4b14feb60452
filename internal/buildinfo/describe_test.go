package buildinfo

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// A helper's -h says what it is and which mailfs command runs it, then
// its flags, and exits 0.
func TestDescribeSaysWhatTheHelperIs(t *testing.T) {
	fs := flag.NewFlagSet("mailfs-x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.String("root", "", "the mailfs root")
	Describe(fs, "mailfs-x [flags]", `The x that "mailfs x" runs.`)
	done, code := ParseFlags(fs, []string{"-h"}, &out)
	if !done || code != 0 {
		t.Fatalf("-h: done %v, status %d; want done, 0", done, code)
	}
	got := out.String()
	for _, want := range []string{"Usage: mailfs-x [flags]\n\nThe x that \"mailfs x\" runs.\n\nFlags:\n", "-root string", "-version"} {
		if !strings.Contains(got, want) {
			t.Errorf("usage %q lacks %q", got, want)
		}
	}
}
