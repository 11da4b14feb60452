package gitsync

import (
	"fmt"
	"strings"
)

// The one reader of git's -z outputs a sync asks for.

// parseRaw reads `git diff-tree -r -z --raw` output: ":omode nmode old
// new S\0path\0" for each change. With stdin set it reads the output of
// `diff-tree --stdin`, where each pair's changes follow a header line
// (the pair, ended by a newline), and returns one set per header; else
// one set.
func parseRaw(raw string, stdin bool) ([][]change, error) {
	var sets [][]change
	if !stdin {
		sets = append(sets, nil)
	}
	for len(raw) > 0 {
		if raw[0] != ':' {
			if !stdin {
				return nil, fmt.Errorf("gitsync: unexpected diff-tree output %q", head(raw))
			}
			end := strings.IndexAny(raw, "\n\x00")
			if end < 0 {
				break
			}
			sets = append(sets, nil)
			raw = raw[end+1:]
			continue
		}
		meta, rest, ok := strings.Cut(raw[1:], "\x00")
		if !ok {
			return nil, fmt.Errorf("gitsync: unexpected diff-tree output %q", head(raw))
		}
		p, rest, ok := strings.Cut(rest, "\x00")
		if !ok {
			return nil, fmt.Errorf("gitsync: unexpected diff-tree output %q", head(raw))
		}
		raw = rest
		f := strings.Fields(meta)
		if len(f) != 5 || f[4] == "" || len(sets) == 0 {
			return nil, fmt.Errorf("gitsync: unexpected diff-tree output %q", meta)
		}
		c := change{path: p, status: f[4][0], mode: f[1], omode: f[0], blob: f[3], old: f[2]}
		sets[len(sets)-1] = append(sets[len(sets)-1], c)
	}
	return sets, nil
}

// A lsEntry is one line of `git ls-tree -z`: mode, type, object and path.
type lsEntry struct{ mode, typ, blob, path string }

// parseLsTree reads `git ls-tree -z` output.
func parseLsTree(out string) []lsEntry {
	var es []lsEntry
	for entry := range strings.SplitSeq(out, "\x00") {
		meta, p, ok := strings.Cut(entry, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			es = append(es, lsEntry{f[0], f[1], f[2], p})
		}
	}
	return es
}

func head(s string) string { return s[:min(len(s), 80)] }
