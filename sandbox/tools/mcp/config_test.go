package mcp

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
)

func TestParseConfigShapes(t *testing.T) {
	wrapped := `{"mcpServers": {
		"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "env": {"A": "1"}, "cwd": "/tmp", "timeout": 12.5},
		"remote": {"url": "https://example.com/mcp", "transport": "sse", "headers": {"X-Team": "core"}, "enabled": false},
		"claude": {"type": "http", "url": "https://example.com/${PATH_PART}/mcp", "auth": {"strategy": "bearer", "token": "${TOKEN}"}},
		"claudeStdio": {"type": "stdio", "command": "npx", "args": []}
	}}`
	bare := `{"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "env": {"A": "1"}, "cwd": "/tmp", "timeout": 12.5},
		"remote": {"url": "https://example.com/mcp", "transport": "sse", "headers": {"X-Team": "core"}, "enabled": false},
		"claude": {"type": "http", "url": "https://example.com/${PATH_PART}/mcp", "auth": {"strategy": "bearer", "token": "${TOKEN}"}},
		"claudeStdio": {"type": "stdio", "command": "npx", "args": []}}`
	for _, raw := range []string{wrapped, bare} {
		got, err := ParseConfig([]byte(raw))
		if err != nil {
			t.Fatalf("ParseConfig: %v", err)
		}
		if len(got) != 4 {
			t.Fatalf("got %d servers, want 4", len(got))
		}
		f := got["fetch"]
		if *f.Command != "uvx" || !reflect.DeepEqual(f.Args, []string{"mcp-server-fetch"}) || f.Env["A"] != "1" ||
			*f.Cwd != "/tmp" || f.CallTimeout() != 12.5 || !f.IsEnabled() || f.TransportKind() != TransportStdio {
			t.Errorf("fetch = %+v", f)
		}
		r := got["remote"]
		if r.TransportKind() != TransportSSE || r.IsEnabled() || r.Headers["X-Team"] != "core" || r.CallTimeout() != DefaultCallTimeout {
			t.Errorf("remote = %+v", r)
		}
		c := got["claude"]
		if c.TransportKind() != TransportStreamableHTTP || c.Auth == nil || c.Auth.Strategy != AuthBearer || *c.Auth.Token != "${TOKEN}" {
			t.Errorf("claude = %+v", c)
		}
		if got["claudeStdio"].TransportKind() != TransportStdio {
			t.Errorf("claudeStdio = %+v", got["claudeStdio"])
		}
	}
	empty, err := ParseConfig([]byte(`{"mcpServers": {}}`))
	if err != nil || empty == nil || len(empty) != 0 {
		t.Errorf("empty config = %v, %v", empty, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, raw string
		want      []string // substrings of the error
	}{
		{"unknown key", `{"mcpServers": {"github": {"command": "x", "comand": "y"}}}`,
			[]string{"mcpServers.github.comand: Extra inputs are not permitted"}},
		{"unknown key bare", `{"github": {"url": "https://h/mcp", "hedaers": {}}}`, []string{"github.hedaers: Extra inputs"}},
		{"both", `{"mcpServers": {"s1": {"command": "x", "url": "https://h/mcp"}}}`,
			[]string{"mcpServers.s1: Exactly one of 'command'", "not both"}},
		{"neither", `{"s2": {"args": ["a"]}}`, []string{"s2: Exactly one of 'command'", "neither"}},
		{"bad json", `{"mcpServers": {`, []string{"Invalid JSON"}},
		{"not an object", `[1]`, []string{"valid dictionary"}},
		{"server not an object", `{"mcpServers": {"s": "npx"}}`, []string{"mcpServers.s"}},
		{"extra top-level key", `{"mcpServers": {}, "other": 1}`, []string{"other: Extra inputs"}},
		{"bad transport", `{"s": {"url": "https://h/mcp", "transport": "websocket"}}`, []string{"s.transport: Input should be"}},
		{"type and transport disagree", `{"s": {"url": "https://h/mcp", "transport": "sse", "type": "http"}}`, []string{"s.type:", "disagree"}},
		{"command with http", `{"s": {"command": "x", "type": "http"}}`, []string{"s.type:", "stdio"}},
		{"url with stdio", `{"s": {"url": "https://h/mcp", "transport": "stdio"}}`, []string{"s.transport:"}},
		{"command with headers", `{"s": {"command": "x", "headers": {"A": "b"}}}`, []string{"s.headers:"}},
		{"url with env", `{"s": {"url": "https://h/mcp", "env": {"A": "b"}}}`, []string{"s.env:"}},
		{"bad url", `{"s": {"url": "ftp://h/mcp"}}`, []string{"s.url:"}},
		{"empty command", `{"s": {"command": ""}}`, []string{"s.command:"}},
		{"bad timeout", `{"s": {"command": "x", "timeout": 0}}`, []string{"s.timeout:"}},
		{"wrong type", `{"s": {"command": "x", "args": "a b"}}`, []string{"s.args: Input should be a valid list"}},
		{"auth without token", `{"s": {"url": "https://h/mcp", "auth": {"strategy": "bearer"}}}`, []string{"s.auth.token: Field required"}},
		{"auth unused field", `{"s": {"url": "https://h/mcp", "auth": {"strategy": "bearer", "token": "t", "username": "u"}}}`,
			[]string{"s.auth.username:"}},
		{"auth bad strategy", `{"s": {"url": "https://h/mcp", "auth": {"strategy": "oauth"}}}`, []string{"s.auth.strategy:"}},
		{"empty name", `{"": {"command": "x"}}`, []string{"must not be empty"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.raw))
			if err == nil {
				t.Fatalf("ParseConfig(%s) = %v, want an error", tc.raw, got)
			}
			var es strictjson.Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not strictjson.Errors: %v", err, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestServerConfigStringHidesValues(t *testing.T) {
	cfg := ServerConfig{Command: ptr("npx"), Env: map[string]string{"TOKEN": "hunter2-secret"},
		Headers: map[string]string{"Authorization": "Bearer hunter2-secret"}}
	if s := cfg.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "TOKEN") {
		t.Errorf("String() = %q", s)
	}
}

func ptr[T any](v T) *T { return &v }

func TestExpand(t *testing.T) {
	secrets := map[string]string{"TOKEN": "tok-123", "USER": "alice", "EMPTY": "", "HOST": "api.example.com", "NESTED": "${TOKEN}"}
	lookup := func(n string) (string, bool) { v, ok := secrets[n]; return v, ok }
	cases := []struct {
		in, want string
		missing  []string
	}{
		{"plain", "plain", nil},
		{"${TOKEN}", "tok-123", nil},
		{"Bearer ${TOKEN}", "Bearer tok-123", nil},
		{"${USER}${TOKEN}", "alicetok-123", nil},
		{"${USER}:${TOKEN}@${HOST}", "alice:tok-123@api.example.com", nil},
		{"${MISSING:-fallback}", "fallback", nil},
		{"${MISSING:-}", "", nil},
		{"${EMPTY:-default}", "", nil}, // found (empty) wins over the default
		{"${MISSING}", "${MISSING}", []string{"MISSING"}},
		{"a ${MISSING} b ${TOKEN}", "a ${MISSING} b tok-123", []string{"MISSING"}},
		{"$TOKEN", "$TOKEN", nil},
		{"$$TOKEN ${TOKEN}", "$$TOKEN tok-123", nil},
		{"${MISSING:-${TOKEN}}", "tok-123", nil},
		{"${MISSING:-x${USER}y}", "xalicey", nil},
		{"${MISSING:-${ALSO_MISSING}}", "${ALSO_MISSING}", []string{"ALSO_MISSING"}},
		{"${MISSING:-${ALSO:-deep}}", "deep", nil},
		{"${TOKEN:-${NEVER}}", "tok-123", nil}, // an unused default is not expanded
		{"${NESTED}", "${TOKEN}", nil},         // values are not expanded again
		{"${1BAD} ${} ${bad-name} ${", "${1BAD} ${} ${bad-name} ${", nil},
		{"${TOKEN", "${TOKEN", nil},
		{"${MISSING:-unterminated", "${MISSING:-unterminated", nil},
		{"${lower_case9}", "${lower_case9}", []string{"lower_case9"}},
	}
	for _, tc := range cases {
		got, missing := Expand(ServerConfig{URL: ptr(tc.in)}, lookup)
		if *got.URL != tc.want || !reflect.DeepEqual(missing, tc.missing) {
			t.Errorf("Expand(%q) = %q, missing %v; want %q, missing %v", tc.in, *got.URL, missing, tc.want, tc.missing)
		}
	}
}

func TestExpandEveryField(t *testing.T) {
	lookup := func(n string) (string, bool) {
		if n == "TOKEN" {
			return "tok-123", true
		}
		return "", false
	}
	cfg := ServerConfig{
		Command: ptr("${BIN:-npx}"), Args: []string{"--token", "${TOKEN}", "$TOKEN"},
		Env: map[string]string{"API_TOKEN": "${TOKEN}", "${TOKEN}": "key not expanded"}, Cwd: ptr("/work/${TOKEN}"),
		URL: ptr("https://h/mcp?key=${TOKEN}"), Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
		Auth:    &Auth{Strategy: AuthBasic, Username: ptr("${TOKEN}"), Password: ptr("${PASSWORD}")},
		Timeout: ptr(3.0),
	}
	orig := ServerConfig{
		Command: ptr("${BIN:-npx}"), Args: []string{"--token", "${TOKEN}", "$TOKEN"},
		Env: map[string]string{"API_TOKEN": "${TOKEN}", "${TOKEN}": "key not expanded"}, Cwd: ptr("/work/${TOKEN}"),
		URL: ptr("https://h/mcp?key=${TOKEN}"), Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
		Auth:    &Auth{Strategy: AuthBasic, Username: ptr("${TOKEN}"), Password: ptr("${PASSWORD}")},
		Timeout: ptr(3.0),
	}
	got, missing := Expand(cfg, lookup)
	want := ServerConfig{
		Command: ptr("npx"), Args: []string{"--token", "tok-123", "$TOKEN"},
		Env: map[string]string{"API_TOKEN": "tok-123", "${TOKEN}": "key not expanded"}, Cwd: ptr("/work/tok-123"),
		URL: ptr("https://h/mcp?key=tok-123"), Headers: map[string]string{"Authorization": "Bearer tok-123"},
		Auth:    &Auth{Strategy: AuthBasic, Username: ptr("tok-123"), Password: ptr("${PASSWORD}")},
		Timeout: ptr(3.0),
	}
	if !reflect.DeepEqual(got, want) {
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		t.Errorf("Expand =\n%s\nwant\n%s", a, b)
	}
	if !reflect.DeepEqual(missing, []string{"PASSWORD"}) {
		t.Errorf("missing = %v", missing)
	}
	if !reflect.DeepEqual(cfg, orig) {
		t.Errorf("Expand modified its input: %+v", cfg)
	}
	*got.Timeout = 9
	got.Args[0] = "changed"
	if *cfg.Timeout != 3 || cfg.Args[0] != "--token" {
		t.Errorf("the expanded copy shares memory with the input")
	}
	if _, missing := Expand(cfg, nil); !reflect.DeepEqual(missing, []string{"PASSWORD", "TOKEN"}) {
		t.Errorf("nil lookup: missing = %v", missing)
	}
}

func TestValidateArguments(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["text","n"],"properties":{
		"text":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"flag":{"type":"boolean"},
		"obj":{"type":"object"},"list":{"type":"array"},"either":{"type":["string","null"]},"any":{}}}`)
	ok := []string{
		`{"text":"a","n":1}`, `{"text":"a","n":2.0,"x":1.5,"flag":true,"obj":{},"list":[1],"either":null,"any":[]}`,
		` {"text" : "a", "n": 1e2, "extra": 1} `,
	}
	for _, a := range ok {
		got, err := ValidateArguments(schema, json.RawMessage(a))
		if err != nil {
			t.Errorf("ValidateArguments(%s): %v", a, err)
		} else if !json.Valid(got) || strings.ContainsAny(string(got), " \n") {
			t.Errorf("ValidateArguments(%s) = %s, want compact JSON", a, got)
		}
	}
	bad := []struct{ args, want string }{
		{`{"n":1}`, "argument 'text': required argument is missing"},
		{`{"text":"a"}`, "argument 'n': required argument is missing"},
		{`{"text":5,"n":1}`, "argument 'text': must be string, got number"},
		{`{"text":"a","n":1.5}`, "argument 'n': must be integer, got a number with a fraction"},
		{`{"text":"a","n":"1"}`, "argument 'n': must be integer, got string"},
		{`{"text":"a","n":1,"flag":"yes"}`, "argument 'flag': must be boolean"},
		{`{"text":"a","n":1,"obj":[]}`, "argument 'obj': must be object, got array"},
		{`{"text":"a","n":1,"list":{}}`, "argument 'list': must be array, got object"},
		{`{"text":"a","n":1,"either":3}`, "argument 'either': must be string or null, got number"},
		{`[1]`, "arguments must be a JSON object, got array"},
		{`{"text":`, "not valid JSON"},
	}
	for _, tc := range bad {
		_, err := ValidateArguments(schema, json.RawMessage(tc.args))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateArguments(%s) = %v, want %q", tc.args, err, tc.want)
		}
	}
	if got, err := ValidateArguments(json.RawMessage(`{"type":"object"}`), nil); err != nil || string(got) != "{}" {
		t.Errorf("empty args = %s, %v; want {}", got, err)
	}
	if _, err := ValidateArguments(schema, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "'text'") || !strings.Contains(err.Error(), "'n'") {
		t.Errorf("every missing argument should be named: %v", err)
	}
}
