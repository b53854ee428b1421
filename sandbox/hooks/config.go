// Package hooks loads and runs OpenHands- and Claude-Code-compatible hooks:
// shell commands run at points of an agent's life (before and after a tool
// call, when the user submits a prompt, when a session starts or ends, when
// the agent stops) that can block the operation or add context.
//
// A Config is read from <project>/.openhands/hooks.json (LoadFile) or any
// JSON document (Parse) and run with a Runner. Command hooks follow the
// reference protocol: the event is written as JSON to the command's stdin;
// exit code 0 succeeds, 2 blocks, anything else is a non-blocking failure;
// a JSON object on stdout may also block ({"decision":"deny"} or
// {"continue":false}) and carry a reason and additional context.
package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/acs-project/acs/events/strictjson"
)

// EventType names a hook event.
type EventType string

// The hook events.
const (
	PreToolUse       EventType = "pre_tool_use"
	PostToolUse      EventType = "post_tool_use"
	UserPromptSubmit EventType = "user_prompt_submit"
	SessionStart     EventType = "session_start"
	SessionEnd       EventType = "session_end"
	Stop             EventType = "stop"
)

// Events lists every event in the order Config declares them.
func Events() []EventType {
	return []EventType{PreToolUse, PostToolUse, UserPromptSubmit, SessionStart, SessionEnd, Stop}
}

// Name is the event's PascalCase name ("PreToolUse"), as the reference
// sends it to hooks in event_type and OPENHANDS_EVENT_TYPE, so existing hook
// scripts keep working.
func (e EventType) Name() string {
	for k, v := range pascal {
		if v == e {
			return k
		}
	}
	return string(e)
}

// MarshalJSON writes the PascalCase name.
func (e EventType) MarshalJSON() ([]byte, error) { return json.Marshal(e.Name()) }

// UnmarshalJSON accepts the PascalCase and the snake_case name.
func (e *EventType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if v, ok := pascal[s]; ok {
		*e = v
	} else {
		*e = EventType(s)
	}
	return nil
}

// pascal maps the Claude Code (PascalCase) event names to EventType.
var pascal = map[string]EventType{
	"PreToolUse":       PreToolUse,
	"PostToolUse":      PostToolUse,
	"UserPromptSubmit": UserPromptSubmit,
	"SessionStart":     SessionStart,
	"SessionEnd":       SessionEnd,
	"Stop":             Stop,
}

// Hook types. Only command hooks run; the others parse and are reported as
// unsupported when run.
const (
	TypeCommand = "command"
	TypePrompt  = "prompt"
	TypeAgent   = "agent"
)

// Timeout bounds, in seconds.
const (
	DefaultTimeout = 60
	MinTimeout     = 1
	MaxTimeout     = 3600
)

// Hook is one hook definition.
type Hook struct {
	// Type is "command" (the default), "prompt" or "agent".
	Type string `json:"type"`
	// Command is the shell command of a command hook, run with /bin/sh -c.
	Command string `json:"command"`
	// Timeout is in seconds (1..3600, default 60). Run treats a value <= 0
	// as 60 and caps larger values at 3600.
	Timeout int `json:"timeout"`
	// Async hooks are started and not waited for.
	Async bool `json:"async"`
}

// Matcher selects the hooks of an event by tool name.
type Matcher struct {
	// Matcher is "*" or "" (everything), an exact tool name, a regular
	// expression (when it contains one of |.*+?[]()^$\) or /regex/. Regular
	// expressions (RE2 syntax) must match the whole tool name.
	Matcher string `json:"matcher"`
	Hooks   []Hook `json:"hooks"`
}

// Config is the hooks of every event. The zero value has no hooks.
//
// Config encodes (with encoding/json or strictjson) in the snake_case shape,
// omitting events without matchers, with every hook's four keys present
// ("type" defaulting to "command") and a nil Hooks list written as [].
// Its own output never escapes <, > and & (json.Marshal re-escapes them as
// \u003c etc., which decodes to the same value; strictjson and an Encoder
// with SetEscapeHTML(false) keep them). It decodes (encoding/json or
// strictjson) with Parse's rules.
type Config struct {
	PreToolUse       []Matcher `json:"pre_tool_use,omitempty"`
	PostToolUse      []Matcher `json:"post_tool_use,omitempty"`
	UserPromptSubmit []Matcher `json:"user_prompt_submit,omitempty"`
	SessionStart     []Matcher `json:"session_start,omitempty"`
	SessionEnd       []Matcher `json:"session_end,omitempty"`
	Stop             []Matcher `json:"stop,omitempty"`
}

// For returns the matchers of an event (nil for an unknown event or a nil
// Config).
func (c *Config) For(e EventType) []Matcher {
	if c == nil {
		return nil
	}
	if p := c.slot(e); p != nil {
		return *p
	}
	return nil
}

func (c *Config) slot(e EventType) *[]Matcher {
	switch e {
	case PreToolUse:
		return &c.PreToolUse
	case PostToolUse:
		return &c.PostToolUse
	case UserPromptSubmit:
		return &c.UserPromptSubmit
	case SessionStart:
		return &c.SessionStart
	case SessionEnd:
		return &c.SessionEnd
	case Stop:
		return &c.Stop
	}
	return nil
}

// Empty reports whether c has no matchers at all (true for nil).
func (c *Config) Empty() bool {
	for _, e := range Events() {
		if len(c.For(e)) > 0 {
			return false
		}
	}
	return true
}

// Merge concatenates the matchers of cfgs, event by event, in argument order.
// Nil configs are skipped. It returns nil when the result has no matchers.
// The result shares no slices with the inputs.
func Merge(cfgs ...*Config) *Config {
	out := &Config{}
	for _, c := range cfgs {
		if c == nil {
			continue
		}
		for _, e := range Events() {
			for _, m := range c.For(e) {
				m.Hooks = append([]Hook(nil), m.Hooks...)
				*out.slot(e) = append(*out.slot(e), m)
			}
		}
	}
	if out.Empty() {
		return nil
	}
	return out
}

// MaxFileSize bounds hooks.json (1 MiB).
const MaxFileSize = 1 << 20

// LoadFile reads <projectDir>/.openhands/hooks.json. A missing file gives
// (nil, nil). Otherwise it returns the parsed config (possibly empty) or an
// error naming the file: unreadable, not a regular file, larger than
// MaxFileSize, or invalid (wrapping Parse's strictjson.Errors; use errors.As
// to get them). Malformed JSON is reported by line and column.
func LoadFile(projectDir string) (*Config, error) {
	return LoadPath(filepath.Join(projectDir, ".openhands", "hooks.json"))
}

// LoadPath reads the hooks file at path, as LoadFile does (for plugins'
// hooks files).
func LoadPath(path string) (*Config, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("hooks: %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("hooks: read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("hooks: %s is larger than %d bytes", path, MaxFileSize)
	}
	cfg, err := Parse(data)
	if err != nil {
		var es strictjson.Errors
		if errors.As(err, &es) && len(es) == 1 && es[0].Type == "json_invalid" && len(es[0].Loc) == 1 {
			if off, ok := es[0].Loc[0].(int); ok {
				line, col := position(data, off)
				return nil, &fileError{msg: fmt.Sprintf("hooks: %s: line %d, column %d: %s", path, line, col, es[0].Msg), err: err}
			}
		}
		return nil, fmt.Errorf("hooks: %s: %w", path, err)
	}
	return cfg, nil
}

// fileError is a problem of a hooks file with its own wording, wrapping
// Parse's error.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }

func (e *fileError) Unwrap() error { return e.err }

// position is the 1-based line and column (in bytes) of offset in data.
func position(data []byte, offset int) (line, col int) {
	offset = min(max(offset, 0), len(data))
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte("\n"))
	return line, offset - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// Parse decodes a hook configuration. It accepts
//
//   - snake_case event keys: {"pre_tool_use": [...], ...};
//   - Claude Code PascalCase event keys: {"PreToolUse": [...], ...};
//   - either inside a {"hooks": {...}} wrapper (a sibling "description" key
//     is allowed and ignored, as in Claude Code plugin files).
//
// Each event holds a list of {"matcher": string (default "*"), "hooks":
// [...]} and each hook is {"type": "command"|"prompt"|"agent" (default
// "command"), "command": string, "timeout": integer seconds 1..3600 (default
// 60), "async": bool}. Other keys inside matchers and hooks (such as Claude
// Code's "statusMessage") are ignored, as the reference does.
//
// On failure it returns strictjson.Errors, each located by its JSON path
// (for example hooks.PreToolUse[0].hooks[1].command): malformed JSON
// (json_invalid, located at the byte offset), a top level that is not an
// object, unknown event names or top-level keys (extra_forbidden), an event
// given twice (in both spellings), values of the wrong type, unknown hook
// types (enum), matchers that are not valid regular expressions, command
// hooks with an empty command, and timeouts out of range. It never returns
// a partial config.
func Parse(data []byte) (*Config, error) {
	root, err := strictjson.Parse(data)
	if err != nil {
		var se *strictjson.SyntaxError
		if errors.As(err, &se) {
			return nil, strictjson.Errors{{Loc: []any{se.Offset}, Msg: "JSON decode error: " + se.Msg, Type: "json_invalid"}}
		}
		return nil, strictjson.Errors{{Msg: "JSON decode error", Type: "json_invalid"}}
	}
	return parseValue(root)
}

func parseValue(root strictjson.Value) (*Config, error) {
	p := &parser{}
	cfg := &Config{}
	if root.Kind != strictjson.Object {
		p.add(nil, "dict_type", "Input should be a valid dictionary")
		return nil, p.errs
	}
	events := root
	var loc []any
	if hv, ok := root.Get("hooks"); ok {
		loc = []any{"hooks"}
		for _, m := range root.Members {
			if m.Key != "hooks" && m.Key != "description" {
				p.add([]any{m.Key}, "extra_forbidden", "Extra inputs are not permitted")
			}
		}
		if hv.Kind != strictjson.Object {
			p.add(loc, "dict_type", "Input should be a valid dictionary")
			return nil, p.errs
		}
		events = hv
	}
	seen := map[EventType]string{}
	for _, m := range events.Members {
		eloc := sub(loc, m.Key)
		e, ok := pascal[m.Key]
		if !ok && validEvent(EventType(m.Key)) {
			e, ok = EventType(m.Key), true
		}
		if !ok {
			p.add(eloc, "extra_forbidden", "Unknown hook event '"+m.Key+"'; expected one of "+eventList())
			continue
		}
		if prev, dup := seen[e]; dup {
			p.add(eloc, "value_error", fmt.Sprintf("Duplicate hook event: '%s' and '%s' are the same event", prev, m.Key))
			continue
		}
		seen[e] = m.Key
		*cfg.slot(e) = p.matchers(m.Value, eloc)
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return cfg, nil
}

func validEvent(e EventType) bool {
	for _, x := range Events() {
		if x == e {
			return true
		}
	}
	return false
}

func eventList() string {
	var names []string
	for _, e := range Events() {
		names = append(names, string(e))
	}
	var ps []string
	for k := range pascal {
		ps = append(ps, k)
	}
	sort.Strings(ps)
	return strings.Join(names, ", ") + " (or " + strings.Join(ps, ", ") + ")"
}

// maxErrors bounds how many problems Parse reports.
const maxErrors = 50

type parser struct{ errs strictjson.Errors }

func (p *parser) add(loc []any, typ, msg string) {
	if len(p.errs) < maxErrors {
		p.errs = append(p.errs, strictjson.FieldError(loc, typ, msg))
	}
}

func (p *parser) addAll(err error) {
	var es strictjson.Errors
	if errors.As(err, &es) {
		for _, e := range es {
			if len(p.errs) < maxErrors {
				p.errs = append(p.errs, e)
			}
		}
		return
	}
	p.add(nil, "value_error", err.Error())
}

func sub(loc []any, k any) []any { return append(loc[:len(loc):len(loc)], k) }

// only returns a copy of an object value restricted to the given keys, so
// unknown keys are ignored rather than rejected.
func only(v strictjson.Value, keys ...string) strictjson.Value {
	if v.Kind != strictjson.Object {
		return v
	}
	out := v
	out.Members = nil
	for _, m := range v.Members {
		for _, k := range keys {
			if m.Key == k {
				out.Members = append(out.Members, m)
				break
			}
		}
	}
	return out
}

func (p *parser) matchers(v strictjson.Value, loc []any) []Matcher {
	if v.Kind != strictjson.Array {
		p.add(loc, "list_type", "Input should be a valid list")
		return nil
	}
	out := make([]Matcher, 0, len(v.Elems))
	for i, mv := range v.Elems {
		mloc := sub(loc, i)
		if mv.Kind != strictjson.Object {
			p.add(mloc, "model_type", "Input should be a valid dictionary or object to extract fields from")
			continue
		}
		var w struct {
			Matcher string `json:"matcher" acs:"default=*"`
		}
		if err := strictjson.DecodeValue(only(mv, "matcher"), &w, mloc...); err != nil {
			p.addAll(err)
			continue
		}
		if err := checkMatcher(w.Matcher); err != nil {
			p.add(sub(mloc, "matcher"), "value_error", "Invalid matcher regular expression: "+err.Error())
		}
		m := Matcher{Matcher: w.Matcher, Hooks: []Hook{}}
		if hv, ok := mv.Get("hooks"); ok {
			m.Hooks = p.hooks(hv, sub(mloc, "hooks"))
		}
		out = append(out, m)
	}
	return out
}

// hookType is the strict enum of hook types.
type hookType string

func (hookType) EnumValues() []string { return []string{TypeCommand, TypePrompt, TypeAgent} }

type hookWire struct {
	Type    hookType `json:"type" acs:"default=command"`
	Command string   `json:"command"`
	Timeout int      `json:"timeout" acs:"default=60,ge=1,le=3600"`
	Async   bool     `json:"async"`
}

func (p *parser) hooks(v strictjson.Value, loc []any) []Hook {
	if v.Kind != strictjson.Array {
		p.add(loc, "list_type", "Input should be a valid list")
		return nil
	}
	out := make([]Hook, 0, len(v.Elems))
	for i, hv := range v.Elems {
		hloc := sub(loc, i)
		var w hookWire
		if err := strictjson.DecodeValue(only(hv, "type", "command", "timeout", "async"), &w, hloc...); err != nil {
			p.addAll(err)
			continue
		}
		if w.Type == TypeCommand && strings.TrimSpace(w.Command) == "" {
			p.add(sub(hloc, "command"), "value_error", "A command hook needs a non-empty command")
			continue
		}
		out = append(out, Hook{Type: string(w.Type), Command: w.Command, Timeout: w.Timeout, Async: w.Async})
	}
	return out
}

// regexMeta are the characters that make a matcher a regular expression.
const regexMeta = `|.*+?[]()^$\`

var reCache sync.Map // pattern -> *regexp.Regexp

// compileMatcher returns the anchored regular expression of a matcher, or nil
// for "*", "" and exact names.
func compileMatcher(m string) (*regexp.Regexp, error) {
	if m == "*" || m == "" {
		return nil, nil
	}
	var pat string
	switch {
	case len(m) > 2 && strings.HasPrefix(m, "/") && strings.HasSuffix(m, "/"):
		pat = m[1 : len(m)-1]
	case strings.ContainsAny(m, regexMeta):
		pat = m
	default:
		return nil, nil
	}
	if re, ok := reCache.Load(pat); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(`^(?:` + pat + `)$`)
	if err != nil {
		return nil, err
	}
	reCache.Store(pat, re)
	return re, nil
}

func checkMatcher(m string) error {
	_, err := compileMatcher(m)
	return err
}

// Matches reports whether the matcher selects toolName. A matcher whose
// regular expression does not compile (possible only in a Config built
// without Parse) matches nothing.
func (m Matcher) Matches(toolName string) bool {
	if m.Matcher == "*" || m.Matcher == "" {
		return true
	}
	re, err := compileMatcher(m.Matcher)
	if err != nil {
		return false
	}
	if re == nil {
		return m.Matcher == toolName
	}
	return re.MatchString(toolName)
}

// wire types for encoding: every key always present.
type hookOut struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
	Async   bool   `json:"async"`
}

type matcherOut struct {
	Matcher string    `json:"matcher"`
	Hooks   []hookOut `json:"hooks"`
}

func (c Config) encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	for _, e := range Events() {
		ms := c.For(e)
		if len(ms) == 0 {
			continue
		}
		out := make([]matcherOut, len(ms))
		for i, m := range ms {
			out[i] = matcherOut{Matcher: m.Matcher, Hooks: make([]hookOut, len(m.Hooks))}
			for j, h := range m.Hooks {
				typ := h.Type
				if typ == "" {
					typ = TypeCommand
				}
				out[i].Hooks[j] = hookOut{Type: typ, Command: h.Command, Timeout: h.Timeout, Async: h.Async}
			}
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(`"` + string(e) + `":`)
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return nil, err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalJSON encodes c in the snake_case shape, omitting empty events.
func (c Config) MarshalJSON() ([]byte, error) { return c.encode() }

// AppendStrictJSON implements strictjson.ValueEncoder with the same bytes as
// MarshalJSON.
func (c Config) AppendStrictJSON(b []byte) ([]byte, error) {
	enc, err := c.encode()
	if err != nil {
		return b, err
	}
	return append(b, enc...), nil
}

// UnmarshalJSON decodes with Parse.
func (c *Config) UnmarshalJSON(data []byte) error {
	cfg, err := Parse(data)
	if err != nil {
		return err
	}
	*c = *cfg
	return nil
}

// DecodeStrict implements strictjson.ValueDecoder with Parse's rules; it
// reports the first problem (locations are relative to the value), noting
// how many more there are.
func (c *Config) DecodeStrict(v strictjson.Value) *strictjson.Error {
	cfg, err := parseValue(v)
	if err != nil {
		var es strictjson.Errors
		if errors.As(err, &es) && len(es) > 0 {
			e := es[0]
			if len(es) > 1 {
				e.Msg += fmt.Sprintf(" (and %d more problems)", len(es)-1)
			}
			return &e
		}
		return &strictjson.Error{Msg: err.Error(), Type: "value_error"}
	}
	*c = *cfg
	return nil
}
