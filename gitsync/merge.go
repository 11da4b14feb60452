package gitsync

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// zeroID is git's name for "no object" in diff output.
const zeroID = "0000000000000000000000000000000000000000"

// A change is what happened to one path between two trees.
type change struct {
	path   string
	status byte   // 'A' added, 'M' modified, 'D' deleted, 'T' type changed
	mode   string // the new mode; "000000" when deleted
	omode  string // the old mode; "000000" when added
	blob   string // the new blob; zeroID when deleted
	old    string // the old blob; zeroID when added
}

// same reports whether c and d leave the path alike.
func (c change) same(d change) bool { return c.blob == d.blob && c.mode == d.mode }

// file reports whether the change leaves a regular file (not a link, a
// submodule or nothing).
func (c change) file() bool { return c.mode == "100644" || c.mode == "100755" }

// emptySHA1Tree is the id of the empty tree in a SHA-1 repository; git
// knows it without having it written.
const emptySHA1Tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// emptyTree returns the id of the tree with nothing in it: SHA-1's
// constant, or (another object format) git's answer, asked once per
// handle.
func (g *git) emptyTree(ctx context.Context) (string, error) {
	if g.empty != "" {
		return g.empty, nil
	}
	if f, ok := g.configValue("", "extensions.objectformat"); g.config != nil && (!ok || f == "sha1") {
		g.empty = emptySHA1Tree
		return g.empty, nil
	}
	out, err := g.runIn(ctx, strings.NewReader(""), nil, "hash-object", "-t", "tree", "-w", "--stdin")
	g.empty = strings.TrimSpace(out)
	return g.empty, err
}

// tree returns the tree of a commit.
func (g *git) tree(ctx context.Context, commit string) (string, error) {
	if t, ok := g.trees[commit]; ok {
		return t, nil
	}
	out, err := g.run(ctx, "rev-parse", "--verify", commit+"^{tree}")
	if err != nil {
		return "", err
	}
	t := strings.TrimSpace(out)
	g.learnTree(commit, t)
	return t, nil
}

// diff returns the changes from tree a to tree b, by path. Renames are
// never guessed: a move is a delete and an add. The map is shared by
// every caller asking for the same pair: it is never to be modified.
func (g *git) diff(ctx context.Context, a, b string) (map[string]change, error) {
	out := map[string]change{}
	if a == b {
		return out, nil
	}
	if d, ok := g.diffs[[2]string{a, b}]; ok {
		return d, nil
	}
	raw, err := g.run(ctx, "diff-tree", "-r", "-z", "--raw", "--no-renames", "--full-index", a, b)
	if err != nil {
		return nil, err
	}
	sets, err := parseRaw(raw, false)
	if err != nil {
		return nil, err
	}
	for _, c := range sets[0] {
		out[c.path] = c
	}
	if g.diffs == nil {
		g.diffs = map[[2]string]map[string]change{}
	}
	g.diffs[[2]string{a, b}] = out
	return out, nil
}

// diffIndex returns the changes from tree a to the index (as git
// diff-tree would give them from a to the index's tree, which it does not
// write): one exec, where writing the tree and diffing it are two.
func (g *git) diffIndex(ctx context.Context, a string) (map[string]change, error) {
	raw, err := g.run(ctx, "diff-index", "--cached", "-r", "-z", "--raw", "--no-renames", "--full-index", a)
	if err != nil {
		return nil, err
	}
	sets, err := parseRaw(raw, false)
	if err != nil {
		return nil, err
	}
	out := map[string]change{}
	for _, c := range sets[0] {
		out[c.path] = c
	}
	return out, nil
}

// knowDiff records d as the changes from tree a to tree b, learnt
// otherwise than by diff: it is never to be modified.
func (g *git) knowDiff(a, b string, d map[string]change) {
	if a == b {
		return
	}
	if g.diffs == nil {
		g.diffs = map[[2]string]map[string]change{}
	}
	g.diffs[[2]string{a, b}] = d
}

// buildTree returns the tree that is base with changes made to it, built
// in an index of its own (the repository's index is not touched).
func (g *git) buildTree(ctx context.Context, base string, changes []change) (string, error) {
	idx := filepath.Join(g.dir, ".git", "mailfs-merge-index")
	defer os.Remove(idx)
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := g.runIn(ctx, nil, env, "read-tree", base); err != nil {
		return "", err
	}
	var in strings.Builder
	for _, c := range changes {
		if c.status == 'D' {
			fmt.Fprintf(&in, "0 %s\t%s\x00", zeroID, c.path)
		} else {
			fmt.Fprintf(&in, "%s %s\t%s\x00", c.mode, c.blob, c.path)
		}
	}
	if _, err := g.runIn(ctx, strings.NewReader(in.String()), env, "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	out, err := g.runIn(ctx, nil, env, "write-tree")
	return strings.TrimSpace(out), err
}

// commitTree makes a commit of tree with msg on parents, and learns its
// tree.
func (g *git) commitTree(ctx context.Context, tree, msg string, parents ...string) (string, error) {
	args := []string{"commit-tree", tree, "-m", msg}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	var env []string
	if g.clock != nil {
		at := fmt.Sprintf("@%d +0000", g.clock().Unix())
		env = []string{"GIT_COMMITTER_DATE=" + at, "GIT_AUTHOR_DATE=" + at}
	}
	out, err := g.runIn(ctx, nil, env, args...)
	if err != nil {
		return "", err
	}
	commit := strings.TrimSpace(out)
	g.learnTree(commit, tree)
	return commit, nil
}
