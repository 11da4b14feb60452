package main

import "time"

type serveCmd struct {
	Addr        string        `default:"127.0.0.1:8025" placeholder:"HOST:PORT" help:"Where to listen. Anything but loopback needs --token."`
	As          string        `placeholder:"NAME" help:"Let the page send, reply, mark read and archive as NAME (its own mail only), and release, reassign or nudge claimed work (recorded in the audit log). Default: read only."`
	Token       string        `placeholder:"SECRET" help:"Require SECRET (16 characters or more) for every request. The printed address carries it as its password (http://mailfs:SECRET@host/): open it once, a cookie keeps it. \"auto\" makes one up."`
	UrgentAfter time.Duration `name:"urgent-after" default:"5m" placeholder:"D" help:"Urgent mail unread this long is flagged, and listed under \"Waiting on\" with its sender."`
	StuckAfter  time.Duration `name:"stuck-after" default:"1h" placeholder:"D" help:"A queue item claimed and not done (read) this long is flagged stuck, with its claimant."`
}

func (c *serveCmd) Help() string {
	return `Serves a live web page of the town's mail, for a person: the stuck work
(claims held past --stuck-after, with their claimants), who is waited on
(urgent mail unread past --urgent-after, with its sender), every mailbox
with its unread mail by priority and the age of the oldest (flagged when
it is past the sweep's cut-off, or urgent and waiting), queue depths and
the work claimed from them (claimant and age, flagged stuck past
--stuck-after), channels with their latest post, held nudges; a mailbox, a message
(protocol fields as a table), a thread across mailboxes and archives, the
search of the command line, the archive. New mail appears without a reload
(server-sent events from the watcher), marks, archives and claims within a
second; the page says when the live feed drops and reconnects. Agents
never need it.

Safe by default: it listens on loopback, answers only loopback host names,
and is read only. --as NAME lets the page act as NAME, and every change
needs the page's token and must come from the page itself; releasing,
reassigning or nudging someone's claimed work asks first and is recorded
in the town's audit log (mailfs audit). Any other
address is refused unless --token requires a token for every request.
Message text is always shown as text. ^C stops it (exit status 0).

The server is the mailfs-serve binary, which this command runs in its
place: it is installed beside mailfs ("go install ./cmd/..." from a clone
installs both) so that net/http's weight is not on every other command's
start.`
}

func (c *serveCmd) Run(a *app) error {
	bin, err := helperBinary("mailfs-serve", "the web view")
	if err != nil {
		return err
	}
	s, err := a.read() // the root as every command finds it, passed on as found
	if err != nil {
		return err
	}
	args := []string{bin, "--root", s.Dir(), "--addr", c.Addr}
	if c.As != "" {
		args = append(args, "--as", c.As)
	}
	if c.Token != "" {
		args = append(args, "--token", c.Token)
	}
	if c.UrgentAfter <= 0 || c.StuckAfter <= 0 {
		return usage("give a duration such as 5m or 1h", "--urgent-after and --stuck-after must be positive")
	}
	args = append(args, "--urgent-after", c.UrgentAfter.String(), "--stuck-after", c.StuckAfter.String())
	if a.hostFlag != "" {
		args = append(args, "--host", a.hostFlag)
	}
	return runHelper(a, bin, args)
}
