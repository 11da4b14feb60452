package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// git runs the git command in one repository.
type git struct {
	dir   string
	bin   string
	env   []string
	empty string // the empty tree's id, once asked (see emptyTree)
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
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true",
		"LC_ALL=C", "GIT_MERGE_AUTOEDIT=no")
	if !haveIdentity {
		env = append(env, "GIT_AUTHOR_NAME=mailfs on "+host, "GIT_AUTHOR_EMAIL=mailfs@"+host+".invalid",
			"GIT_COMMITTER_NAME=mailfs on "+host, "GIT_COMMITTER_EMAIL=mailfs@"+host+".invalid")
	}
	return env
}
