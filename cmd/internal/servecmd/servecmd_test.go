package servecmd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mailfs-serve -h prints the usage and succeeds; --version prints the
// version; a wrong flag is a usage error.
func TestCommandHelpAndVersion(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"-h"}, &out, &errs); code != 0 || !strings.Contains(errs.String(), "-addr") || !strings.Contains(errs.String(), `that "mailfs serve" runs`) {
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

// Beyond loopback (a token required), the server warns that plain HTTP
// carries the token and the mail in clear text; on loopback it does not.
func TestBeyondLoopbackWarnsOfPlainHTTP(t *testing.T) {
	for _, c := range []struct {
		args []string
		warn bool
	}{
		{[]string{"--addr", "0.0.0.0:0", "--token", "s3cret-of-16-chars"}, true},
		{[]string{"--addr", "127.0.0.1:0"}, false},
	} {
		root := filepath.Join(t.TempDir(), ".chipset")
		if err := os.MkdirAll(root, 0o700); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		out, w := io.Pipe()
		var errs bytes.Buffer
		done := make(chan int)
		go func() { done <- Run(ctx, append([]string{"--root", root}, c.args...), w, &errs); w.Close() }()
		addr, err := bufio.NewReader(out).ReadString('\n') // the address: it serves
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(addr, "[::]") || strings.Contains(addr, "0.0.0.0") {
			t.Errorf("%v: printed %q, which no browser opens", c.args, addr)
		}
		if c.warn && !strings.HasPrefix(addr, "http://mailfs:s3cret-of-16-chars@") || !c.warn && strings.Contains(addr, "@") {
			t.Errorf("%v: printed %q: the token goes in the password", c.args, addr)
		}
		cancel()
		go io.Copy(io.Discard, out)
		if code := <-done; code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errs.String())
		}
		if got := strings.Contains(errs.String(), "plain HTTP"); got != c.warn {
			t.Errorf("%v: warned %v, want %v: %s", c.args, got, c.warn, errs.String())
		}
	}
}

// A --token short enough to guess is a usage error, with the fix; auto
// makes a long one.
func TestShortTokenIsRefused(t *testing.T) {
	root := filepath.Join(t.TempDir(), ".chipset")
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"--root", root, "--token", "abc"}, &out, &errs); code != 80 || !strings.Contains(errs.String(), "at least 16") || !strings.Contains(errs.String(), "--token auto") || out.Len() != 0 {
		t.Fatalf("--token abc: status %d, stdout %q, stderr %q", code, out.String(), errs.String())
	}
}
