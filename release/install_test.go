package release_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var bins = []string{"mailfs", "mailfs-hook", "mailfs-mcp", "mailfs-serve", "mailfs-codex", "mailfs-gascity"}

// archive writes a release archive for version and goos/goarch into dir,
// its binaries stand-ins that say the version, and appends its line to
// dir/checksums.txt. It returns the archive's path.
func archive(t *testing.T, dir, version, goos, goarch string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, b := range append(bins, "README.md") {
		body := []byte("#!/bin/sh\necho " + version + " " + b + "\n")
		tw.WriteHeader(&tar.Header{Name: b, Mode: 0o755, Size: int64(len(body))})
		tw.Write(body)
	}
	tw.Close()
	gz.Close()
	name := fmt.Sprintf("mailfs_%s_%s_%s.tar.gz", version, goos, goarch)
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	f, err := os.OpenFile(filepath.Join(dir, "checksums.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "%s  %s\n", hex.EncodeToString(sum[:]), name)
	f.Close()
	return path
}

// install runs install.sh with args and returns its status and output.
func install(t *testing.T, args ...string) (int, string) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("install.sh is for linux and macOS")
	}
	cmd := exec.Command("sh", append([]string{"../install.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

// says fails unless prefix's mailfs says want.
func says(t *testing.T, prefix, want string) {
	t.Helper()
	out, err := exec.Command(filepath.Join(prefix, "mailfs")).Output()
	if err != nil || !strings.HasPrefix(string(out), want+" ") {
		t.Fatalf("the installed mailfs says %q (%v), want %s", out, err, want)
	}
	for _, b := range bins {
		if st, err := os.Stat(filepath.Join(prefix, b)); err != nil || st.Mode()&0o111 == 0 {
			t.Fatalf("%s is not installed executable: %v", b, err)
		}
	}
}

// From a local archive: installed into the prefix, checked against the
// checksums beside it; run again, it installs again; an archive whose
// checksum does not match is refused (status 1) and what was installed is
// left as it was; an archive for another machine is refused.
func TestInstallFromAnArchive(t *testing.T) {
	dir, prefix := t.TempDir(), filepath.Join(t.TempDir(), "bin")
	a := archive(t, dir, "1.2.3", runtime.GOOS, runtime.GOARCH)
	if code, out := install(t, "--archive", a, "--prefix", prefix); code != 0 || !strings.Contains(out, "installed 1.2.3 mailfs into "+prefix) {
		t.Fatalf("install: %d\n%s", code, out)
	}
	says(t, prefix, "1.2.3")
	if code, out := install(t, "--archive", a, "--prefix", prefix); code != 0 {
		t.Fatalf("install again: %d\n%s", code, out)
	}
	says(t, prefix, "1.2.3")
	if left, _ := filepath.Glob(filepath.Join(prefix, ".*")); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}

	// A 1.2.4 archive changed after its checksum was taken.
	b := archive(t, dir, "1.2.4", runtime.GOOS, runtime.GOARCH)
	data, _ := os.ReadFile(b)
	data[len(data)/2] ^= 0xff
	os.WriteFile(b, data, 0o644)
	code, out := install(t, "--archive", b, "--prefix", prefix)
	if code != 1 || !strings.Contains(out, "SHA-256") || !strings.Contains(out, "not installed") {
		t.Fatalf("a tampered archive: %d\n%s", code, out)
	}
	says(t, prefix, "1.2.3")

	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	c := archive(t, dir, "1.2.5", runtime.GOOS, other)
	if code, out := install(t, "--archive", c, "--prefix", prefix); code != 1 || !strings.Contains(out, "not an archive for this machine") {
		t.Fatalf("another machine's archive: %d\n%s", code, out)
	}
	if code, _ := install(t, "--prefix", prefix); code != 80 {
		t.Fatalf("no source: status %d, want 80", code)
	}
}

// From a base URL: checksums.txt names the version for this machine, the
// archive is fetched and checked; a server whose archive does not match
// its checksums is refused.
func TestInstallFromABaseURL(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if _, err := exec.LookPath("wget"); err != nil {
			t.Skip("install.sh fetches with curl or wget; neither is here")
		}
	}
	dir, prefix := t.TempDir(), filepath.Join(t.TempDir(), "bin")
	archive(t, dir, "2.0.0", runtime.GOOS, runtime.GOARCH)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	if code, out := install(t, "--base", srv.URL+"/", "--prefix", prefix); code != 0 {
		t.Fatalf("install: %d\n%s", code, out)
	}
	says(t, prefix, "2.0.0")
	os.WriteFile(filepath.Join(dir, "checksums.txt"), []byte(strings.Repeat("0", 64)+"  "+fmt.Sprintf("mailfs_2.0.0_%s_%s.tar.gz\n", runtime.GOOS, runtime.GOARCH)), 0o644)
	if code, out := install(t, "--base", srv.URL, "--prefix", prefix); code != 1 {
		t.Fatalf("a mismatching server: %d\n%s", code, out)
	}
	if code, out := install(t, "--base", srv.URL+"/nothing-here", "--prefix", prefix); code != 2 || !strings.Contains(out, "cannot fetch") {
		t.Fatalf("a base with nothing: %d\n%s", code, out)
	}
}
