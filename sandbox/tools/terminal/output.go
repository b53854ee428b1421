package terminal

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// cleanOutput turns raw PTY bytes into the text shown to the model: invalid
// UTF-8 is replaced, ANSI escape sequences and stray control characters are
// removed, CRLF becomes LF and a bare CR overwrites the start of its line the
// way a terminal would (so progress bars collapse to their final state).
func cleanOutput(raw []byte) string {
	s := strings.ToValidUTF8(string(raw), "\uFFFD")
	s = stripANSI(s)
	return normalizeNewlines(s)
}

// stripANSI removes CSI, OSC, DCS/SOS/PM/APC, nF and two-byte escape
// sequences, and C0 control characters other than tab, newline and carriage
// return.
func stripANSI(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
		case c < 0x20 && c != '\n' && c != '\r' && c != '\t', c == 0x7f:
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipEscape returns the index just after the escape sequence starting at
// s[i] (which is ESC).
func skipEscape(s string, i int) int {
	if i+1 >= len(s) {
		return len(s)
	}
	n := s[i+1]
	switch {
	case n == '[': // CSI: parameter and intermediate bytes, then a final byte.
		j := i + 2
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x3f {
			j++
		}
		if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
			j++
		}
		return j
	case n == ']' || n == 'P' || n == 'X' || n == '^' || n == '_': // string sequences
		for j := i + 2; j < len(s); j++ {
			if s[j] == 0x07 {
				return j + 1
			}
			if s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\' {
				return j + 2
			}
		}
		return len(s)
	case n >= 0x20 && n <= 0x2f: // nF: intermediates then a final byte, e.g. ESC ( B
		j := i + 1
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
			j++
		}
		if j < len(s) {
			j++
		}
		return j
	default: // two-byte sequences such as ESC = or ESC 7
		return i + 2
	}
}

// normalizeNewlines converts CRLF (and CRCRLF, produced by ONLCR) to LF and
// applies bare carriage returns as overwrites from the start of the line.
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		if strings.Contains(line, "\r") {
			line = overlayCR(line)
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n")
}

func overlayCR(line string) string {
	var cur []rune
	for _, seg := range strings.Split(line, "\r") {
		r := []rune(seg)
		if len(r) >= len(cur) {
			cur = r
			continue
		}
		copy(cur, r)
	}
	return string(cur)
}

// trimOutput drops leading blank lines and trailing whitespace, as the
// reference implementation does for command output.
func trimOutput(s string) string {
	s = strings.TrimLeft(s, "\n")
	return strings.TrimRight(s, " \t\n")
}

// removeEchoedInput removes an echo of input at the start of output, which
// appears when the foreground program turned terminal echo back on.
func removeEchoedInput(output, input string) string {
	if input == "" {
		return output
	}
	t := strings.TrimLeft(output, " \n")
	if strings.HasPrefix(t, input) {
		return strings.TrimLeft(strings.TrimPrefix(t, input), " \n")
	}
	return output
}

const truncateNoticeFmt = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you. " +
	"The full output has been saved to %s - you can use other tools to view the full content " +
	"(truncated part starts around line %d).</NOTE>"

const truncateNoticeNoFile = "<response clipped><NOTE>Due to the max output limit, only part of the full response has been shown to you.</NOTE>"

// truncate keeps the head and the tail of text so that the result has at
// most maxChars characters (runes), inserting a notice in the middle. When
// saveFile is non-nil it is called with the full text and its returned path
// is named in the notice. The boolean reports whether text was truncated.
func truncate(text string, maxChars int, saveFile func(string) (string, error)) (string, string, bool) {
	if maxChars <= 0 || len(text) <= maxChars || utf8.RuneCountInString(text) <= maxChars {
		return text, "", false
	}
	runes := []rune(text)
	path := ""
	if saveFile != nil {
		p, err := saveFile(text)
		if err == nil {
			path = p
		}
	}
	notice := func(line int) string {
		if path == "" {
			return truncateNoticeNoFile
		}
		return fmt.Sprintf(truncateNoticeFmt, path, line)
	}
	// Size the notice with the largest line number it could carry, so the
	// final (possibly shorter) notice keeps the result within maxChars.
	maxLine := strings.Count(text, "\n") + 1
	avail := maxChars - utf8.RuneCountInString(notice(maxLine))
	if avail <= 0 {
		return string(runes[:maxChars]), path, true
	}
	head := avail/2 + avail%2
	tail := avail / 2
	headText := string(runes[:head])
	line := strings.Count(headText, "\n") + 1
	return headText + notice(line) + string(runes[len(runes)-tail:]), path, true
}

// saveFullOutput writes text to a new file in dir and returns its path.
func saveFullOutput(dir, text string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "terminal_output_*.txt")
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return filepath.Clean(f.Name()), nil
}
