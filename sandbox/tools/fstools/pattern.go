package fstools

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Glob syntax shared by glob, the grep include filter and .gitignore files:
//
//	*       any run of characters except '/'
//	?       one character except '/'
//	[abc]   a character class; [!abc] or [^abc] negates it (never matches '/')
//	{a,b}   alternatives (may nest)
//	**      as a whole path component: any number of directories
//	\c      the character c literally
//
// Matching is case-sensitive.

// maxBraceExpansion bounds how many brace-free patterns one pattern expands to.
const maxBraceExpansion = 1024

// isRegexSpecial reports whether c must be escaped in a regexp.
func isRegexSpecial(c byte) bool { return strings.IndexByte(`\.+*?()|[]{}^$`, c) >= 0 }

// globToRegexp translates a glob into a regular expression source (not
// anchored). '/' separates path components. Strict mode rejects what
// ripgrep's glob syntax rejects: a '**' that is not a whole path component,
// nested braces, an unclosed '[' and a trailing backslash; otherwise a '**'
// inside a component acts as '*', and an unclosed '[' is literal.
func globToRegexp(p string, strict bool) (string, error) {
	var b strings.Builder
	depth := 0
	n := len(p)
	componentStart := func(i int) bool {
		if i == 0 {
			return true
		}
		switch p[i-1] {
		case '/':
			return true
		case '{', ',':
			return depth > 0
		}
		return false
	}
	for i := 0; i < n; i++ {
		c := p[i]
		switch c {
		case '\\':
			if i+1 < n {
				i++
				c = p[i]
			} else if strict {
				return "", fmt.Errorf("dangling '\\' at the end of pattern %q", p)
			}
			writeLiteral(&b, c)
		case '*':
			j := i
			for j < n && p[j] == '*' {
				j++
			}
			if j-i >= 2 && componentStart(i) && (j == n || p[j] == '/' || depth > 0 && (p[j] == ',' || p[j] == '}')) {
				switch {
				case j < n && p[j] == '/':
					b.WriteString("(?:.*/)?")
					j++ // the slash is part of the wildcard
				default:
					b.WriteString(".*")
				}
			} else {
				if strict && j-i >= 2 {
					return "", fmt.Errorf("invalid use of '**' in pattern %q: it must be a whole path component", p)
				}
				b.WriteString("[^/]*")
			}
			i = j - 1
		case '?':
			b.WriteString("[^/]")
		case '[':
			cls, next, ok := translateClass(p, i)
			if !ok {
				if strict {
					return "", fmt.Errorf("unclosed '[' in pattern %q", p)
				}
				writeLiteral(&b, c)
				continue
			}
			b.WriteString(cls)
			i = next - 1
		case '{':
			if strict && depth > 0 {
				return "", fmt.Errorf("nested braces are not allowed in pattern %q", p)
			}
			depth++
			b.WriteString("(?:")
		case ',':
			if depth > 0 {
				b.WriteByte('|')
			} else {
				writeLiteral(&b, c)
			}
		case '}':
			if depth > 0 {
				depth--
				b.WriteByte(')')
			} else {
				writeLiteral(&b, c)
			}
		default:
			writeLiteral(&b, c)
		}
	}
	if depth > 0 {
		return "", fmt.Errorf("unclosed '{' in pattern %q", p)
	}
	return b.String(), nil
}

func writeLiteral(b *strings.Builder, c byte) {
	if isRegexSpecial(c) {
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// translateClass translates the character class starting at p[i] == '['. It
// returns the regexp class, the index after the closing ']' and false when
// the class is not closed (the '[' is then a literal).
func translateClass(p string, i int) (string, int, bool) {
	j := i + 1
	negate := false
	if j < len(p) && (p[j] == '!' || p[j] == '^') {
		negate = true
		j++
	}
	var b strings.Builder
	b.WriteByte('[')
	if negate {
		b.WriteString("^/")
	}
	first := true
	for ; j < len(p); j++ {
		c := p[j]
		if c == ']' && !first {
			b.WriteByte(']')
			return b.String(), j + 1, true
		}
		first = false
		switch c {
		case '\\':
			if j+1 < len(p) {
				j++
				c = p[j]
			}
			if isRegexSpecial(c) || c == '-' {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		case '[', ']', '^':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '/':
			// A class never matches the separator.
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// hasWildcard reports whether a brace-free glob contains an unescaped
// wildcard (*, ? or a character class).
func hasWildcard(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if _, _, ok := translateClass(p, i); ok {
				return true
			}
		}
	}
	return false
}

// unescapeGlob removes the backslash escapes of a wildcard-free glob.
func unescapeGlob(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// expandBraces expands the {a,b} alternatives of p into brace-free patterns,
// in order. Escaped braces and braces inside character classes are literal.
func expandBraces(p string) ([]string, error) {
	open := -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			if _, next, ok := translateClass(p, i); ok {
				i = next - 1
			}
		case '{':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		return []string{p}, nil
	}
	// Find the matching close and the top-level commas.
	depth := 0
	var commas []int
	closeAt := -1
scan:
	for i := open; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			if _, next, ok := translateClass(p, i); ok {
				i = next - 1
			}
		case '{':
			depth++
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		case '}':
			depth--
			if depth == 0 {
				closeAt = i
				break scan
			}
		}
	}
	if closeAt < 0 {
		return nil, fmt.Errorf("unclosed '{' in pattern %q", p)
	}
	prefix, suffix := p[:open], p[closeAt+1:]
	var alts []string
	start := open + 1
	for _, c := range append(commas, closeAt) {
		alts = append(alts, p[start:c])
		start = c + 1
	}
	var out []string
	for _, alt := range alts {
		exp, err := expandBraces(prefix + alt + suffix)
		if err != nil {
			return nil, err
		}
		out = append(out, exp...)
		if len(out) > maxBraceExpansion {
			return nil, fmt.Errorf("pattern %q has too many brace alternatives (more than %d)", p, maxBraceExpansion)
		}
	}
	return out, nil
}

// ignoreMatch is the verdict of gitignore-style rules on a path.
type ignoreMatch int

const (
	matchNone ignoreMatch = iota
	matchIgnore
	matchWhitelist
)

// ignoreRule is one line of a .gitignore file (or one --glob override).
type ignoreRule struct {
	re      *regexp.Regexp
	negate  bool // "!pattern"
	dirOnly bool // "pattern/"
}

// ignoreRules is a list of gitignore-style rules relative to a directory.
// The last matching rule wins.
type ignoreRules []ignoreRule

// parseIgnoreLine parses one gitignore line with ripgrep's semantics. It
// returns ok false for blank lines and comments.
func parseIgnoreLine(line string) (ignoreRule, bool, error) {
	line = strings.TrimSuffix(line, "\r")
	if line == "" || line[0] == '#' {
		return ignoreRule{}, false, nil
	}
	var r ignoreRule
	switch {
	case line[0] == '!':
		r.negate = true
		line = line[1:]
	case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
		line = line[1:]
	}
	// Trailing white space is ignored unless escaped.
	if !strings.HasSuffix(line, `\ `) {
		line = strings.TrimRightFunc(line, unicode.IsSpace)
	}
	if line == "" {
		return ignoreRule{}, false, nil
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimSuffix(line, "/")
		line = strings.TrimSuffix(line, `\`) // an escaped trailing slash
	}
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	if line == "" {
		return ignoreRule{}, false, nil
	}
	src, err := globToRegexp(line, true)
	if err != nil {
		return ignoreRule{}, false, err
	}
	if !anchored {
		src = "(?:.*/)?" + src
	}
	re, err := regexp.Compile("^(?:" + src + ")$")
	if err != nil {
		return ignoreRule{}, false, fmt.Errorf("invalid pattern %q: %w", line, err)
	}
	r.re = re
	return r, true, nil
}

// parseIgnoreFile parses the content of a .gitignore file; lines that cannot
// be parsed are skipped, as ripgrep does.
func parseIgnoreFile(content string) ignoreRules {
	var rules ignoreRules
	for _, line := range strings.Split(content, "\n") {
		if r, ok, err := parseIgnoreLine(line); ok && err == nil {
			rules = append(rules, r)
		}
	}
	return rules
}

// match matches rel, a '/'-separated path relative to the rules' directory.
func (rs ignoreRules) match(rel string, isDir bool) ignoreMatch {
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			if r.negate {
				return matchWhitelist
			}
			return matchIgnore
		}
	}
	return matchNone
}
