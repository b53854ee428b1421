package cli

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around each change.
const diffContext = 3

// maxDiffCells bounds the line-by-line comparison (len(a)*len(b)); bigger
// files are summarised instead of diffed.
const maxDiffCells = 4_000_000

// UnifiedDiff is the unified diff (as diff -u writes it) that turns a into
// b, labelled from and to; "" when they are equal.
func UnifiedDiff(from, to, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	if len(al)*len(bl) > maxDiffCells {
		fmt.Fprintf(&out, "@@ -1,%d +1,%d @@\n (too large to diff: %d lines become %d)\n", len(al), len(bl), len(al), len(bl))
		return out.String()
	}
	ops := lineOps(al, bl)
	// Group the ops into hunks: changes with diffContext lines around.
	type hunk struct{ start, end int } // op indexes [start, end)
	var hunks []hunk
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		s, e := max(0, i-diffContext), min(len(ops), i+diffContext+1)
		if n := len(hunks); n > 0 && s <= hunks[n-1].end {
			hunks[n-1].end = e
		} else {
			hunks = append(hunks, hunk{s, e})
		}
	}
	for _, h := range hunks {
		aStart, bStart, aN, bN := ops[h.start].a, ops[h.start].b, 0, 0
		for _, op := range ops[h.start:h.end] {
			if op.kind != '+' {
				aN++
			}
			if op.kind != '-' {
				bN++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aN), hunkRange(bStart, bN))
		for _, op := range ops[h.start:h.end] {
			line := op.text
			out.WriteByte(op.kind)
			out.WriteString(strings.TrimSuffix(line, "\n"))
			out.WriteByte('\n')
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return out.String()
}

// hunkRange is a hunk header's "start,count" (1-based; an empty range
// names the line before it).
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprint(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// op is one line of an edit script: ' ' kept, '-' removed from a, '+'
// added from b; a and b are the line's (or the next line's) index in each.
type op struct {
	kind byte
	text string
	a, b int
}

// lineOps is a shortest edit script from a to b (longest common
// subsequence, by dynamic programming).
func lineOps(a, b []string) []op {
	n, m := len(a), len(b)
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
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
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], i, j})
			i, j = i+1, j+1
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', a[i], i, j})
			i++
		default:
			ops = append(ops, op{'+', b[j], i, j})
			j++
		}
	}
	return ops
}
