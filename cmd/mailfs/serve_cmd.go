package main

import (
	"errors"
	"fmt"
	"net"

	"github.com/mailfs/mailfs/webview"
)

type serveCmd struct {
	Addr  string `default:"127.0.0.1:8025" placeholder:"HOST:PORT" help:"Where to listen. Anything but loopback needs --token."`
	As    string `placeholder:"NAME" help:"Let the page send, reply, mark read and archive as NAME (its own mail only). Default: read only."`
	Token string `placeholder:"SECRET" help:"Require SECRET for every request (open the printed address once; a cookie keeps it). \"auto\" makes one up and prints it."`
}

func (c *serveCmd) Help() string {
	return `Serves a live web page of the town's mail, for a person: every mailbox with
its unread mail by priority and the age of the oldest (flagged when it is
past the sweep's cut-off, or urgent and unread for five minutes), queue
depths, channels with their latest post, held nudges; a mailbox, a message
(protocol fields as a table), a thread across mailboxes and archives, the
search of the command line, the archive. New mail appears without a reload
(server-sent events from the watcher); the page says when the live feed
drops and reconnects. Agents never need it.

Safe by default: it listens on loopback, answers only loopback host names,
and is read only. --as NAME lets the page act as NAME, and every change
needs the page's token and must come from the page itself. Any other
address is refused unless --token requires a token for every request.
Message text is always shown as text. ^C stops it (exit status 0).`
}

func (c *serveCmd) Run(a *app) error {
	s, err := a.read()
	if err != nil {
		return err
	}
	q, err := a.nudges()
	if err != nil {
		return err
	}
	token := c.Token
	if token == "auto" {
		token = webview.NewToken()
	}
	srv, err := webview.New(s, q, c.As, token)
	if errors.Is(err, webview.ErrBadIdentity) {
		return usage("--as takes an agent id, such as human", "%v", err)
	}
	if err != nil {
		return err
	}
	ln, loopback, err := webview.Listen(c.Addr, token)
	var addrErr *net.AddrError
	switch {
	case errors.Is(err, webview.ErrNeedsToken):
		return usage("mailfs serve --addr "+c.Addr+" --token auto", "%v", err)
	case errors.As(err, &addrErr):
		return usage("give HOST:PORT, such as 127.0.0.1:8025", "--addr %v", err)
	case err != nil:
		return err
	}
	srv.Loopback = loopback
	mode := "read only"
	if srv.As != "" {
		mode = "acting as " + srv.As
	}
	url := "http://" + ln.Addr().String() + "/"
	if token != "" {
		url += "?token=" + token
	}
	fmt.Fprintf(a.out, "%s\n", url)
	fmt.Fprintf(a.err, "mailfs: serving %s (%s); ^C stops it\n", s.Dir(), mode)
	return srv.Serve(a.ctx, ln)
}
