package hooks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acs-project/acs/events/strictjson"
	"github.com/acs-project/acs/sandbox/hooks"
)

func TestParseForms(t *testing.T) {
	want := &hooks.Config{
		PreToolUse: []hooks.Matcher{{Matcher: "terminal", Hooks: []hooks.Hook{{Type: "command", Command: "check.sh", Timeout: 10}}}},
		Stop:       []hooks.Matcher{{Matcher: "*", Hooks: []hooks.Hook{{Type: "command", Command: "stop.sh", Timeout: 60, Async: true}}}},
	}
	tests := []struct {
		name string
		json string
	}{
		{"snake_case", `{"pre_tool_use":[{"matcher":"terminal","hooks":[{"type":"command","command":"check.sh","timeout":10}]}],
			"stop":[{"hooks":[{"command":"stop.sh","async":true}]}]}`},
		{"PascalCase", `{"PreToolUse":[{"matcher":"terminal","hooks":[{"command":"check.sh","timeout":10}]}],
			"Stop":[{"matcher":"*","hooks":[{"command":"stop.sh","async":true}]}]}`},
		{"wrapper with description", `{"description":"plugin hooks","hooks":{"PreToolUse":[{"matcher":"terminal","hooks":[{"type":"command","command":"check.sh","timeout":10,"statusMessage":"checking"}]}],
			"stop":[{"hooks":[{"command":"stop.sh","async":true,"once":true}],"extra":1}]}}`},
		{"mixed spellings", `{"pre_tool_use":[{"matcher":"terminal","hooks":[{"command":"check.sh","timeout":10.0}]}],"Stop":[{"matcher":"","hooks":[]},{"hooks":[{"command":"stop.sh","async":true}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hooks.Parse([]byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			w := want
			if tt.name == "mixed spellings" {
				w = &hooks.Config{PreToolUse: want.PreToolUse, Stop: []hooks.Matcher{{Matcher: "", Hooks: []hooks.Hook{}}, want.Stop[0]}}
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got  %+v\nwant %+v", got, w)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		wantPath string
		wantType string
		wantMsg  string
	}{
		{"malformed JSON", `{"pre_tool_use": [`, "[18]", "json_invalid", "JSON decode error"},
		{"not an object", `[]`, "", "dict_type", "valid dictionary"},
		{"unknown event", `{"Notification": []}`, "Notification", "extra_forbidden", "Unknown hook event 'Notification'"},
		{"unknown snake event", `{"on_error": []}`, "on_error", "extra_forbidden", "Unknown hook event"},
		{"unknown event in wrapper", `{"hooks": {"PreToolUse": [], "Bogus": []}}`, "hooks.Bogus", "extra_forbidden", "Unknown hook event"},
		{"extra key beside wrapper", `{"hooks": {}, "version": 2}`, "version", "extra_forbidden", "Extra inputs"},
		{"wrapper not an object", `{"hooks": []}`, "hooks", "dict_type", "valid dictionary"},
		{"duplicate event", `{"PreToolUse": [], "pre_tool_use": []}`, "pre_tool_use", "value_error", "Duplicate hook event"},
		{"event not a list", `{"stop": {}}`, "stop", "list_type", "valid list"},
		{"event null", `{"stop": null}`, "stop", "list_type", "valid list"},
		{"matcher entry not an object", `{"stop": ["x"]}`, "stop[0]", "model_type", "valid dictionary"},
		{"matcher not a string", `{"stop": [{"matcher": 3}]}`, "stop[0].matcher", "string_type", "valid string"},
		{"bad /regex/", `{"pre_tool_use": [{"matcher": "/Bash(/", "hooks": []}]}`, "pre_tool_use[0].matcher", "value_error", "Invalid matcher regular expression"},
		{"bad auto regex", `{"PreToolUse": [{"matcher": "Edit|[", "hooks": []}]}`, "PreToolUse[0].matcher", "value_error", "Invalid matcher regular expression"},
		{"hooks not a list", `{"stop": [{"hooks": {}}]}`, "stop[0].hooks", "list_type", "valid list"},
		{"hook not an object", `{"stop": [{"hooks": ["echo"]}]}`, "stop[0].hooks[0]", "model_type", "valid dictionary"},
		{"empty command", `{"stop": [{"hooks": [{"command": "  "}]}]}`, "stop[0].hooks[0].command", "value_error", "non-empty command"},
		{"missing command", `{"stop": [{"hooks": [{"type": "command"}]}]}`, "stop[0].hooks[0].command", "value_error", "non-empty command"},
		{"timeout zero", `{"stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}`, "stop[0].hooks[0].timeout", "greater_than_equal", "greater than or equal to 1"},
		{"timeout too large", `{"hooks": {"Stop": [{"hooks": [{"command": "x", "timeout": 3601}]}]}}`, "hooks.Stop[0].hooks[0].timeout", "less_than_equal", "less than or equal to 3600"},
		{"timeout fractional", `{"stop": [{"hooks": [{"command": "x", "timeout": 1.5}]}]}`, "stop[0].hooks[0].timeout", "int_from_float", "fractional"},
		{"timeout string", `{"stop": [{"hooks": [{"command": "x", "timeout": "60"}]}]}`, "stop[0].hooks[0].timeout", "int_type", "valid integer"},
		{"unknown hook type", `{"stop": [{"hooks": [{"type": "shell", "command": "x"}]}]}`, "stop[0].hooks[0].type", "enum", "'command', 'prompt' or 'agent'"},
		{"async not bool", `{"stop": [{"hooks": [{"command": "x", "async": "yes"}]}]}`, "stop[0].hooks[0].async", "bool_type", "valid boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := hooks.Parse([]byte(tt.json))
			if cfg != nil {
				t.Errorf("partial config returned: %+v", cfg)
			}
			var es strictjson.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("err = %v (%T), want strictjson.Errors", err, err)
			}
			e := es[0]
			if e.Path() != tt.wantPath || e.Type != tt.wantType || !strings.Contains(e.Msg, tt.wantMsg) {
				t.Errorf("got %s [%s] %q; want %s [%s] containing %q", e.Path(), e.Type, e.Msg, tt.wantPath, tt.wantType, tt.wantMsg)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := hooks.Parse([]byte(`{"Foo": [], "stop": [{"hooks": [{"command": ""}, {"command": "x", "timeout": -1}]}]}`))
	var es strictjson.Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("err = %v", err)
	}
}

func TestEncode(t *testing.T) {
	cfg := &hooks.Config{
		PostToolUse: []hooks.Matcher{{Matcher: "Edit|Write", Hooks: []hooks.Hook{{Command: "fmt && lint <x>", Timeout: 5}}}},
		SessionEnd:  []hooks.Matcher{{Matcher: "*"}},
	}
	want := `{"post_tool_use":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"fmt && lint <x>","timeout":5,"async":false}]}],` +
		`"session_end":[{"matcher":"*","hooks":[]}]}`
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cfg); err != nil || strings.TrimSuffix(buf.String(), "\n") != want {
		t.Errorf("json.Encoder: %s %v\nwant %s", buf.String(), err, want)
	}
	b, err := strictjson.Marshal(cfg)
	if err != nil || string(b) != want {
		t.Errorf("strictjson: %s %v", b, err)
	}
	// json.Marshal re-escapes HTML characters; the value is the same.
	b, err = json.Marshal(cfg)
	if err != nil || string(b) != strings.NewReplacer("&", `\u0026`, "<", `\u003c`, ">", `\u003e`).Replace(want) {
		t.Errorf("json.Marshal: %s %v", b, err)
	}
	back, err := hooks.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if b2, _ := strictjson.Marshal(back); string(b2) != want {
		t.Errorf("round trip: %s", b2)
	}
	if b, _ := json.Marshal(&hooks.Config{}); string(b) != `{}` {
		t.Errorf("empty: %s", b)
	}
}

func TestResponseAndRequest(t *testing.T) {
	for _, tt := range []struct {
		resp hooks.Response
		want string
	}{
		{hooks.Response{}, `{"hook_config":null}`},
		{hooks.Response{HookConfig: &hooks.Config{Stop: []hooks.Matcher{{Matcher: "*", Hooks: []hooks.Hook{{Type: "command", Command: "x", Timeout: 60}}}}}},
			`{"hook_config":{"stop":[{"matcher":"*","hooks":[{"type":"command","command":"x","timeout":60,"async":false}]}]}}`},
	} {
		for name, enc := range map[string]func(any) ([]byte, error){"encoding/json": json.Marshal, "strictjson": strictjson.Marshal} {
			b, err := enc(tt.resp)
			if err != nil || string(b) != tt.want {
				t.Errorf("%s: %s %v, want %s", name, b, err, tt.want)
			}
		}
	}

	var req hooks.Request
	if err := strictjson.Unmarshal([]byte(`{"project_dir":"/w"}`), &req, "body"); err != nil || req.ProjectDir != "/w" {
		t.Errorf("req = %+v, %v", req, err)
	}
	for body, path := range map[string]string{`{}`: "body.project_dir", `{"project_dir":"/w","x":1}`: "body.x", `{"project_dir":null}`: "body.project_dir"} {
		err := strictjson.Unmarshal([]byte(body), &req, "body")
		var es strictjson.Errors
		if !errors.As(err, &es) || es[0].Path() != path {
			t.Errorf("%s: %v", body, err)
		}
	}

	// Config decodes inside strict structs and with encoding/json.
	var holder struct {
		Cfg *hooks.Config `json:"cfg"`
	}
	if err := strictjson.Unmarshal([]byte(`{"cfg":{"PreToolUse":[{"hooks":[{"command":"x"}]}]}}`), &holder); err != nil || len(holder.Cfg.PreToolUse) != 1 {
		t.Errorf("strict decode: %+v %v", holder.Cfg, err)
	}
	err := strictjson.Unmarshal([]byte(`{"cfg":{"stop":[{"hooks":[{"command":""}]}]}}`), &holder, "body")
	var es strictjson.Errors
	if !errors.As(err, &es) || es[0].Path() != "body.cfg.stop[0].hooks[0].command" {
		t.Errorf("strict decode error: %v", err)
	}
	var c hooks.Config
	if err := json.Unmarshal([]byte(`{"hooks":{"Stop":[{"hooks":[{"command":"y"}]}]}}`), &c); err != nil || c.Stop[0].Hooks[0].Command != "y" {
		t.Errorf("encoding/json decode: %+v %v", c, err)
	}
}

func TestMerge(t *testing.T) {
	a := &hooks.Config{PreToolUse: []hooks.Matcher{{Matcher: "a", Hooks: []hooks.Hook{{Command: "1"}}}}}
	b := &hooks.Config{PreToolUse: []hooks.Matcher{{Matcher: "b"}}, Stop: []hooks.Matcher{{Matcher: "*"}}}
	got := hooks.Merge(nil, a, nil, b)
	if len(got.PreToolUse) != 2 || got.PreToolUse[0].Matcher != "a" || got.PreToolUse[1].Matcher != "b" || len(got.Stop) != 1 {
		t.Errorf("merge: %+v", got)
	}
	got.PreToolUse[0].Hooks[0].Command = "changed"
	if a.PreToolUse[0].Hooks[0].Command != "1" {
		t.Error("merge shares hook slices with its input")
	}
	if hooks.Merge() != nil || hooks.Merge(nil, &hooks.Config{}) != nil {
		t.Error("empty merge should be nil")
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	cfg, err := hooks.LoadFile(dir)
	if cfg != nil || err != nil {
		t.Fatalf("missing file: %v %v", cfg, err)
	}
	path := filepath.Join(dir, ".openhands", "hooks.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"PreToolUse":[{"matcher":"terminal","hooks":[{"command":"x"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = hooks.LoadFile(dir)
	if err != nil || len(cfg.PreToolUse) != 1 || cfg.PreToolUse[0].Hooks[0].Timeout != 60 {
		t.Fatalf("valid: %+v %v", cfg, err)
	}
	if err := os.WriteFile(path, []byte(`{"PreToolUse":[{"hooks":[{"command":"x","timeout":99999}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = hooks.LoadFile(dir)
	var es strictjson.Errors
	if cfg != nil || !errors.As(err, &es) || !strings.Contains(err.Error(), path) || es[0].Path() != "PreToolUse[0].hooks[0].timeout" {
		t.Fatalf("invalid: %v %v", cfg, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := hooks.LoadFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

func TestMatcherMatches(t *testing.T) {
	tests := []struct {
		matcher string
		tool    string
		want    bool
	}{
		{"*", "anything", true},
		{"", "anything", true},
		{"terminal", "terminal", true},
		{"terminal", "terminal2", false},
		{"terminal", "Terminal", false},
		{"Edit|Write", "Write", true},
		{"Edit|Write", "Writer", false},
		{"file_.*", "file_editor", true},
		{"/term.*/", "terminal", true},
		{"/term/", "terminal", false},
		{"mcp__.*__read", "mcp__fs__read", true},
		{"/(/", "(", false},
	}
	for _, tt := range tests {
		if got := (hooks.Matcher{Matcher: tt.matcher}).Matches(tt.tool); got != tt.want {
			t.Errorf("%q.Matches(%q) = %v", tt.matcher, tt.tool, got)
		}
	}
}

func TestLoadPathLocatesSyntaxErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hooks.json")
	if err := os.WriteFile(path, []byte("{\n  \"stop\": [\n    {\"hooks\": [}\n  ]\n}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := hooks.LoadPath(path)
	var es strictjson.Errors
	if cfg != nil || err == nil || !errors.As(err, &es) || es[0].Type != "json_invalid" {
		t.Fatalf("want a json_invalid error, got %v %v", cfg, err)
	}
	if want := "hooks: " + path + ": line 3, column 16: JSON decode error: "; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want prefix %q", err, want)
	}
}
