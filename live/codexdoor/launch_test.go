package codexdoor_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mailfs/mailfs/live/codexdoor"
)

// roleEnv makes this test binary play a part in TestKilledLauncherLeavesNoChild:
// the launcher, and under it Codex's app server and TUI (told apart by
// their arguments, as the launcher gives them).
const roleEnv = "CODEXDOOR_TEST_LAUNCHER"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "" {
		os.Exit(m.Run())
	}
	switch {
	case len(os.Args) > 2 && os.Args[1] == "app-server": // codex app-server --listen unix://PATH
		ln, err := net.Listen("unix", strings.TrimPrefix(os.Args[3], "unix://"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			c.Close()
		}
	case len(os.Args) > 1 && os.Args[1] == "--remote": // the TUI: runs until it is ended
		select {}
	}
	// The launcher: says its TUI's pid once the deliverer starts.
	self, _ := os.Executable()
	err := codexdoor.Run(context.Background(), codexdoor.Launch{Codex: self, Stderr: os.Stderr,
		Deliver: func(ctx context.Context, door *codexdoor.Door) error {
			fmt.Printf("tui %d\n", door.Proc.PID)
			<-ctx.Done()
			return nil
		}})
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

// A launcher killed with SIGKILL leaves none of the processes it started
// running: the app server and the TUI (here stand-ins, this test binary)
// end with it, by their parent-death signal.
func TestKilledLauncherLeavesNoChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux has a parent-death signal: on macOS a launcher killed with SIGKILL leaves Codex running (documented)")
	}
	launcher := exec.Command(os.Args[0])
	launcher.Env = append(os.Environ(), roleEnv+"=1", "TMPDIR="+t.TempDir())
	launcher.Stderr = os.Stderr
	out, err := launcher.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := launcher.Start(); err != nil {
		t.Fatal(err)
	}
	defer launcher.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the launcher said nothing: %v", err)
	}
	tui, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "tui ")))
	children := descendants(launcher.Process.Pid)
	if len(children) != 2 || !slices.Contains(children, tui) {
		t.Fatalf("the launcher runs %v, want its server and its TUI (%d)", children, tui)
	}
	launcher.Process.Signal(syscall.SIGKILL)
	launcher.Wait()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var alive []int
		for _, pid := range children {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range alive {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%v still ran 15s after the launcher was killed", alive)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// descendants lists pid's children, their children, and so on (/proc).
func descendants(pid int) []int {
	kids := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := ppid(p); pp > 0 {
			kids[pp] = append(kids[pp], p)
		}
	}
	var all []int
	for queue := kids[pid]; len(queue) > 0; queue = queue[1:] {
		all = append(all, queue[0])
		queue = append(queue, kids[queue[0]]...)
	}
	return all
}

// stat is /proc/PID/stat's fields after the command's name: state, ppid, …
func stat(pid int) []string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	s := string(data)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func ppid(pid int) int {
	if f := stat(pid); len(f) > 1 {
		n, _ := strconv.Atoi(f[1])
		return n
	}
	return 0
}

// running reports whether pid is a process that has not exited (a zombie
// has).
func running(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}
