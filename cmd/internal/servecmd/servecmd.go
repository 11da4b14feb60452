// Package servecmd is the mailfs-serve program: its flags, its exit
// statuses and its messages, around package webview (which takes no flags
// and picks no exit status). "mailfs serve" runs the binary; the command's
// tests run this in-process.
package servecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/webview"
)

// Run is the mailfs-serve program, which "mailfs serve" runs: it
// parses args, serves until ctx ends and returns the exit status (mailfs's
// table: 0, 2 for an error, 80 for a usage error). It prints the address
// to open on stdout, and its notes on stderr.
//
//	mailfs-serve [--root DIR] [--host NAME] [--addr HOST:PORT] [--as NAME] [--token SECRET|auto] [--urgent-after D] [--stuck-after D]
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailfs-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the mailfs root, the .chipset directory (default $MAILFS_ROOT, else the nearest .chipset)")
	host := fs.String("host", "", "this host's name in a town on several machines (default $MAILFS_HOST)")
	addr := fs.String("addr", webview.DefaultAddr, "where to listen; anything but loopback needs --token")
	as := fs.String("as", "", "let the page send, reply, mark read and archive as this agent (its own mail only)")
	token := fs.String("token", "", `require this token for every request; "auto" makes one up`)
	urgentAfter := fs.Duration("urgent-after", webview.DefaultUrgentAfter, "urgent mail unread this long is waited on (the overview's \"Waiting on\")")
	stuckAfter := fs.Duration("stuck-after", webview.DefaultStuckAfter, "a claimed queue item not done this long is stuck")
	buildinfo.Describe(fs, "mailfs-serve [flags]", `The web view of the town's mail that "mailfs serve" runs: "mailfs serve
--help" says more.`)
	if done, code := buildinfo.ParseFlags(fs, args, stdout); done {
		return code
	}
	usage := func(err error, hint string) int {
		fmt.Fprintf(stderr, "mailfs: error: %s\nmailfs: hint: %s\n", town.UserText(err), hint)
		return 80
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "mailfs: error: %s\n", town.UserText(err))
		return 2
	}
	if *urgentAfter <= 0 || *stuckAfter <= 0 {
		return usage(errors.New("--urgent-after and --stuck-after must be positive"), "give a duration such as 5m or 1h")
	}
	if fs.NArg() > 0 {
		return usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)), "mailfs serve [--addr HOST:PORT] [--as NAME] [--token SECRET|auto]")
	}
	st, q, err := town.Open(town.Config{Root: *root, Host: *host, Warn: func(err error) { fmt.Fprintf(stderr, "mailfs: warning: %s\n", town.UserText(err)) }})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	defer q.Close()
	switch {
	case *token == "auto":
		*token = webview.NewToken()
	case *token != "" && len(*token) < MinToken:
		return usage(fmt.Errorf("--token must be at least %d characters: %d is guessed in moments", MinToken, len(*token)), "mailfs serve --token auto (a random one, printed in the address)")
	}
	srv, err := webview.New(st, q, *as, *token)
	if errors.Is(err, webview.ErrBadIdentity) {
		return usage(err, "--as takes an agent id, such as human")
	}
	if err != nil {
		return fail(err)
	}
	ln, loopback, err := webview.Listen(*addr, *token)
	var addrErr *net.AddrError
	switch {
	case errors.Is(err, webview.ErrNeedsToken):
		return usage(err, "mailfs serve --addr "+*addr+" --token auto")
	case errors.As(err, &addrErr):
		return usage(fmt.Errorf("--addr %w", err), "give HOST:PORT, such as 127.0.0.1:8025")
	case err != nil:
		return fail(err)
	}
	srv.Loopback = loopback
	srv.UrgentAfter, srv.StuckAfter = *urgentAfter, *stuckAfter
	mode := "read only"
	if srv.As != "" {
		mode = "acting as " + srv.As
	}
	url := "http://" + openable(ln.Addr()) + "/"
	if *token != "" {
		// As the address's password: a browser sends it once, answering
		// the server's 401, gets the cookie, and keeps the token out of its
		// address bar and its history (Chromium strips credentials from
		// the URLs it records).
		url = "http://mailfs:" + *token + "@" + openable(ln.Addr()) + "/"
	}
	fmt.Fprintln(stdout, url)
	fmt.Fprintf(stderr, "mailfs: serving %s (%s); ^C stops it\n", st.Dir(), mode)
	if !loopback {
		fmt.Fprintf(stderr, "mailfs: warning: %s is not loopback, and this is plain HTTP: the token and the mail cross the network in clear text. Put a TLS proxy in front (the cookie is marked Secure when the proxy sends X-Forwarded-Proto: https), or serve on loopback and reach it through ssh -L\n", *addr)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return fail(err)
	}
	return 0
}

// MinToken is the shortest --token mailfs serve takes.
const MinToken = 16

// openable returns the address a person can open for a listener: an
// unspecified host (":8025" listens on [::] or 0.0.0.0, which no browser
// opens) becomes this machine's name, else localhost.
func openable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return net.JoinHostPort(host, port)
}
