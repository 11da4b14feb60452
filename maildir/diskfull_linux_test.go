//go:build linux

package maildir_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mailfs/mailfs/maildir"
)

// A real ENOSPC, on a small tmpfs: every acknowledged message is whole, and
// no failed send leaves anything visible. Mounting needs privilege: as root
// the test mounts directly; otherwise it runs itself again in a new user and
// mount namespace, where an unprivileged user may mount a tmpfs. It skips
// only where neither is allowed.
func TestRealDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		if os.Getenv("MAILDIR_IN_USERNS") != "" {
			t.Fatalf("cannot mount a tmpfs even in a user namespace: %v", err)
		}
		inUserNamespace(t)
		return
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	s, err := maildir.Open(filepath.Join(dir, ".chipset"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var acked []string
	var full error
	body := strings.Repeat("x", 900)
	for i := 0; i < 1000 && full == nil; i++ {
		sent, err := s.Send(&maildir.Message{From: "m", To: "toast", Subject: fmt.Sprint(i), Body: body})
		if err != nil {
			full = err
			break
		}
		acked = append(acked, sent[0].ID)
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("never filled the disk; last error %v", full)
	}
	box := filepath.Join(dir, ".chipset", "state", "mail", "toast")
	ents, _ := os.ReadDir(box)
	visible := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("a failed send left %s", e.Name())
			continue
		}
		visible++
		data, err := os.ReadFile(filepath.Join(box, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := maildir.Parse(data); err != nil {
			t.Errorf("%s is half-written: %v", e.Name(), err)
		}
	}
	if visible != len(acked) {
		t.Fatalf("%d messages visible, %d acknowledged", visible, len(acked))
	}
	t.Logf("the disk filled after %d messages: %v", len(acked), full)
}

// inUserNamespace runs the calling test again in a child process that has
// a user namespace (mapping the caller to root in it) and a mount namespace
// of its own, and fails the test if the child's run fails.
func inUserNamespace(t *testing.T) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "MAILDIR_IN_USERNS=1", "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("cannot mount a tmpfs here, nor start a user namespace to (%v): this test needs root or user namespaces", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a user namespace: %v\n%s", err, out)
	}
	t.Logf("ran in a user namespace:\n%s", out)
}
