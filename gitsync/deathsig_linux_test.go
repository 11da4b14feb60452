package gitsync_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sync killed with SIGKILL takes its git with it: a push still running
// could otherwise move the remote after the host's next sync had built on
// the remote as it was, and that sync's successor would take the killed
// sync's commit for another host's (the 30-minute town soak found it: a
// claimed item back in its queue, claimed and merged twice).
func TestAKilledSyncTakesItsGitWithIt(t *testing.T) {
	needGit(t)
	tw, a, b := twoHosts(t)
	newLedger().work(t, b, "witness", "mayor", 1)
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "push.pid")
	wrapper := filepath.Join(dir, "git")
	// A push that never ends: it writes its pid and waits.
	script := "#!/bin/sh\nfor a in \"$@\"; do\n\tif [ \"$a\" = push ]; then echo $$ > " + pidFile + ".tmp && mv " + pidFile + ".tmp " + pidFile + "; exec sleep 120; fi\ndone\nexec " + realGit + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "GITSYNC_TEST_ROLE=sync", "GITSYNC_ROOT="+b.store.Dir(), "GITSYNC_HOST="+b.name,
		"GITSYNC_REMOTE="+tw.remote, "GITSYNC_GIT="+wrapper)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0; {
		if data, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		} else if time.Now().After(deadline) {
			t.Fatal("the sync never reached its push")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	defer syscall.Kill(pid, syscall.SIGKILL) // only if the test failed
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed sync's push (pid %d) is still running", pid)
		}
	}
	// The host recovers as from any killed sync.
	b.syncOK(t)
	a.syncOK(t)
}

// alive reports whether pid is a running process (not a zombie).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	fields := strings.Fields(string(data))
	// The state follows the command's parenthesised name.
	if i := strings.LastIndexByte(string(data), ')'); i >= 0 {
		fields = strings.Fields(string(data)[i+1:])
	}
	return err == nil && len(fields) > 0 && fields[0] != "Z"
}
