package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README names the test behind each promise; every name it gives must
// be a test, fuzz target or benchmark that exists, so a renamed or deleted
// test cannot leave a promise pointing at nothing.
func TestReadmeNamesRealTests(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	def := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)\(`)
	err = filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
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
		t.Fatalf("the README names only %d tests", len(named))
	}
	for _, n := range named {
		if !defined[n] {
			t.Errorf("the README names %s, which no test file defines", n)
		}
	}
}
