package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// git runs the git command in one repository. It keeps what it learns
// that cannot change under it — a commit's tree, a diff between two trees
// — and the configuration as it was read at the start of a sync: every
// exec is some milliseconds, and a sync is a few dozen of them.
type git struct {
	dir    string
	bin    string
	env    []string
	empty  string                          // the empty tree's id, once asked (see emptyTree)
	head   string                          // HEAD's commit when this sync read it, until it moves it; "" unknown
	config []configEntry                   // read once per sync (see readConfig)
	trees  map[string]string               // commit → its tree
	diffs  map[[2]string]map[string]change // (tree, tree) → the changes, never to be modified
	outbox *outbox                         // this host's sends to other homes not yet theirs (see outbox)
	homes  homes                           // whose each object is, read once per sync
	clock  func() time.Time                // the time commits carry; nil: git's (the system clock)
}

// A configEntry is one line of git config --list: where it is set, and
// its key (lower case, as git prints it) and value.
type configEntry struct{ scope, key, value string }

// readConfig reads every configuration entry once.
func (g *git) readConfig(ctx context.Context) error {
	out, err := g.run(ctx, "config", "--list", "-z", "--show-scope")
	if err != nil {
		return err
	}
	g.config = nil
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		key, value, _ := strings.Cut(fields[i+1], "\n")
		g.config = append(g.config, configEntry{scope: fields[i], key: key, value: value})
	}
	return nil
}

// configValue returns the value git would take for key (the last one
// set), from the given scope or any when scope is "".
func (g *git) configValue(scope, key string) (string, bool) {
	for _, e := range slices.Backward(g.config) {
		if e.key == key && (scope == "" || e.scope == scope) {
			return e.value, true
		}
	}
	return "", false
}

// refs returns the commits that the given refs (full names) point at,
// by name, in one exec; a ref that does not exist is left out. It learns
// their trees as it goes.
func (g *git) refs(ctx context.Context, names ...string) (map[string]string, error) {
	out, err := g.run(ctx, append([]string{"for-each-ref", "--format=%(objectname) %(tree) %(refname)"}, names...)...)
	if err != nil {
		return nil, err
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !slices.Contains(names, f[2]) {
			continue // a ref below one of the names, or not a commit
		}
		got[f[2]] = f[0]
		g.learnTree(f[0], f[1])
	}
	return got, nil
}

// looseRef returns the commit a ref's own file under .git holds, or ""
// (packed, absent, unreadable): a cheap look that saves an exec when it
// answers, and costs nothing when it does not.
func (g *git) looseRef(name string) string {
	data, err := os.ReadFile(filepath.Join(g.dir, ".git", filepath.FromSlash(name)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// headRef returns the branch ref HEAD points at, read from .git/HEAD, or
// "" when HEAD is detached or not a plain file git keeps in the root.
func (g *git) headRef() string {
	data, err := os.ReadFile(filepath.Join(g.dir, ".git", "HEAD"))
	if err != nil {
		return ""
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "ref: ")
	if !ok || !strings.HasPrefix(ref, "refs/heads/") {
		return ""
	}
	return ref
}

// learnTree records that commit has tree.
func (g *git) learnTree(commit, tree string) {
	if commit == "" || tree == "" {
		return
	}
	if g.trees == nil {
		g.trees = map[string]string{}
	}
	g.trees[commit] = tree
}

// A GitError is a git command that failed: its arguments and what it said.
type GitError struct {
	Args   []string
	Stderr string
	Err    error
}

// Error gives git's whole message, less its "hint:" advice (which names
// git commands, not mailfs's), never cut.
func (e *GitError) Error() string {
	var lines []string
	for line := range strings.SplitSeq(strings.TrimSpace(e.Stderr), "\n") {
		if !strings.HasPrefix(line, "hint:") && strings.TrimSpace(line) != "" {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	msg := strings.Join(lines, "; ")
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// run runs git with args and returns its standard output.
func (g *git) run(ctx context.Context, args ...string) (string, error) {
	return g.runIn(ctx, nil, nil, args...)
}

// runIn runs git with args, stdin (if not nil) and extra environment.
func (g *git) runIn(ctx context.Context, stdin io.Reader, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, g.bin, args...)
	cmd.SysProcAttr = gitAttr()
	cmd.Dir = g.dir
	cmd.Env = append(g.env, env...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return out.String(), ctx.Err()
		}
		return out.String(), &GitError{Args: args, Stderr: errb.String(), Err: err}
	}
	return out.String(), nil
}

// ok runs git and reports whether it exited 0; an error only when it
// could not run at all.
func (g *git) ok(ctx context.Context, args ...string) (bool, error) {
	_, err := g.run(ctx, args...)
	var ge *GitError
	var ee *exec.ExitError
	if errors.As(err, &ge) && errors.As(ge.Err, &ee) {
		return false, nil
	}
	return err == nil, err
}

// rev returns the commit rev names, or "" when it names none.
func (g *git) rev(ctx context.Context, rev string) string {
	out, err := g.run(ctx, "rev-parse", "-q", "--verify", rev+"^{commit}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(out)
}

// paths runs git with args that print NUL-separated paths.
func (g *git) paths(ctx context.Context, args ...string) ([]string, error) {
	out, err := g.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	var ps []string
	for p := range strings.SplitSeq(out, "\x00") {
		if p != "" {
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// environ is the environment git runs in: never a prompt or an editor,
// messages in English (they are reported), and an identity when the user
// has none configured.
func environ(host string, haveIdentity bool) []string {
	// A sync started from inside another repository's hook must not be
	// pointed at that repository.
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
			"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX":
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true",
		"LC_ALL=C", "GIT_MERGE_AUTOEDIT=no")
	if !haveIdentity {
		env = append(env, "GIT_AUTHOR_NAME=mailfs on "+host, "GIT_AUTHOR_EMAIL=mailfs@"+host+".invalid",
			"GIT_COMMITTER_NAME=mailfs on "+host, "GIT_COMMITTER_EMAIL=mailfs@"+host+".invalid")
	}
	return env
}

// needsGC reports whether git gc --auto would have work to do, by git's
// own estimate (gc.auto loose objects, counted in one fan-out folder as
// git counts them; gc.autoPackLimit packs), without the exec when not.
func (g *git) needsGC() bool {
	limit := func(key string, def int) int {
		if v, ok := g.configValue("", key); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
		return def
	}
	auto := limit("gc.auto", 6700)
	if auto <= 0 {
		return false
	}
	objects := filepath.Join(g.dir, ".git", "objects")
	loose, _ := os.ReadDir(filepath.Join(objects, "17"))
	if len(loose) > (auto+255)/256 {
		return true
	}
	packs, _ := filepath.Glob(filepath.Join(objects, "pack", "*.pack"))
	packLimit := limit("gc.autopacklimit", 50)
	return packLimit > 0 && len(packs) > packLimit
}
