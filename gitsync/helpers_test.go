package gitsync_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mailfs/mailfs/gitsync"
	"github.com/mailfs/mailfs/maildir"
)

// needGit skips a test on a machine without the git command.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipping: the git command is not installed (apt install git)")
	}
}

// A town is several hosts' roots and one bare remote, in a temp dir.
type town struct {
	remote string
	hosts  map[string]*host
}

type host struct {
	name  string
	store *maildir.Store
	sync  *gitsync.Syncer
}

func newTown(t testing.TB, names ...string) *town {
	t.Helper()
	needGit(t)
	base := t.TempDir()
	tw := &town{remote: filepath.Join(base, "remote.git"), hosts: map[string]*host{}}
	gitRun(t, base, "init", "-q", "--bare", "-b", "main", tw.remote)
	// The remote is a server's business, not mailfs's: no gc of its own
	// after each push (one process less per sync; the tests run hundreds).
	gitRun(t, tw.remote, "config", "receive.autogc", "false")
	for _, n := range names {
		if err := os.Mkdir(filepath.Join(base, n), 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := maildir.Open(filepath.Join(base, n, ".chipset"))
		if err != nil {
			t.Fatal(err)
		}
		s.Host = n
		t.Cleanup(func() { s.Close() })
		tw.hosts[n] = &host{name: n, store: s, sync: &gitsync.Syncer{Store: s, Remote: tw.remote,
			Progress: func(step string) {
				if strings.HasPrefix(step, "another host pushed first") {
					t.Logf("%s: %s", n, step)
				}
			}}}
	}
	return tw
}

func gitRun(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// syncOK syncs h and fails the test on any error.
func (h *host) syncOK(t testing.TB) *gitsync.Report {
	t.Helper()
	rep, err := h.sync.Sync(context.Background())
	if err != nil {
		t.Fatalf("sync on %s: %v", h.name, err)
	}
	return rep
}

// stateFiles returns every file of the state tree with its content, and
// fails the test on a mode other than 0600 (files) and 0700 (folders).
func stateFiles(t testing.TB, s *maildir.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := s.Dir()
	err := filepath.WalkDir(filepath.Join(root, "state"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		want := fs.FileMode(0o600)
		if e.IsDir() {
			want = 0o700
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", rel, st.Mode().Perm(), want)
		}
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			return nil
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeAtomic writes rel below root by a dot-temp and a rename.
func writeAtomic(root, rel, content string) error {
	p := filepath.Join(root, filepath.FromSlash(rel))
	tmp := filepath.Join(filepath.Dir(p), ".drop-"+filepath.Base(p))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// squash force-pushes the remote's main to one commit, with no parent,
// holding the files of commit rev: a squash, of rev's history.
func (tw *town) squash(t testing.TB, rev string) {
	t.Helper()
	squashed := strings.TrimSpace(gitRun(t, tw.remote, "commit-tree", rev+"^{tree}", "-m", "squashed"))
	gitRun(t, tw.remote, "update-ref", "refs/heads/main", squashed)
}

// adoptOK syncs h as "mailfs sync --adopt" does, once, and fails the test
// on any error.
func (h *host) adoptOK(t testing.TB) *gitsync.Report {
	t.Helper()
	h.sync.Adopt = true
	defer func() { h.sync.Adopt = false }()
	return h.syncOK(t)
}

// sendBefore sends n messages from mayor to agent on h and returns their
// ids.
func sendBefore(t testing.TB, h *host, agent string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		ms, err := h.store.Send(&maildir.Message{From: "mayor", To: agent, Subject: "before"})
		must(t, err)
		ids = append(ids, ms[0].ID)
	}
	return ids
}
