// Package secrets keeps secret values out of everything the agent server
// writes or serves: a Masker replaces known values with <secret-hidden> in
// text, JSON, streams and log records; a Cipher seals values for the
// conversation's files; Resolve fetches LookupSecret values.
package secrets

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/acs-project/acs/sandbox/agentwire"
)

// Hidden replaces every secret value.
const Hidden = agentwire.SecretHidden

// Masker replaces known secret values with Hidden. Every value is matched in
// the forms it takes in the server's output: as is, with line breaks as the
// terminal writes them (\r\n), and escaped inside a JSON string (with and
// without HTML escaping). Values are only ever added, never forgotten, so a
// value that was once a secret stays hidden. A Masker is safe for concurrent
// use; the zero value is not usable, call NewMasker.
type Masker struct {
	mu     sync.Mutex
	values map[string]struct{}
	// cur is the immutable matching state, swapped on Add.
	cur atomic.Pointer[matcher]
}

type matcher struct {
	forms [][]byte // longest first
	rep   *strings.Replacer
	first [256]bool // bytes that start some form
}

// NewMasker returns a Masker that hides values.
func NewMasker(values ...string) *Masker {
	m := &Masker{values: map[string]struct{}{}}
	m.cur.Store(&matcher{})
	m.Add(values...)
	return m
}

// MinLength is the length (in bytes) below which a value is not masked:
// hiding every "x" or "42" would destroy the output while protecting
// nothing, as such a value is not a secret.
const MinLength = 4

// Add makes values secret. Values shorter than MinLength are ignored.
func (m *Masker) Add(values ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	added := false
	for _, v := range values {
		if len(v) < MinLength {
			continue
		}
		if _, ok := m.values[v]; !ok {
			m.values[v] = struct{}{}
			added = true
		}
	}
	if !added {
		return
	}
	set := map[string]struct{}{}
	for v := range m.values {
		for _, f := range forms(v) {
			set[f] = struct{}{}
		}
	}
	list := make([]string, 0, len(set))
	for f := range set {
		list = append(list, f)
	}
	// Longest first: the replacer prefers earlier arguments at a position.
	slices.SortFunc(list, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	nm := &matcher{}
	pairs := make([]string, 0, 2*len(list))
	for _, f := range list {
		nm.forms = append(nm.forms, []byte(f))
		nm.first[f[0]] = true
		pairs = append(pairs, f, Hidden)
	}
	nm.rep = strings.NewReplacer(pairs...)
	m.cur.Store(nm)
}

// forms lists the ways v can appear in output.
func forms(v string) []string {
	base := []string{v}
	if strings.Contains(v, "\n") {
		base = append(base, strings.ReplaceAll(strings.ReplaceAll(v, "\r\n", "\n"), "\n", "\r\n"))
	}
	out := slices.Clone(base)
	for _, b := range base {
		out = append(out, jsonInner(b, true), jsonInner(b, false))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonInner is v as it appears between the quotes of a JSON string.
func jsonInner(v string, html bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v)
	s := strings.TrimSuffix(buf.String(), "\n")
	return s[1 : len(s)-1]
}

// Len reports how many values are secret.
func (m *Masker) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.values)
}

// Mask returns s with every secret replaced by Hidden. A nil Masker returns
// s unchanged.
func (m *Masker) Mask(s string) string {
	if m == nil {
		return s
	}
	cur := m.cur.Load()
	if cur.rep == nil || !cur.anyFirst(s) {
		return s
	}
	return cur.rep.Replace(s)
}

// MaskBytes returns b with every secret replaced by Hidden; b itself when it
// holds none.
func (m *Masker) MaskBytes(b []byte) []byte {
	if m == nil {
		return b
	}
	cur := m.cur.Load()
	if cur.rep == nil || !cur.contains(b) {
		return b
	}
	return []byte(cur.rep.Replace(string(b)))
}

// Contains reports whether b holds a secret in any of its forms.
func (m *Masker) Contains(b []byte) bool {
	if m == nil {
		return false
	}
	return m.cur.Load().contains(b)
}

func (cur *matcher) anyFirst(s string) bool {
	for i := 0; i < len(s); i++ {
		if cur.first[s[i]] {
			return true
		}
	}
	return false
}

func (cur *matcher) contains(b []byte) bool {
	for _, f := range cur.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// SafeCut returns the largest n' <= n such that cutting b at n' splits no
// secret: no occurrence of a secret in b straddles n', and b[n':] does not
// begin a secret that b ends before completing (more bytes may follow). A
// stream that emits b[:n'] and keeps the rest never lets a secret escape
// across two chunks.
func (m *Masker) SafeCut(b []byte, n int) int {
	if m == nil {
		return n
	}
	cur := m.cur.Load()
	for changed := true; changed; {
		changed = false
		for _, f := range cur.forms {
			lo := max(n-len(f)+1, 0)
			for i := lo; i < n; i++ {
				rest := b[i:]
				if len(rest) >= len(f) {
					if !bytes.HasPrefix(rest, f) {
						continue
					}
				} else if !bytes.HasPrefix(f, rest) {
					continue
				}
				n, changed = i, true
				break
			}
		}
	}
	return n
}

// MaskJSONStrings masks the string values of a JSON document, leaving its
// structure (keys, numbers, literals) intact. b is returned unchanged
// when it is not valid JSON.
func (m *Masker) MaskJSONStrings(b []byte) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(m.maskValue(v))
	if err != nil {
		return b
	}
	return out
}

func (m *Masker) maskValue(v any) any {
	switch x := v.(type) {
	case string:
		return m.Mask(x)
	case []any:
		for i := range x {
			x[i] = m.maskValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = m.maskValue(e)
		}
		return out
	}
	return v
}
