package setup

import (
	"fmt"
	"strings"
)

// Diff returns a line diff of old and new in the unified style ("-" and "+"
// lines, two lines of context, "@@" between distant changes), for
// --dry-run. Configuration files are small: the longest common subsequence
// is computed outright.
func Diff(name string, old, new []byte) string {
	a, b := lines(old), lines(new)
	n, m := len(a), len(b)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		mark byte
		text string
	}
	var ops []op
	for i, j := 0, 0; i < n || j < m; {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	const context = 2
	near := func(k int) bool {
		for d := -context; d <= context; d++ {
			if k+d >= 0 && k+d < len(ops) && ops[k+d].mark != ' ' {
				return true
			}
		}
		return false
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s (after mailfs setup)\n", name, name)
	skipped, printed := false, false
	for k, o := range ops {
		if !near(k) {
			skipped = true
			continue
		}
		if skipped && printed {
			out.WriteString("@@\n")
		}
		skipped, printed = false, true
		fmt.Fprintf(&out, "%c%s\n", o.mark, o.text)
	}
	return out.String()
}

func lines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
