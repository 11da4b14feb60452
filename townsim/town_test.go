package townsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/internal/stubmodel"
)

var (
	soakSeed     = flag.Uint64("soak.seed", 1, "the seed of the town's schedule of choices")
	soakDuration = flag.Duration("soak.duration", 30*time.Second, "how long the mayor posts work (the town then drains)")
	soakBin      = flag.String("soak.bin", "", "a mailfs binary to run instead of building this checkout's (to soak another version)")
	soakFaults   = flag.Bool("soak.faults", true, "kill commands and syncs at random points")
	soakHooks    = flag.Bool("soak.hooks", true, "the crew's session leaves its prompt hook's evidence before the model gets the turn (hook.Confirm: submitted), as the runtimes' hooks do; a receipt must still say delivered only on the model's answer (issue #52)")
	soakKeep     = flag.String("soak.keep", "", "a directory (new or empty) the town works in and leaves behind, with its whole ledger in ledger.txt, to read after a failure")
	soakPeriod   = flag.Duration("soak.period", 4*time.Second, "each host's sync period: the town runs mailfs sync --every PERIOD on each host")
	soakFallback = flag.Bool("soak.fallback", true, "run beta's commands without renameat2's flags (the link-and-unlink fallbacks)")
)

// Exit statuses of the command (README, "Exit status").
const (
	exitOK      = 0
	exitNothing = 1
	exitError   = 2
	exitUsage   = 80
	exitTimeout = 124
)

// A host is one machine of the town: its own root, its own name.
type host struct {
	name string
	dir  string   // holds .chipset
	env  []string // the host's own settings
	wrap string   // a command the host's commands run under ("": none)
}

func (h *host) root() string { return filepath.Join(h.dir, ".chipset") }

// A town is the hosts, the remote they sync through, the command, the
// ledger, and the seed every agent's choices come from.
type town struct {
	t       *testing.T
	bin     string
	dir     string
	remote  string
	alpha   *host // the queue's home
	beta    *host
	seed    uint64
	faults  bool
	start   time.Time
	led     *ledger
	refuse  string            // while this file exists the remote refuses pushes
	cut     cutter            // power cuts
	session *session          // the crew's live session, on alpha
	model   *stubmodel.Server // its model

	mu    sync.Mutex
	procs map[*exec.Cmd]proc // running
}

// A proc is a running command: its host, and how to kill it as a fault.
type proc struct {
	h    *host
	kill func()
}

// A result is what one run of the command did.
type result struct {
	out, err string
	code     int  // exit status; -1 when killed
	killed   bool // by the soak's fault
}

func (r result) String() string {
	if r.killed {
		return "killed"
	}
	return fmt.Sprintf("exit %d: %s", r.code, strings.TrimSpace(r.err))
}

// rngFor returns the random source of one actor of the town: a pure
// function of the seed and the actor's name.
func (tw *town) rngFor(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(tw.seed, h.Sum64()))
}

// chance returns a stable pseudo-random number in [0, 100) for key: a
// decision that a retry of the same step makes the same way.
func (tw *town) chance(key string) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", tw.seed, key)
	return int(h.Sum64() % 100)
}

// run runs the command on host h. With kill > 0 it kills it (SIGKILL)
// after that long, if it is still running: a crash at a random point.
// ctx ending kills it too (a wait the town no longer needs).
func (tw *town) run(ctx context.Context, h *host, kill time.Duration, args ...string) result {
	return tw.runLines(ctx, h, kill, nil, args...)
}

// A lineWriter hands each whole line written to it to a function, as it
// comes, and keeps everything in a buffer.
type lineWriter struct {
	buf    bytes.Buffer
	next   int // start of the line not yet handed on
	line   func(string, bool)
	stderr bool
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		rest := w.buf.Bytes()[w.next:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(string(rest[:i]), w.stderr)
		w.next += i + 1
	}
}

// runLines is run for a command that runs until stopped (sync --every):
// lines gets each line of its output as it comes (stderr says which
// stream), and ctx ending interrupts it (SIGINT: a loop's clean stop),
// killing it only if it has not stopped 10 s later.
func (tw *town) runLines(ctx context.Context, h *host, kill time.Duration, lines func(line string, stderr bool), args ...string) result {
	cmd := exec.Command(tw.bin, args...)
	if h.wrap != "" {
		cmd = exec.Command(h.wrap, append([]string{tw.bin}, args...)...)
	}
	// A power cut armed on the host catches this command (not a sync:
	// git's files are not what the cut models).
	var cutLog string
	cutAt := 0
	if args[0] != "sync" {
		if cutAt = tw.cut.take(h); cutAt > 0 {
			n := cutAt
			cutLog = filepath.Join(tw.dir, fmt.Sprintf("cut-%s-%d.log", h.name, time.Now().UnixNano()))
			cmd = tw.straced(h, n, cutLog, args)
			cmd.SysProcAttr = cutAttr()
		}
	}
	cmd.Env = append(append(os.Environ(), "MAILFS_ROOT="+h.root(), "MAILFS_HOST="+h.name, "MAILFS_AGENT="), h.env...)
	cmd.Dir = h.dir
	out, errb := &lineWriter{line: lines}, &lineWriter{line: lines, stderr: true}
	cmd.Stdout, cmd.Stderr = &out.buf, &errb.buf
	if lines != nil {
		cmd.Stdout, cmd.Stderr = out, errb
		cmd.SysProcAttr = loopAttr()
	}
	if err := cmd.Start(); err != nil {
		return result{code: exitError, err: err.Error()}
	}
	// Whether a fault killed it: set by whoever stops it (a timer, the
	// context's goroutine), read here after Wait, which the race detector
	// cannot see ordered after the kill.
	var killed atomic.Bool
	var once sync.Once
	stop := func(fault bool) {
		once.Do(func() {
			killed.Store(fault)
			if cutLog != "" {
				killGroup(cmd.Process) // strace and its child
				return
			}
			cmd.Process.Kill()
		})
	}
	tw.mu.Lock()
	tw.procs[cmd] = proc{h: h, kill: func() { stop(true) }}
	tw.mu.Unlock()
	var timer *time.Timer
	if kill > 0 && cutLog == "" { // a command a cut waits for dies by the cut
		timer = time.AfterFunc(kill, func() { stop(true) })
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		if lines != nil {
			cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
				return
			case <-time.After(10 * time.Second):
			}
		}
		stop(false)
	}()
	err := cmd.Wait()
	close(done)
	if timer != nil {
		timer.Stop()
	}
	tw.mu.Lock()
	delete(tw.procs, cmd)
	tw.mu.Unlock()
	r := result{out: out.buf.String(), err: errb.buf.String()}
	if cutLog != "" && tw.afterCut(h, cutAt, cutLog, args) {
		r.code, r.killed = -1, true
		return r
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled():
		r.code, r.killed = -1, killed.Load()
		if !r.killed {
			r.code = exitTimeout // ended by the town, not a fault: as a timeout
		}
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		r.code, r.err = exitError, err.Error()
	}
	return r
}

// crash kills every command running on host h at once, as a host that
// goes down (not a power cut: what they wrote stays), and returns how
// many it killed; the agents retry as after any kill.
func (tw *town) crash(h *host) int {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	n := 0
	for _, p := range tw.procs {
		if p.h == h {
			p.kill()
			n++
		}
	}
	return n
}

// mustRun runs a setup step, failing the test if it fails.
func (tw *town) mustRun(h *host, args ...string) string {
	tw.t.Helper()
	r := tw.run(context.Background(), h, 0, args...)
	if r.code != exitOK {
		tw.t.Fatalf("setup: mailfs %s on %s: %v", strings.Join(args, " "), h.name, r)
	}
	return r.out
}

// build returns the mailfs binary: -soak.bin, else this checkout's, built
// into dir.
func build(t *testing.T, dir string) string {
	if *soakBin != "" {
		return *soakBin
	}
	bin := filepath.Join(dir, "mailfs")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/mailfs/mailfs/cmd/mailfs")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// buildFallback builds norenameflags into dir: the wrapper that runs a
// host's commands as on a file system without renameat2's flags, so that
// they take the link-and-unlink fallbacks.
func buildFallback(t *testing.T, dir string) string {
	bin := filepath.Join(dir, "norenameflags")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/mailfs/mailfs/townsim/norenameflags")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "true").CombinedOutput(); err != nil {
		t.Logf("no fallback host: norenameflags cannot filter here (%v: %s)", err, out)
		return ""
	}
	return bin
}

// newTown builds the command and sets up the town: alpha homes the queue,
// the mayor, the witness, the refinery and two polecats; beta clones by
// syncing and homes two polecats of its own.
func newTown(t *testing.T) *town {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the town syncs through git")
	}
	if _, err := exec.LookPath("go"); err != nil && *soakBin == "" {
		t.Skip("go is not on $PATH to build the command (or pass -soak.bin)")
	}
	dir := t.TempDir()
	if *soakKeep != "" {
		dir = *soakKeep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tw := &town{t: t, dir: dir, seed: *soakSeed, faults: *soakFaults, procs: map[*exec.Cmd]proc{}}
	tw.bin = build(t, dir)
	tw.remote = filepath.Join(dir, "remote.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", "-b", "main", tw.remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	var err error
	if tw.refuse, err = refusingRemote(tw.remote); err != nil {
		t.Fatal(err)
	}
	tw.cut.armed = map[*host]int{}
	if p, err := exec.LookPath("strace"); err == nil && *soakFaults {
		tw.cut.strace = p
	}
	tw.alpha = &host{name: "alpha", dir: filepath.Join(dir, "alpha")}
	// beta reads without the indexes (runtime/index/), the other way
	// every listing and claim can go.
	// beta's file system knows no renameat2 flags (a seccomp filter says
	// EINVAL, as some FUSE and network file systems do): every move there
	// takes the link-and-unlink fallbacks.
	tw.beta = &host{name: "beta", dir: filepath.Join(dir, "beta"), env: []string{"MAILFS_INDEX=off"}}
	if *soakFallback && runtime.GOOS == "linux" {
		tw.beta.wrap = buildFallback(t, dir)
	}
	for _, h := range []*host{tw.alpha, tw.beta} {
		if err := os.MkdirAll(h.dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tw.mustRun(tw.alpha, "init")
	tw.mustRun(tw.alpha, "host", "alpha")
	tw.mustRun(tw.alpha, "queue", "create", "work")
	tw.mustRun(tw.alpha, "home", "claim", "mayor", "witness", "refinery", "p1", "p2", "deacon", "crew")
	tw.mustRun(tw.alpha, "home", "claim", "--all")
	tw.mustRun(tw.alpha, "sync", "--remote", tw.remote)
	tw.mustRun(tw.beta, "sync", "--remote", tw.remote)
	tw.mustRun(tw.beta, "home", "claim", "p3", "p4")
	tw.mustRun(tw.beta, "sync")
	tw.mustRun(tw.alpha, "sync")
	tw.start = time.Now()
	tw.led = newLedger(tw.start)
	if *soakKeep != "" {
		t.Cleanup(func() { tw.led.dump(filepath.Join(dir, "ledger.txt")) })
	}
	return tw
}

// hostOf returns the host an agent of the town lives on.
func (tw *town) hostOf(agent string) *host {
	if agent == "p3" || agent == "p4" {
		return tw.beta
	}
	return tw.alpha
}

// A msg is one line of inbox --json, as far as the town reads it.
type msg struct {
	ID      string          `json:"id"`
	Agent   string          `json:"agent"`
	From    string          `json:"from"`
	Subject string          `json:"subject"`
	Body    string          `json:"body"`
	ReplyTo string          `json:"reply_to"`
	Read    bool            `json:"read"`
	Claim   json.RawMessage `json:"claim"`
}

// field returns the value of a protocol body's "Key: value" line.
func (m msg) field(key string) string {
	for line := range strings.Lines(m.Body) {
		line = strings.TrimRight(line, "\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			return v
		}
	}
	return ""
}

// parseMsgs reads inbox --json output.
func parseMsgs(out string) ([]msg, error) {
	var ms []msg
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m msg
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			return nil, fmt.Errorf("inbox --json: %w: %q", err, line)
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// firstLine returns the first line of s, trimmed: the id a verb printed.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}
