package codexdoor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mailfs/mailfs/agentrt"
	"github.com/mailfs/mailfs/live"
)

// A Launch runs a Codex session with an app server of its own beside it,
// and a deliverer for the session: Run.
type Launch struct {
	Codex string   // the codex command; "" means "codex"
	Args  []string // the TUI's arguments (a prompt, flags)
	// Stdin, Stdout, Stderr are the TUI's: the terminal.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Deliver runs the session's deliverer on door until ctx ends.
	Deliver func(ctx context.Context, door *Door) error
}

// serverStart bounds how long the app server may take to listen.
const serverStart = 30 * time.Second

// Run starts "codex app-server" listening on a Unix socket in a private
// folder, the TUI ("codex --remote" that socket, l.Args) on the terminal,
// and l.Deliver on a Door of the two; it returns when the TUI exits (its
// error, an *exec.ExitError for a non-zero exit), once the deliverer has
// returned, the server has ended and the folder is gone. Ending ctx ends
// the TUI (SIGTERM) too.
//
// The server and the TUI end with the process that runs Run however it
// ends, even by SIGKILL: on Linux each is started with a parent-death
// signal (SIGTERM, which Codex's npm wrapper passes on to the native
// binary). macOS has no such signal: there a launcher killed with SIGKILL
// leaves the two running (the TUI exits when its terminal closes; the
// server must be killed by hand), while any other end ends them. The
// deliverer runs in this process and ends with it.
func Run(ctx context.Context, l Launch) error {
	codex := l.Codex
	if codex == "" {
		codex = string(agentrt.Codex) // the runtime's command is named as it is
	}
	dir, err := os.MkdirTemp("", "mailfs-codex-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "app.sock")
	log, err := os.Create(filepath.Join(dir, "app-server.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	server := exec.Command(codex, "app-server", "--listen", "unix://"+sock)
	server.Stdout, server.Stderr = log, log
	server.SysProcAttr = childAttr(true) // its own group: its helpers end with it
	if err := server.Start(); err != nil {
		return fmt.Errorf("codexdoor: starting codex app-server: %w", err)
	}
	defer func() {
		syscall.Kill(-server.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-server.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	if err := awaitSocket(ctx, sock, serverStart); err != nil {
		out, _ := os.ReadFile(log.Name())
		return fmt.Errorf("codexdoor: codex app-server did not listen: %w: %s", err, cut(string(out), 2000))
	}
	since := time.Now()
	tui := exec.CommandContext(ctx, codex, append([]string{"--remote", "unix://" + sock}, l.Args...)...)
	tui.Stdin, tui.Stdout, tui.Stderr = l.Stdin, l.Stdout, l.Stderr
	tui.SysProcAttr = childAttr(false)                                       // on the terminal's foreground group, this one's
	tui.Cancel = func() error { return tui.Process.Signal(syscall.SIGTERM) } // lets it put the terminal back
	tui.WaitDelay = 10 * time.Second
	if err := tui.Start(); err != nil {
		return fmt.Errorf("codexdoor: starting codex: %w", err)
	}
	proc, err := live.ProcessOf(tui.Process.Pid)
	if err != nil {
		proc = live.Process{PID: tui.Process.Pid}
	}
	dctx, stop := context.WithCancel(ctx)
	delivered := make(chan error, 1)
	go func() { delivered <- l.Deliver(dctx, &Door{Socket: sock, Proc: proc, Since: since}) }()
	err = tui.Wait()
	stop()
	if derr := <-delivered; derr != nil && !errors.Is(derr, context.Canceled) && err == nil {
		err = derr
	}
	return err
}

// awaitSocket waits until a Unix socket at path takes connections.
func awaitSocket(ctx context.Context, path string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// cut is s cut to at most n bytes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
