package fileeditor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acs-project/acs/internal/pathguard"
)

const (
	// maxResponseLen is the number of characters of file content or directory
	// listing shown before the output is clipped.
	maxResponseLen = 16000
	// snippetContext is the number of lines shown around an edit.
	snippetContext = 4

	fileClippedNotice = "<response clipped><NOTE>To save on context only part of this file has been shown to you. " +
		"You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"
	dirClippedNotice = "<response clipped><NOTE>To save on context only part of this directory has been shown to you. " +
		"You should use `ls -la` instead to view large directories incrementally.</NOTE>"
)

func (e *Editor) view(t *target, viewRange []int) (*result, error) {
	if t.info.IsDir() {
		if len(viewRange) > 0 {
			return nil, toolErrorf("Invalid `view_range` parameter: %s. The `view_range` parameter is not allowed when `path` points to a directory.", formatInts(viewRange))
		}
		text, err := e.viewDir(t)
		if err != nil {
			return nil, err
		}
		return &result{text: text, prevExist: true}, nil
	}
	content, err := e.readText(t)
	if err != nil {
		return nil, err
	}
	lines := splitLines(content)
	if len(viewRange) == 0 {
		return &result{text: makeOutput(lines, t.path, 1), prevExist: true}, nil
	}
	invalid := func(format string, args ...any) error {
		return toolErrorf("Invalid `view_range` parameter: %s. %s", formatInts(viewRange), fmt.Sprintf(format, args...))
	}
	if len(viewRange) != 2 {
		return nil, invalid("It should be a list of two integers.")
	}
	n := len(lines)
	start, end := viewRange[0], viewRange[1]
	if start < 1 || start > n {
		return nil, invalid("Its first element `%d` should be within the range of lines of the file: [1, %d].", start, n)
	}
	if end == -1 {
		end = n
	}
	if end > n {
		return nil, invalid("Its second element `%d` should be smaller than or equal to the number of lines in the file: `%d`.", end, n)
	}
	if end < start {
		return nil, invalid("Its second element `%d` should be greater than or equal to the first element `%d`.", end, start)
	}
	return &result{text: makeOutput(lines[start-1:end], t.path, start), prevExist: true}, nil
}

// viewDir lists the non-hidden entries of a directory up to two levels deep.
func (e *Editor) viewDir(t *target) (string, error) {
	display := filepath.Clean(t.path)
	entries, err := os.ReadDir(t.real)
	if err != nil {
		return "", toolErrorf("Ran into %v while trying to list %s", unwrapPathError(err), t.path)
	}
	out := []string{display + "/"}
	hidden := 0
	for _, de := range entries {
		name := de.Name()
		if strings.HasPrefix(name, ".") {
			hidden++
			continue
		}
		full := filepath.Join(t.real, name)
		isDir, descend := e.dirEntryKind(full, de)
		out = append(out, entryLine(display+"/"+name, isDir))
		if !descend {
			continue
		}
		children, err := os.ReadDir(full)
		if err != nil {
			continue
		}
		for _, c := range children {
			if strings.HasPrefix(c.Name(), ".") {
				continue
			}
			cIsDir, _ := e.dirEntryKind(filepath.Join(full, c.Name()), c)
			out = append(out, entryLine(display+"/"+name+"/"+c.Name(), cIsDir))
		}
	}
	text := fmt.Sprintf("Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n", display) +
		strings.Join(out, "\n")
	if hidden > 0 {
		text += fmt.Sprintf("\n\n%d hidden files/directories in this directory are excluded. You can use 'ls -la %s' to see them.", hidden, display)
	}
	if clipped, ok := clip(text); ok {
		text = clipped + dirClippedNotice
	}
	return text, nil
}

// dirEntryKind reports whether an entry is (or links to) a directory, and
// whether it may be listed: symlinks are only followed when their target is
// inside the workspace.
func (e *Editor) dirEntryKind(full string, de os.DirEntry) (isDir, descend bool) {
	if de.IsDir() {
		return true, true
	}
	if de.Type()&os.ModeSymlink == 0 {
		return false, false
	}
	fi, err := os.Stat(full)
	if err != nil || !fi.IsDir() {
		return false, false
	}
	real, err := filepath.EvalSymlinks(full)
	return true, err == nil && pathguard.Within(e.rootReal, real)
}

func entryLine(p string, isDir bool) string {
	if isDir {
		return p + "/"
	}
	return p
}

// splitLines splits content into lines without their "\n" terminators; a
// final newline does not start another line, so "" has no lines.
func splitLines(content string) []string {
	if content == "" {
		return nil
	}
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// makeOutput renders lines `cat -n` style, numbered from start, under a
// header naming desc. Content beyond maxResponseLen characters is clipped and
// followed by a notice.
func makeOutput(lines []string, desc string, start int) string {
	if clipped, ok := clip(strings.Join(lines, "\n")); ok {
		lines = strings.Split(clipped+fileClippedNotice, "\n")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Here's the result of running `cat -n` on %s:\n", desc)
	for i, l := range lines {
		fmt.Fprintf(&b, "%6d\t%s\n", start+i, strings.TrimSuffix(l, "\r"))
	}
	return b.String()
}

// clip returns the first maxResponseLen characters of s and true when s is
// longer than that.
func clip(s string) (string, bool) {
	if len(s) <= maxResponseLen {
		return s, false
	}
	n := 0
	for i := range s {
		if n == maxResponseLen {
			return s[:i], true
		}
		n++
	}
	return s, false
}

func formatInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
