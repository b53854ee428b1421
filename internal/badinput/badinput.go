// Package badinput is the deterministic corpus of bad input the route fuzz
// tests of both servers (the V1 API of `acs serve` and the agent server)
// send, and the checks they apply to every answer.
//
// The corpus is tables, not random runs: the same requests on every run, so
// a failure reproduces and the counts of a report can be compared. It holds
// query values (limits, sort orders, time stamps in odd spellings, page ids,
// control and invalid UTF-8 bytes, huge numbers), path segments (NUL as %00,
// %2F, dot segments, invalid escapes, very long, unicode), malformed request
// bodies, and for a plausible body of a route its field mutations (each field
// removed, given a value of each other JSON type, a huge value, an unknown
// sibling).
//
// The rule every answer must keep (Check): no 5xx, and an error answer
// (4xx) is JSON, {"detail": "<message>"} or {"detail": [{"loc", "msg",
// "type"}, …]}.
package badinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// Values are bad values for query parameters (and, escaped, path
// segments): empty and blank, numbers out of every range, booleans spelled
// oddly, sort orders in the wrong case, time stamps in odd spellings,
// control bytes, invalid UTF-8, injection attempts and very long values.
var Values = []string{
	"", " ", "0", "-1", "1", "+5", " 5", "5 ", "1.0", "1e3", "0x10", "٣", "100", "101",
	"99999999999999999999", "9223372036854775807", "-9223372036854775809", "1e309", "NaN", "Infinity",
	"true", "True", "yes", "maybe", "null", "None", "undefined",
	"TIMESTAMP", "TIMESTAMP_DESC", "timestamp_desc", "TIMESTAMP_DESC ", "CREATED_AT_DESC", "updated_at",
	"idle", "RUNNING", "user", "agent", "MessageEvent", "openhands.sdk.event.MessageEvent", "ConversationStateUpdateEvent",
	// Time stamps.
	"2026-01-01", "2026-01-01T00:00:00", "2026-01-01 00:00:00", "2026-01-01T00:00:00z", "2026-01-01t00:00:00Z",
	"2026-01-01T24:00:00Z", "2026-01-01T00:00:60Z", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z",
	"2026-01-01T00:00:00+25:00", "2026-01-01T00:00:00-00:00", "2026-01-01T00:00:00.1234567891234Z",
	"0000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "10000-01-01T00:00:00Z",
	"+002026-01-01T00:00:00Z", "1767225600", "2026-W01", "now",
	// Ids and page tokens.
	"00000000-0000-0000-0000-000000000000", "ffffffffffffffffffffffffffffffff", "{00000000-0000-0000-0000-000000000000}",
	"urn:uuid:00000000-0000-0000-0000-000000000000", "task-", "task-" + strings.Repeat("z", 32),
	// Bytes no parameter should hold.
	"\x00", "a\x00b", "\x01\x1f\x7f", "\n", "\r\n", "\t", "\xff\xfe", "\xc0\xaf", "\xed\xa0\x80", "%", "%zz", "%00",
	"../../etc/passwd", "..", ".", "/", "//", "\\", "~", "'; DROP TABLE x;--", "<script>", "${HOME}", "$(id)",
	"💥", "\u202e", "\ufeff", "\u2028", ",,,,", "{}", "[]", "a,b", "*",
	strings.Repeat("x", 5000), strings.Repeat("é", 2000),
}

// Few is a subset of Values, one of each kind, for the parameters of routes
// where every value costs real work (a git run, a round trip to an agent
// server).
var Few = []string{
	"", " ", "0", "-1", "101", "99999999999999999999", "1e309", "maybe", "null", "TIMESTAMP_DESC ", "2026-02-30T00:00:00Z",
	"2026-01-01T00:00:00+25:00", "0000-01-01T00:00:00Z", "00000000-0000-0000-0000-000000000000", "task-",
	"\x00", "a\x00b", "\n", "\xff\xfe", "%zz", "%00", "../../etc/passwd", "..", "/", "\\", "-p", "--output=/tmp/x",
	"'; DROP TABLE x;--", "💥", "\u202e", strings.Repeat("x", 5000),
}

// QueryStrings are whole query strings that break the syntax rather than a
// value: invalid escapes, bare keys, repeated keys, semicolons, very many
// parameters. Each is raw (as on the request line).
var QueryStrings = []string{
	"%", "%zz", "a=%zz", "=", "==", "&&&", "a", "a&a&a", "a=1&a=2", "a;b=c", "limit=1;limit=2", "%00=%00",
	"limit=1&limit=2&limit=x", "page_id", "limit", "limit=", "sort_order", "%ff=%fe",
	"x=" + strings.Repeat("y", 8000),
	strings.TrimSuffix(strings.Repeat("k=v&", 2000), "&"),
}

// Segments are bad path segments, escaped as they go on the request line
// (invalid escapes included, which net/http refuses before any handler).
var Segments = []string{
	"", "%00", "a%00b", "%2F", "a%2Fb", "..%2F..%2Fetc%2Fpasswd", "%2e%2e", "%2E", "%20", "%0A", "%ff%fe",
	"%C0%AF", "%E2%80%AE", "%F0%9F%92%A5", "%", "%zz", "%25", "%3F", "%23", "%3B", "a;b", "a=b", "@", "~", "-", "_",
	"00000000-0000-0000-0000-000000000000", "00000000000000000000000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
	"%7B00000000-0000-0000-0000-000000000000%7D", "urn:uuid:00000000-0000-0000-0000-000000000000",
	"0", "-1", "99999999999999999999", "null", "true", "task-", "task-" + strings.Repeat("z", 32),
	strings.Repeat("a", 5000), strings.Repeat("%C3%A9", 300), strings.Repeat("..%2F", 200),
}

// Confusions are JSON values of every type, put in place of a field.
var Confusions = []string{`null`, `-1`, `1e999`, `""`, `"s"`, `true`, `[]`, `{}`}

// Body is one request body of the corpus.
type Body struct {
	Name string
	Data []byte
}

// Malformed returns bodies that break JSON itself or the body's top-level
// shape, some built from sample (a plausible body of the route, a JSON
// object): truncated, with a NUL byte, single-quoted, behind a byte order
// mark, deeply nested, with a duplicate key, huge numbers, invalid UTF-8, a
// lone surrogate, 2,000 extra keys, a 70,000-byte key, a 1 MiB string, a
// 10,000-element list, bytes of no format, and the wrong top-level types.
func Malformed(sample string) []Body {
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	var extra strings.Builder
	extra.WriteString(strings.TrimSuffix(strings.TrimSpace(sample), "}"))
	for j := 0; j < 2000; j++ {
		if j > 0 || strings.TrimSpace(sample) != "{}" {
			extra.WriteByte(',')
		}
		fmt.Fprintf(&extra, `"k%d":%d`, j, j)
	}
	extra.WriteString("}")
	noise := make([]byte, 256)
	x := uint32(2463534242)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		noise[i] = byte(x)
	}
	half := len(sample) / 2
	out := []Body{
		{"empty", nil},
		{"blank", []byte(" \n\t ")},
		{"null", []byte(`null`)},
		{"list", []byte(`[]`)},
		{"list of object", []byte(`[{}]`)},
		{"string", []byte(`"x"`)},
		{"number", []byte(`1`)},
		{"bool", []byte(`true`)},
		{"empty object", []byte(`{}`)},
		{"two objects", []byte(`{}{}`)},
		{"trailing garbage", []byte(sample + "x")},
		{"duplicate key", []byte(`{"a":1,"a":2}`)},
		{"truncated", []byte(sample[:half])},
		{"NUL inside", []byte(sample[:half] + "\x00" + sample[half:])},
		{"single quotes", []byte(strings.ReplaceAll(sample, `"`, `'`))},
		{"byte order mark", append([]byte("\xef\xbb\xbf"), sample...)},
		{"deep list", []byte(deep("[", "]", 100000))},
		{"deep object", []byte(deep(`{"a":`, "}", 10000))},
		{"huge exponent", []byte(`{"a":1e999999}`)},
		{"huge integer", []byte(`{"a":123456789012345678901234567890123456789}`)},
		{"invalid UTF-8", []byte("{\"a\":\"\xff\xfe\xc0\xaf\"}")},
		{"invalid UTF-8 key", []byte("{\"\xff\":1}")},
		{"lone surrogate", []byte(`{"a":"\ud800"}`)},
		{"bad escape", []byte(`{"a":"\x"}`)},
		{"control character", []byte("{\"a\":\"\x01\"}")},
		{"2000 extra keys", []byte(extra.String())},
		{"70000-byte key", []byte(`{"` + strings.Repeat("k", 70000) + `":1}`)},
		{"1 MiB string", []byte(`{"a":"` + strings.Repeat("x", 1<<20) + `"}`)},
		{"10000-element list", []byte(`[` + strings.TrimSuffix(strings.Repeat(`"x",`, 10000), ",") + `]`)},
		{"noise", noise},
		{"form encoding", []byte(`a=1&b=2`)},
		{"XML", []byte(`<?xml version="1.0"?><a/>`)},
	}
	return out
}

// Mutations returns sample (a JSON object) with each of its fields, at every
// depth (objects' keys, and the first item of each list), removed, replaced
// by each of Confusions, or replaced by a huge value of its own type (a
// 64 KiB string, 1e308, 10,000 copies of a list's first item), and with an
// unknown key added to each object. Names are the field's path and what was
// done, such as "agent.llm.model=null".
func Mutations(sample string) []Body {
	var root any
	dec := json.NewDecoder(strings.NewReader(sample))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		panic("badinput: sample is not JSON: " + err.Error())
	}
	var out []Body
	add := func(name string, tree any, raw string) {
		b, err := json.Marshal(tree)
		if err != nil {
			panic("badinput: " + err.Error())
		}
		b = bytes.Replace(b, []byte(`"`+placeholder+`"`), []byte(raw), 1)
		out = append(out, Body{name, b})
	}
	for _, p := range paths(root, nil) {
		name := renderPath(p)
		if _, isObject := get(root, p).(map[string]any); isObject {
			add(name+"+unknown", with(root, append(p, "acs_unknown_field"), placeholder), "1")
		}
		if len(p) == 0 {
			continue
		}
		if _, isKey := p[len(p)-1].(string); isKey {
			add(name+" removed", without(root, p), "")
		}
		for _, c := range Confusions {
			add(name+"="+c, with(root, p, placeholder), c)
		}
		switch v := get(root, p).(type) {
		case string:
			add(name+"=64KiB", with(root, p, placeholder), `"`+strings.Repeat("x", 64<<10)+`"`)
			if v != "" {
				add(name+"=NUL", with(root, p, placeholder), `"`+v+`\u0000"`)
			}
		case json.Number:
			add(name+"=1e308", with(root, p, placeholder), `1e308`)
			add(name+"=2^63", with(root, p, placeholder), `9223372036854775808`)
			add(name+"=-0.5", with(root, p, placeholder), `-0.5`)
		case []any:
			if len(v) > 0 {
				item, _ := json.Marshal(v[0])
				add(name+"=10000 items", with(root, p, placeholder), "["+strings.TrimSuffix(strings.Repeat(string(item)+",", 10000), ",")+"]")
			}
		}
	}
	return out
}

// placeholder marks where a raw value goes in a marshalled tree.
const placeholder = "@@badinput-placeholder@@"

// paths lists every path of v (the root first), keys in sorted order, the
// first item only of a list.
func paths(v any, prefix []any) [][]any {
	out := [][]any{append([]any(nil), prefix...)}
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, paths(v[k], append(prefix, k))...)
		}
	case []any:
		if len(v) > 0 {
			out = append(out, paths(v[0], append(prefix, 0))...)
		}
	}
	return out
}

func renderPath(p []any) string {
	if len(p) == 0 {
		return "(body)"
	}
	var b strings.Builder
	for i, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

func get(v any, p []any) any {
	for _, s := range p {
		switch s := s.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	return v
}

// with returns a deep copy of v with the value at p set to x (p's last
// element may name a key that does not exist).
func with(v any, p []any, x any) any {
	if len(p) == 0 {
		return x
	}
	switch c := v.(type) {
	case map[string]any:
		n := make(map[string]any, len(c)+1)
		for k, e := range c {
			n[k] = e
		}
		k := p[0].(string)
		n[k] = with(c[k], p[1:], x)
		return n
	case []any:
		n := append([]any(nil), c...)
		i := p[0].(int)
		n[i] = with(c[i], p[1:], x)
		return n
	}
	return v
}

// without returns a deep copy of v without the key at p (p's last
// element is a key; the ones before may be keys or list indexes).
func without(v any, p []any) any {
	switch c := v.(type) {
	case map[string]any:
		n := make(map[string]any, len(c))
		for k, e := range c {
			n[k] = e
		}
		k := p[0].(string)
		if len(p) == 1 {
			delete(n, k)
		} else {
			n[k] = without(c[k], p[1:])
		}
		return n
	case []any:
		n := append([]any(nil), c...)
		i := p[0].(int)
		n[i] = without(c[i], p[1:])
		return n
	}
	return v
}

// ContentTypes are request content types a JSON route may be sent.
var ContentTypes = []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
	"application/json; charset=latin1", "application/json; charset=utf-16", "application/xml", "*/*", "application/json;;;"}

// Methods are the methods sent to every route besides its own.
var Methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND", "get"}

// Query returns "name=value" with value escaped (url.QueryEscape) and the
// raw form, with only what cannot appear on a request line escaped
// (invalid %-escapes kept).
func Query(name, value string) (escaped, raw string) {
	return url.QueryEscape(name) + "=" + url.QueryEscape(value), RawEscape(name) + "=" + RawEscape(value)
}

// RawEscape escapes only the bytes that cannot appear on a request line
// (controls, space, '#', non-ASCII), leaving '%' alone.
func RawEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Check returns what is wrong with an answer to a bad request, or "": a
// 5xx, or an error answer (4xx) whose body is not JSON {"detail": "…"} or
// {"detail": [{"loc": […], "msg": "…", "type": "…"}, …]} with a JSON
// Content-Type. The answer to a HEAD request has no body to check.
func Check(method string, status int, header http.Header, body []byte) string {
	if status >= 500 {
		return fmt.Sprintf("server error %d", status)
	}
	if status < 400 || method == http.MethodHead {
		return ""
	}
	return CheckDetail(status, header, body)
}

// CheckDetail returns what is wrong with an error answer's body, or "".
func CheckDetail(status int, header http.Header, body []byte) string {
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Sprintf("%d with Content-Type %q", status, ct)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top["detail"] == nil {
		return fmt.Sprintf("%d body is not {\"detail\": …}", status)
	}
	var s string
	if json.Unmarshal(top["detail"], &s) == nil {
		if s == "" {
			return fmt.Sprintf("%d with an empty detail", status)
		}
		return ""
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(top["detail"], &items); err != nil || len(items) == 0 {
		return fmt.Sprintf("%d detail is neither a string nor a non-empty list", status)
	}
	for _, it := range items {
		var loc []any
		var msg, typ string
		if json.Unmarshal(it["loc"], &loc) != nil || loc == nil || json.Unmarshal(it["msg"], &msg) != nil ||
			json.Unmarshal(it["type"], &typ) != nil || msg == "" || typ == "" {
			return fmt.Sprintf("%d detail item is not {loc, msg, type}", status)
		}
	}
	return ""
}

// Tally counts answers by status class, and the failures found.
type Tally struct {
	mu       sync.Mutex
	Sent     int
	Classes  map[int]int // 1..5: the status class; 0: no answer (transport error)
	Statuses map[int]int
	Failures []string
}

// Add counts one answer (status 0 for a request that got no answer).
func (t *Tally) Add(status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Classes == nil {
		t.Classes, t.Statuses = map[int]int{}, map[int]int{}
	}
	t.Sent++
	t.Classes[status/100]++
	t.Statuses[status]++
}

// Fail records a failure.
func (t *Tally) Fail(msg string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Failures = append(t.Failures, msg)
}

// ServerErrors is the number of 5xx answers.
func (t *Tally) ServerErrors() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Classes[5]
}

// String renders the histogram: "1234 requests: 2xx 300, 4xx 934, 5xx 0
// (200 150, 401 40, …)"; "no answer" counts requests that got none.
func (t *Tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests:", t.Sent)
	for c := 1; c <= 5; c++ {
		if c == 1 && t.Classes[1] == 0 {
			continue
		}
		fmt.Fprintf(&b, " %dxx %d,", c, t.Classes[c])
	}
	if n := t.Classes[0]; n > 0 {
		fmt.Fprintf(&b, " no answer %d,", n)
	}
	codes := make([]int, 0, len(t.Statuses))
	for c := range t.Statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	s := strings.TrimSuffix(b.String(), ",") + " ("
	for i, c := range codes {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%d: %d", c, t.Statuses[c])
	}
	return s + ")"
}

// Short cuts s to n bytes for a message.
func Short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Spread returns at most n of xs, evenly spaced and always the same ones
// (the first included), so that a route's share of the corpus keeps a
// bounded cost while still drawing on every kind of bad input.
func Spread[T any](xs []T, n int) []T {
	if n <= 0 || len(xs) <= n {
		return xs
	}
	out := make([]T, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, xs[i*len(xs)/n])
	}
	return out
}
