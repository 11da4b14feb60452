package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/mailfs/mailfs/cmd/internal/grammar"
	"github.com/mailfs/mailfs/cmd/internal/hookcmd"
	"github.com/mailfs/mailfs/cmd/internal/town"
	"github.com/mailfs/mailfs/escalation"
	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/internal/buildinfo"
	"github.com/mailfs/mailfs/maildir"
	"github.com/mailfs/mailfs/nudgeq"
)

// Output rules: data goes to stdout; errors, warnings and hints go to
// stderr as "mailfs: error: …", "mailfs: warning: …", "mailfs: hint: …",
// lowercase and without a trailing period. A failing command prints nothing
// on stdout.
//
// Exit statuses are one table for every command (exitHelp says it to
// users), following grep for the commands that answer a question.
const (
	exitOK       = 0   // success; "yes"
	exitNothing  = 1   // "no", or nothing there: check with nothing to say, claim of an empty queue, fsck findings
	exitError    = 2   // an error: nothing, or only what was reported, was done
	exitConflict = 3   // send: an idempotency key already used for a different message; nothing sent
	exitUsage    = 80  // the command line is wrong (kong's status)
	exitTimeout  = 124 // a wait ran out of time (as timeout(1))
	// exitInterrupted: a long command stopped by ^C or SIGTERM before it
	// was done (as a shell reports SIGINT); what it did is reported.
	exitInterrupted = 130
)

// exitHelp is the table as --help and the README print it.
const exitHelp = `Exit status, the same for every command:
  0    success, or "yes"; a list or count, even an empty one (inbox,
       agents, count, thread, the list and show subcommands)
  1    "no", or nothing there, from a command that fetches or tests:
       check with nothing to say, take, peek, drain or search finding
       nothing, claim of an empty queue, show --field of a field the
       message lacks, fsck with findings, send --wait-for delivered
       with a copy not delivered for good (none, refused, held for
       good, rung or submitted given up or its session ended)
  2    an error: nothing was done, or only what was reported
  3    send --idempotency-key: the key was used for a different message
       (another sender, recipient, subject or body); nothing was sent
  80   usage error: a wrong flag or argument (a negative duration
       included), a missing agent, sender or body
  124  timeout: wait --timeout with no mail in time, send --wait-for
       with a copy still unread, submitted, rung, held or refused,
       claim --timeout with another host's queue not answering yet
  130  interrupted (^C, SIGTERM) before it was done: fsck, search,
       archive and other long commands report what they did first; a
       loop (watch, archive --every, sync --every) stops cleanly with 0`

// run parses args and runs one command, returning the exit status.
func run(ctx context.Context, args []string, io stdio) (code int) {
	if isGasCity(args) {
		return runGasCity(args[1:], io)
	}
	args = smallDoors(args)
	// Kong turns invalid UTF-8 into U+FFFD before a command sees it; mail
	// text must be refused, not silently changed, whichever flag carries it.
	for i, arg := range args {
		if !utf8.ValidString(arg) {
			fmt.Fprintf(io.err, "mailfs: error: %v: argument %d, %q, is not valid UTF-8\n", maildir.ErrInvalidMessage, i+1, arg)
			fmt.Fprintf(io.err, "mailfs: hint: mail text and names must be UTF-8; send other bytes in a file's content, not on the command line\n")
			return exitError
		}
	}
	if isBrief(args) {
		// A brief command's output is written once, at the end (or where
		// a command must know it was written, see app.flush): a table of
		// ten messages was ninety write calls.
		bw := bufio.NewWriter(io.out)
		io.out = bw
		defer func() {
			if err := bw.Flush(); err != nil && code == 0 {
				fmt.Fprintf(io.err, "mailfs: error: writing the output: %v\n", err)
				code = exitError
			}
		}()
	}
	var c cli
	var trap exitTrap
	a := &app{ctx: ctx, stdio: io}
	call, kctx, err := parse(&c, args, &trap, io)
	if trap.exited {
		return trap.code
	}
	if err != nil {
		return a.usage(err)
	}
	if err := repeatedFlag(kctx, args); err != nil {
		return a.usageIn(err, kctx)
	}
	globals := reflect.ValueOf(call.Grammar()).Elem()
	a.rootFlag, a.hostFlag = globals.FieldByName("Root").String(), globals.FieldByName("Host").String()
	// kong reads an empty path as the working directory, which would put
	// state/ straight into it: an empty --root is refused, and an empty
	// $MAILFS_ROOT is unset, as shells mean it.
	switch emptyRoot(args) {
	case rootGivenEmpty:
		return a.exit(usage("give the .chipset directory, or leave --root out to find it", "--root is empty"))
	case rootEnvEmpty:
		a.rootFlag = ""
	}
	// A host name is checked when it is given, not when a command first
	// needs it: "--host ../x" is a mistake whatever the command.
	if a.hostFlag != "" {
		if _, err := maildir.ParseHost(a.hostFlag); err != nil {
			return a.exit(usage("a host name is 1-64 of a-z 0-9 . _ -, as \"mailfs host NAME\" sets it", "--host (or $MAILFS_HOST): %v", err))
		}
	}
	defer a.close()
	if trap.do(func() { err = grammar.Run(call, kctx, a) }) { // a command of kong's own (completion) ends with its Exit too
		return trap.code
	}
	return a.exit(err)
}

// repeatedFlag refuses a flag that takes one value given twice (kong
// would keep the last, silently): --priority high --priority low is a
// mistake to point at, not to guess. Flags that collect (repeatable) and
// switches are left alone; values after "--" are not flags.
func repeatedFlag(kctx *kong.Context, args []string) error {
	long, short := map[string]*kong.Flag{}, map[rune]*kong.Flag{}
	for _, f := range kctx.Flags() {
		long[f.Name] = f
		for _, alias := range f.Aliases {
			long[alias] = f
		}
		if f.Short != 0 {
			short[f.Short] = f
		}
	}
	seen := map[*kong.Flag]bool{}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		var f *kong.Flag
		joined := false // the value is in the same argument
		switch {
		case arg == "--":
			return nil
		case strings.HasPrefix(arg, "--"):
			name, _, eq := strings.Cut(arg[2:], "=")
			f, joined = long[name], eq
		case strings.HasPrefix(arg, "-") && len(arg) >= 2:
			f, joined = short[rune(arg[1])], len(arg) > 2
		}
		if f == nil || f.IsBool() {
			continue
		}
		if !joined {
			i++ // its value, which may look like a flag
		}
		if f.IsSlice() || f.IsMap() || f.IsCounter() {
			continue
		}
		if seen[f] {
			return fmt.Errorf("--%s given twice: it takes one value", f.Name)
		}
		seen[f] = true
	}
	return nil
}

// durationMapper reads every duration flag: a Go duration, never negative
// (no flag takes one), so "--ttl=-5m" is a usage error like any other bad
// flag, whichever command it is given to.
func durationMapper() kong.MapperFunc {
	return func(ctx *kong.DecodeContext, target reflect.Value) error {
		var s string
		if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
			return err
		}
		d, err := parseDuration(s)
		if err != nil {
			return err
		}
		target.SetInt(int64(d))
		return nil
	}
}

// parseDuration reads a duration flag's value: Go's form, not negative.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("expected a duration such as 30s, 10m or 36h, not %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative, not %v", d)
	}
	return d, nil
}

// printHelp prints kong's help, but a command's help without the global
// flags (--root, --host, --version, --man), which every command takes and
// "mailfs --help" lists: they would open every page with the same lines.
func printHelp(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		return kong.DefaultHelpPrinter(options, ctx)
	}
	var hidden []*kong.Flag
	for _, f := range ctx.Model.Flags {
		if f.Name != "help" && !f.Hidden {
			f.Hidden = true
			hidden = append(hidden, f)
		}
	}
	defer func() {
		for _, f := range hidden {
			f.Hidden = false
		}
	}()
	if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
		return err
	}
	_, err := fmt.Fprintln(ctx.Stdout, "\nEvery command also takes --root DIR and --host NAME (see mailfs --help).")
	return err
}

// How the root was given empty, if it was.
const (
	rootNotEmpty   = iota
	rootGivenEmpty // on the command line: "--root" then an empty word, or --root=
	rootEnvEmpty   // as MAILFS_ROOT= in the environment, with no --root
)

// emptyRoot says whether, and how, the root was given empty.
func emptyRoot(args []string) int {
args:
	for i, a := range args {
		switch {
		case a == "--":
			break args
		case a == "--root":
			if i+1 < len(args) && args[i+1] == "" {
				return rootGivenEmpty
			}
			return rootNotEmpty
		case strings.HasPrefix(a, "--root="):
			if a == "--root=" {
				return rootGivenEmpty
			}
			return rootNotEmpty
		}
	}
	if v, set := os.LookupEnv("MAILFS_ROOT"); set && v == "" {
		return rootEnvEmpty
	}
	return rootNotEmpty
}

// version is the version --version prints: read from the binary's build
// information only when it is asked for (parsing it costs every call).
func version(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "--version") {
			return buildinfo.Version()
		}
	}
	return ""
}

// isGasCity reports whether args are a Gas City provider call, which is
// served outside kong: the protocol, not kong, sets its exit codes.
func isGasCity(args []string) bool {
	return len(args) > 1 && args[0] == "gascity" && !strings.HasPrefix(args[1], "-")
}

type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
}

// app is what every command's Run method receives.
type app struct {
	ctx context.Context
	stdio
	rootFlag   string
	hostFlag   string // --host, $MAILFS_HOST
	warnedRoot bool   // read has warned that the given root does not exist
	store      *maildir.Store
	queue      *nudgeq.Queue
}

// flush writes out what a brief command has printed so far, for a
// command that must know it was written before it acts (take marks what it
// showed; drain removes the nudges it printed).
func (a *app) flush() error {
	if bw, ok := a.out.(*bufio.Writer); ok {
		return bw.Flush()
	}
	return nil
}

// open returns the store for --root, $MAILFS_ROOT or the discovered root.
func (a *app) open() (*maildir.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	s, q, err := town.Open(town.Config{Root: a.rootFlag, Host: a.hostFlag, Warn: a.warn})
	if err != nil {
		return nil, err
	}
	a.store, a.queue = s, q
	return s, nil
}

// read returns the store as open does, for a command that only reads: a
// root that was given (--root, $MAILFS_ROOT) but does not exist is read as
// empty, with a warning, so that a mistyped path is not taken for a quiet
// town.
func (a *app) read() (*maildir.Store, error) { return a.readFrom(true) }

// peek returns the store as read does, but says nothing when no root was
// given and none is found: the calls a runtime makes every turn (hooks,
// check) run in any folder, where no root is the ordinary case.
func (a *app) peek() (*maildir.Store, error) { return a.readFrom(false) }

func (a *app) readFrom(warnDiscovered bool) (*maildir.Store, error) {
	s, err := a.open()
	if err == nil && !a.warnedRoot {
		if _, serr := os.Lstat(s.Dir()); errors.Is(serr, fs.ErrNotExist) {
			a.warnedRoot = true
			if a.rootFlag != "" {
				a.warn(fmt.Errorf("the root %s does not exist: nothing to read there (\"mailfs init\" creates it)", s.Dir()))
			} else if warnDiscovered {
				a.warn(fmt.Errorf("no %s in %s or any folder above it: nothing to read here (a send creates it; --root or MAILFS_ROOT names another)", maildir.RootName, filepath.Dir(s.Dir())))
			}
		}
	}
	return s, err
}

// openBox opens the store, as read does for a reading command or as open
// does otherwise, and resolves arg as the mailbox a command acts on (see
// mailbox).
func (a *app) openBox(arg string, reading bool) (*maildir.Store, maildir.Address, error) {
	box, err := mailbox(arg)
	if err != nil {
		return nil, box, err
	}
	s, err := a.open()
	if reading {
		s, err = a.read()
	}
	return s, box, err
}

// nudges returns the nudge queues of the same root. Drains consult the
// store, to drop nudges about mail already read.
func (a *app) nudges() (*nudgeq.Queue, error) {
	if _, err := a.open(); err != nil {
		return nil, err
	}
	return a.queue, nil
}

func (a *app) close() {
	if a.queue != nil {
		a.queue.Close()
	}
	if a.store != nil {
		a.store.Close()
	}
}

// warn says err on stderr, on one line: a file name with a newline or an
// escape sequence cannot break the line or drive the terminal.
func (a *app) warn(err error) { fmt.Fprintf(a.err, "mailfs: warning: %s\n", oneLine(userText(err))) }

// userText is err's text for a person: without the packages' prefixes
// (town.UserText, as every mailfs program prints it).
func userText(err error) string { return town.UserText(err) }

// exitStatus is an error that sets the exit status, with an optional
// message for stderr.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

// hinted attaches a hint line to an error.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

func withHint(err error, hint string) error { return &hinted{err, hint} }

// exit reports err, if any, and returns the exit status.
func (a *app) exit(err error) int {
	if err == nil {
		return 0
	}
	var st *exitStatus
	if errors.As(err, &st) {
		if st.msg != "" {
			msg := st.msg
			if st.code == exitError && !strings.HasPrefix(msg, "error: ") {
				msg = "error: " + msg // every error says it is one
			}
			fmt.Fprintf(a.err, "mailfs: %s\n", msg)
		}
		return st.code
	}
	if errors.Is(err, context.Canceled) && a.ctx.Err() != nil {
		// Interrupted (Ctrl-C, SIGTERM): say so in words, not as
		// "context canceled"; what was done is what was reported.
		fmt.Fprintf(a.err, "mailfs: error: interrupted; anything done before is reported above\n")
		return exitInterrupted
	}
	fmt.Fprintf(a.err, "mailfs: error: %s\n", userText(err))
	if hint := cmp.Or(hintFor(err), a.rootHint(err)); hint != "" {
		fmt.Fprintf(a.err, "mailfs: hint: %s\n", hint)
	}
	var u *usageErr
	if errors.As(err, &u) || errors.Is(err, hookcmd.ErrNoAgent) {
		return exitUsage
	}
	if errors.Is(err, maildir.ErrQueueEmpty) {
		return exitNothing
	}
	if errors.Is(err, maildir.ErrKeyConflict) {
		return exitConflict
	}
	return exitError
}

// usageErr is a command-line mistake that kong cannot see (a flag that
// needs another, an agent given neither as an argument nor in
// $MAILFS_AGENT): it exits with exitUsage.
type usageErr struct{ msg string }

func (u *usageErr) Error() string { return u.msg }

// usage returns a usage error with a hint.
func usage(hint, format string, args ...any) error {
	return withHint(&usageErr{fmt.Sprintf(format, args...)}, hint)
}

func hintFor(err error) string {
	var h *hinted
	var nh *maildir.NotHomeError
	var pe *fs.PathError
	switch {
	case errors.As(err, &h):
		return h.hint
	case errors.Is(err, hookcmd.ErrNoAgent):
		return hookcmd.NoAgentHint
	case errors.As(err, &nh) && nh.Home == "":
		return fmt.Sprintf("on the host where it lives: mailfs home claim %s", nh.Object)
	case errors.As(err, &nh) && nh.Host == "":
		return "name this host first: mailfs host NAME"
	case errors.As(err, &nh):
		return fmt.Sprintf("send mail instead, or move its home here: mailfs home move %s --to %s, on %s", nh.Object, nh.Host, nh.Home)
	case errors.Is(err, maildir.ErrUnnamedHost), errors.Is(err, gitsync.ErrNoHost):
		return "name this host first: mailfs host NAME"
	case errors.Is(err, gitsync.ErrNoRemote):
		return "mailfs sync --remote URL"
	case errors.Is(err, maildir.ErrOnceUnknown):
		return "look for the first send's copies (mailfs search); if none arrived, remove the record named above and send again; mailfs fsck reports such records"
	case errors.Is(err, maildir.ErrKeyConflict):
		return "a key names one message: use a new key for a new message"
	case errors.Is(err, maildir.ErrNewerFormat):
		return "install a newer mailfs on this host (see docs/upgrading.md)"
	case errors.Is(err, maildir.ErrDamagedFormat):
		return "mailfs fsck --repair rewrites it, or says what to decide"
	case errors.Is(err, maildir.ErrInvalidAddress):
		if env := os.Getenv("MAILFS_AGENT"); env != "" && strings.Contains(err.Error(), strconv.Quote(env)) {
			// Most likely the name came from the variable, not the
			// command line: say where to fix it.
			return "the name may come from $MAILFS_AGENT: set it to an agent id, 1-64 characters of a-z 0-9 . _ - (rig/role is stored as rig.role)"
		}
		return "agent ids are 1-64 characters of a-z 0-9 . _ - (rig/role is stored as rig.role)"
	case errors.Is(err, maildir.ErrInvalidName):
		return "group, queue and channel names are 1-64 characters of a-z 0-9 . _ -"
	case errors.As(err, &pe) && pe.Op == "parse" && errors.Is(err, maildir.ErrInvalidMessage):
		return "the file is not a message mailfs can read: fix it or remove it by hand (mailfs fsck lists such files; fsck --repair moves them into the folder's quarantine/ once a minute old)"
	case errors.Is(err, maildir.ErrNotMessage):
		return "mailfs never reads or changes it (mailfs fsck lists such files): a person looks at it and removes it with rm"
	case errors.Is(err, escalation.ErrNotFound):
		return `"mailfs escalate list" lists the open and acknowledged escalations with their ids`
	case errors.Is(err, maildir.ErrAmbiguous):
		return "give more of the id"
	case errors.Is(err, maildir.ErrNotFound):
		return notFoundHint(err)
	case errors.Is(err, maildir.ErrAmbiguousAddress):
		return "agent:NAME is the agent, @NAME the group, queue:NAME the queue, channel:NAME the channel"
	case errors.Is(err, maildir.ErrNameTaken):
		return "a bare name must mean one thing: choose another name"
	case errors.Is(err, maildir.ErrNotClaimed):
		return `"mailfs delete" or "mailfs archive" removes a copy that was delivered, not claimed`
	case errors.Is(err, maildir.ErrGroupInUse):
		return `"mailfs group remove OTHER @NAME" takes it out of the other group`
	case errors.Is(err, maildir.ErrNoGroup):
		return `"mailfs group list" shows the groups`
	case errors.Is(err, maildir.ErrNoRecipients):
		return `"mailfs agents" lists the mailboxes; "mailfs group show NAME" the members`
	case errors.Is(err, nudgeq.ErrFull):
		return "the agent has not drained its queue; it will be told that nudges were refused at its next check --inject"
	case errors.Is(err, maildir.ErrTooLarge):
		return "messages are limited to 1 MiB: put large content in a file and send its path"
	}
	return ""
}

// rootHint says what to do when the root itself is not a directory (a
// --root or $MAILFS_ROOT naming a file): the error alone ("open X: not a
// directory") does not say that X was taken for the root.
func (a *app) rootHint(err error) string {
	var pe *fs.PathError
	if a.store == nil || !errors.As(err, &pe) || !errors.Is(err, syscall.ENOTDIR) || filepath.Clean(pe.Path) != filepath.Clean(a.store.Dir()) {
		return ""
	}
	return fmt.Sprintf("the root must be a directory (the .chipset folder), and %s is not one: check --root and $MAILFS_ROOT", pe.Path)
}

// negativeValue matches kong's error for a flag given a negative number.
var negativeValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(--[a-z0-9-]+): expected (duration|int|uint|float|string) value but got "(-[^"]*)" \(short flag\); perhaps try `)
})

// notFoundHint names the command that lists the ids of the folder an id
// was looked for in ("find state/mail/toast/ID"), or of any mailbox.
func notFoundHint(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "find" {
		dir := path.Dir(pe.Path)
		for prefix, box := range map[string]string{maildir.MailDir + "/": "", maildir.QueueDir + "/": "queue:", maildir.ChannelDir + "/": "channel:"} {
			if name, ok := strings.CutPrefix(dir, prefix); ok && name != "" && !strings.Contains(name, "/") {
				return fmt.Sprintf("%q lists the ids there", "mailfs inbox "+box+name+" --all")
			}
		}
	}
	return `"mailfs inbox AGENT --all" lists the ids in a mailbox`
}

// usage reports a command-line error the way kong would, without printing
// usage on stdout.
func (a *app) usage(err error) int {
	var pe *kong.ParseError
	if errors.As(err, &pe) {
		return a.usageIn(err, pe.Context)
	}
	return a.usageIn(err, nil)
}

// usageIn reports a usage error in the command kctx parsed (nil: none).
func (a *app) usageIn(err error, kctx *kong.Context) int {
	msg := userText(err) // a mapper's error may carry its package's prefix
	if kctx == nil || kctx.Command() == "" {
		// "mailfs frob": kong says "unexpected argument frob"; before any
		// command, it is a command this mailfs does not have.
		if rest, ok := strings.CutPrefix(msg, "unexpected argument "); ok {
			msg = "unknown command " + rest
		}
	}
	// An optional enum flag lists its unset value "" among the choices:
	// it is not one a person can give.
	msg = strings.Replace(msg, `must be one of "",`, "must be one of ", 1)
	msg = strings.Replace(msg, `,"" but got `, " but got ", 1)
	if m := negativeValue().FindStringSubmatch(msg); m != nil && (m[2] != "string" || m[1] == "--since") {
		// kong reads "--timeout -1s" as a flag without its value and
		// suggests --timeout="-1s", which is refused in turn: say what
		// is wrong with the value instead. (A text flag may well start
		// with "-": kong's suggestion stands, but for --since, a time.)
		want := "a number, 0 or more"
		switch {
		case m[1] == "--since":
			want = "how long ago, such as 2h or 30m, or an RFC 3339 time"
		case m[2] == "duration":
			want = "a duration such as 30s or 10m"
		}
		msg = fmt.Sprintf("%s: %q is negative: give %s", m[1], m[3], want)
	}
	fmt.Fprintf(a.err, "mailfs: error: %s\n", msg)
	cmd := "mailfs"
	if kctx != nil {
		if p := kctx.Command(); p != "" {
			for _, w := range strings.Fields(p) {
				if strings.HasPrefix(w, "<") {
					break
				}
				cmd += " " + w
			}
		}
	}
	fmt.Fprintf(a.err, "mailfs: hint: run %q for usage\n", cmd+" --help")
	return 80
}

// smallDoors turns the words a newcomer tries first into what they mean:
// a bare "mailfs" and "mailfs help" print the help, "mailfs help CMD" the
// command's, and "mailfs version" the version — each exiting 0, not as a
// usage error. "version" is no command of kong's, so its help ("mailfs
// help version", "mailfs version --help") is mailfs's, which lists
// --version.
func smallDoors(args []string) []string {
	switch {
	case len(args) == 0:
		return []string{"--help"}
	case args[0] == "help":
		args = append(slices.Clone(args[1:]), "--help")
	case len(args) == 1 && args[0] == "version":
		return []string{"--version"}
	}
	if len(args) == 2 && args[0] == "version" && (args[1] == "--help" || args[1] == "-h") {
		return []string{"--help"}
	}
	return args
}
