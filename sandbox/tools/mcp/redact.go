package mcp

import (
	"net/url"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// minScrubLen is the shortest substituted value scrubbed from error text;
// shorter values cannot be meaningful secrets and replacing them would
// garble messages.
const minScrubLen = 4

// redactor hides secret values in text bound for errors and logs: every
// value substituted for a placeholder (also URL-escaped) becomes ${NAME},
// then the whole text goes through the mask.
type redactor struct {
	repl *strings.Replacer
	mask func(string) string
}

func newRedactor(subs []substitution, mask func(string) string) *redactor {
	type pair struct{ old, new string }
	seen := map[string]bool{}
	var pairs []pair
	for _, s := range subs {
		if len(s.value) < minScrubLen {
			continue
		}
		for _, v := range []string{s.value, url.QueryEscape(s.value), url.PathEscape(s.value)} {
			if !seen[v] {
				seen[v] = true
				pairs = append(pairs, pair{v, "${" + s.name + "}"})
			}
		}
	}
	// Longest first: the replacer tries old strings in argument order.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].old) > len(pairs[j].old) })
	r := &redactor{mask: mask}
	if len(pairs) > 0 {
		args := make([]string, 0, 2*len(pairs))
		for _, p := range pairs {
			args = append(args, p.old, p.new)
		}
		r.repl = strings.NewReplacer(args...)
	}
	return r
}

// text returns s with secrets hidden.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	if r.repl != nil {
		s = r.repl.Replace(s)
	}
	if r.mask != nil {
		s = r.mask(s)
	}
	return s
}

// tailBuffer keeps the last bytes written to it (a process's stderr).
type tailBuffer struct {
	mu      sync.Mutex
	buf     []byte
	max     int
	dropped bool
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.dropped = true
	}
	return len(p), nil
}

// lastLines returns up to n of the last non-empty lines, joined by " | ",
// passed through redact, then cut to at most maxChars characters (keeping
// the end). When the buffer has dropped output its first, partial line is
// discarded, so that no secret is ever shown cut in half (and unmasked).
func (t *tailBuffer) lastLines(n, maxChars int, redact func(string) string) string {
	t.mu.Lock()
	s, dropped := string(t.buf), t.dropped
	t.mu.Unlock()
	if dropped {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		} else {
			s = ""
		}
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := redact(strings.Join(lines, " | "))
	if utf8.RuneCountInString(out) > maxChars {
		r := []rune(out)
		out = "…" + string(r[len(r)-maxChars:])
	}
	return out
}
