package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// A CodexLaunch runs a Codex session with an app server of its own
// beside it, and a deliverer for the session: RunCodex.
type CodexLaunch struct {
	Codex string   // the codex command; "" means "codex"
	Args  []string // the TUI's arguments (a prompt, flags)
	// Stdin, Stdout, Stderr are the TUI's: the terminal.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Deliver runs the session's deliverer on door until ctx ends.
	Deliver func(ctx context.Context, door *CodexDoor) error
}

// codexStart bounds how long the app server may take to listen.
const codexStart = 30 * time.Second

// RunCodex starts "codex app-server" listening on a Unix socket in a
// private folder, the TUI ("codex --remote" that socket, l.Args) on the
// terminal, and l.Deliver on a CodexDoor of the two; it returns when the
// TUI exits (its error, an *exec.ExitError for a non-zero exit), once the
// deliverer has returned, the server has ended and the folder is gone.
// Ending ctx ends the TUI too.
func RunCodex(ctx context.Context, l CodexLaunch) error {
	codex := l.Codex
	if codex == "" {
		codex = "codex"
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
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers end with it
	if err := server.Start(); err != nil {
		return fmt.Errorf("live: starting codex app-server: %w", err)
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
	if err := awaitSocket(ctx, sock, codexStart); err != nil {
		out, _ := os.ReadFile(log.Name())
		return fmt.Errorf("live: codex app-server did not listen: %w: %s", err, cutText(string(out), 2000))
	}
	since := time.Now()
	tui := exec.CommandContext(ctx, codex, append([]string{"--remote", "unix://" + sock}, l.Args...)...)
	tui.Stdin, tui.Stdout, tui.Stderr = l.Stdin, l.Stdout, l.Stderr
	if err := tui.Start(); err != nil {
		return fmt.Errorf("live: starting codex: %w", err)
	}
	proc, err := ProcessOf(tui.Process.Pid)
	if err != nil {
		proc = Process{PID: tui.Process.Pid}
	}
	dctx, stop := context.WithCancel(ctx)
	delivered := make(chan error, 1)
	go func() { delivered <- l.Deliver(dctx, &CodexDoor{Socket: sock, Proc: proc, Since: since}) }()
	err = tui.Wait()
	stop()
	if derr := <-delivered; derr != nil && !errors.Is(derr, context.Canceled) && err == nil {
		err = derr
	}
	return err
}

// awaitSocket waits until a Unix socket at path takes connections.
func awaitSocket(ctx context.Context, path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}
