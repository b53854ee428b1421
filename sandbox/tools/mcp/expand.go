package mcp

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// Expand returns a copy of cfg in which every ${NAME} and ${NAME:-default}
// in every string value (command, args, env values, cwd, url, header values
// and auth fields) is replaced by lookup(NAME), or by the default (itself
// expanded) when lookup reports NAME as not found. NAME matches
// [A-Za-z_][A-Za-z0-9_]*. A placeholder without a default whose name is not
// found is left as it is and its name is listed in missing (sorted, without
// duplicates). $NAME without braces, malformed placeholders and map keys are
// not expanded, and substituted values are never expanded again. cfg itself
// is not modified.
func Expand(cfg ServerConfig, lookup func(name string) (string, bool)) (expanded ServerConfig, missing []string) {
	e := expander{lookup: lookup}
	out := e.config(cfg)
	return out, e.missingNames()
}

// substitution is one value taken from lookup.
type substitution struct{ name, value string }

type expander struct {
	lookup  func(string) (string, bool)
	missing map[string]bool
	subs    []substitution
}

func (e *expander) missingNames() []string {
	if len(e.missing) == 0 {
		return nil
	}
	out := make([]string, 0, len(e.missing))
	for n := range e.missing {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func (e *expander) config(cfg ServerConfig) ServerConfig {
	out := cfg
	out.Command = e.ptr(cfg.Command)
	out.Cwd = e.ptr(cfg.Cwd)
	out.URL = e.ptr(cfg.URL)
	if cfg.Args != nil {
		out.Args = make([]string, len(cfg.Args))
		for i, a := range cfg.Args {
			out.Args[i] = e.str(a)
		}
	}
	out.Env = e.values(cfg.Env)
	out.Headers = e.values(cfg.Headers)
	if cfg.Auth != nil {
		a := *cfg.Auth
		a.Token = e.ptr(a.Token)
		a.Username = e.ptr(a.Username)
		a.Password = e.ptr(a.Password)
		a.HeaderName = e.ptr(a.HeaderName)
		a.HeaderValue = e.ptr(a.HeaderValue)
		out.Auth = &a
	}
	// Copy the remaining pointers so the result shares nothing with cfg.
	out.Transport = clonePtr(cfg.Transport)
	out.Type = clonePtr(cfg.Type)
	out.Timeout = clonePtr(cfg.Timeout)
	out.Enabled = clonePtr(cfg.Enabled)
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (e *expander) values(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = e.str(m[k])
	}
	return out
}

func (e *expander) ptr(p *string) *string {
	if p == nil {
		return nil
	}
	s := e.str(*p)
	return &s
}

// str expands the placeholders of s.
func (e *expander) str(s string) string {
	var b []byte
	i, changed := 0, false
	for i < len(s) {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			break
		}
		j += i
		b = append(b, s[i:j]...)
		end, name, def, hasDef, ok := parsePlaceholder(s, j)
		changed = true
		if !ok {
			b = append(b, "${"...)
			i = j + 2
			continue
		}
		switch v, found := e.lookupName(name); {
		case found:
			b = append(b, v...)
			e.subs = append(e.subs, substitution{name, v})
		case hasDef:
			b = append(b, e.str(def)...)
		default:
			b = append(b, s[j:end]...)
			if e.missing == nil {
				e.missing = map[string]bool{}
			}
			e.missing[name] = true
		}
		i = end
	}
	if !changed {
		return s
	}
	return string(append(b, s[i:]...))
}

func (e *expander) lookupName(name string) (string, bool) {
	if e.lookup == nil {
		return "", false
	}
	return e.lookup(name)
}

// parsePlaceholder parses the placeholder starting at s[i] ("${"). It
// returns the index after its closing brace, the name and the default (the
// text after ":-", which may itself hold placeholders).
func parsePlaceholder(s string, i int) (end int, name, def string, hasDef, ok bool) {
	k := i + 2
	start := k
	for k < len(s) && isNameByte(s[k], k == start) {
		k++
	}
	if k == start || k >= len(s) {
		return 0, "", "", false, false
	}
	name = s[start:k]
	if s[k] == '}' {
		return k + 1, name, "", false, true
	}
	if k+1 >= len(s) || s[k] != ':' || s[k+1] != '-' {
		return 0, "", "", false, false
	}
	ds := k + 2
	depth := 0
	for p := ds; p < len(s); p++ {
		switch {
		case s[p] == '$' && p+1 < len(s) && s[p+1] == '{':
			depth++
			p++
		case s[p] == '}':
			if depth == 0 {
				return p + 1, name, s[ds:p], true, true
			}
			depth--
		}
	}
	return 0, "", "", false, false
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		return true
	case c >= '0' && c <= '9':
		return !first
	}
	return false
}
