package main

import (
	"strings"
	"testing"
)

// writes counts the Write calls it gets.
type writes struct {
	n int
	strings.Builder
}

func (w *writes) Write(p []byte) (int, error) { w.n++; return w.Builder.Write(p) }

// A table reaches its writer in one Write: wait's output is not buffered
// (it is written as the mail arrives), and a tabwriter flushes cell by
// cell, which was one write a word.
func TestTableIsOneWrite(t *testing.T) {
	var w writes
	rows := [][]string{{"2026-03-05T10-30-00.123456789Z-mayor", "mayor", "normal", "build"}, {"b", "witness", "urgent", "fix it"}}
	if err := table(&w, []string{"ID", "FROM", "PRIORITY", "SUBJECT"}, rows); err != nil {
		t.Fatal(err)
	}
	if w.n != 1 {
		t.Fatalf("the table took %d writes, want 1", w.n)
	}
	if got := strings.Count(w.String(), "\n"); got != 3 {
		t.Fatalf("%d lines, want a header and two rows:\n%s", got, w.String())
	}
}
