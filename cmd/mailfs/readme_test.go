package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docs returns the README and every page of docs/, by path from the
// repository's root.
func docs(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, p := range append(paths, filepath.Join("..", "..", "README.md")) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(filepath.Join("..", ".."), p)
		out[filepath.ToSlash(rel)] = data
	}
	if len(out) < 5 {
		t.Fatalf("only %d pages of documentation", len(out))
	}
	return out
}

// The README and docs/ name the test behind each promise; every name they
// give must be a test, fuzz target or benchmark that exists, so a renamed
// or deleted test cannot leave a promise pointing at nothing.
func TestReadmeNamesRealTests(t *testing.T) {
	var all []byte
	for _, data := range docs(t) {
		all = append(all, data...)
	}
	readme := all
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		for _, m := range def.FindAllSubmatch(src, -1) {
			defined[string(m[1])] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\b((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]+)`).FindAllString(string(readme), -1)
	if len(named) < 20 {
		t.Fatalf("the documentation names only %d tests", len(named))
	}
	for _, n := range named {
		if !defined[n] {
			t.Errorf("the documentation names %s, which no test file defines", n)
		}
	}
}

// The README is a landing page (at most 400 lines), and every link in it
// and in docs/ leads somewhere: a file of the repository, and a heading of
// that file when the link names one.
func TestDocsLinksResolve(t *testing.T) {
	pages := docs(t)
	if n := strings.Count(string(pages["README.md"]), "\n"); n > 400 {
		t.Errorf("the README has %d lines; keep it under 400 and put the rest in docs/", n)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for page, data := range pages {
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.ToSlash(filepath.Join(filepath.Dir(page), file))
			}
			content, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(path)))
			if err != nil {
				t.Errorf("%s links to %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !slices.Contains(anchors(string(content)), anchor) {
				t.Errorf("%s links to %s: no heading %q in %s", page, target, anchor, path)
			}
		}
	}
}

// anchors are the ids GitHub gives a markdown page's headings: lower case,
// spaces as "-", other punctuation dropped.
func anchors(md string) []string {
	var out []string
	inCode := false
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}

// The README's "Every command" table names each command "mailfs --help"
// lists, and no other: a command added, renamed or dropped fails here until
// the README says so.
func TestReadmeListsEveryCommand(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, stdio{in: strings.NewReader(""), out: &out, err: io.Discard}); code != 0 {
		t.Fatalf("--help: status %d", code)
	}
	_, list, ok := strings.Cut(out.String(), "\nCommands:\n")
	if !ok {
		t.Fatal("--help prints no Commands: section")
	}
	help := map[string]bool{}
	name := regexp.MustCompile(`^  ([a-z][a-z-]*(?: [a-z][a-z-]*)?)(?:  |$)`)
	for line := range strings.Lines(list) {
		if m := name.FindStringSubmatch(strings.TrimRight(line, "\n")); m != nil {
			help[m[1]] = true
		}
	}
	if len(help) < 40 {
		t.Fatalf("read only %d commands from --help: %v", len(help), help)
	}

	readme := string(docs(t)["README.md"])
	_, section, ok := strings.Cut(readme, "\n## Every command\n")
	if !ok {
		t.Fatal(`the README has no "## Every command" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]bool{}
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "`") {
			continue
		}
		for _, c := range strings.Split(cells[1], ",") {
			c = strings.Trim(strings.TrimSpace(c), "`")
			if listed[c] {
				t.Errorf("the README lists %q twice", c)
			}
			listed[c] = true
		}
	}
	for c := range help {
		if !listed[c] {
			t.Errorf("mailfs --help lists %q; the README's \"Every command\" does not", c)
		}
	}
	for c := range listed {
		if !help[c] {
			t.Errorf("the README's \"Every command\" lists %q; mailfs --help does not", c)
		}
	}
}
