package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/events/strictjson"
)

var update = flag.Bool("update", false, "rewrite golden files")

// checkGolden compares the canonical encoding with testdata/<dir>/<name>.json
// (stored indented) and checks that decoding the golden file and encoding it
// again gives the same bytes.
func checkGolden(t *testing.T, dir, name string, encoded []byte, decode func([]byte) (any, error)) {
	t.Helper()
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, encoded, "", "  "); err != nil {
		t.Fatalf("encoding is not JSON: %v\n%s", err, encoded)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", dir, name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file (run go test ./events -update): %v", err)
	}
	if !bytes.Equal(golden, pretty.Bytes()) {
		t.Fatalf("%s differs from the encoding:\n got %s\nwant %s", path, pretty.Bytes(), golden)
	}
	v, err := decode(golden)
	if err != nil {
		t.Fatalf("golden does not decode: %v", err)
	}
	again, err := strictjson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, encoded) {
		t.Fatalf("round trip is not byte-stable:\n first %s\nsecond %s", encoded, again)
	}
}

func TestEventGoldens(t *testing.T) {
	samples := sampleEvents()
	for _, kind := range events.Kinds() {
		t.Run(kind, func(t *testing.T) {
			ev, ok := samples[kind]
			if !ok {
				t.Fatalf("no sample for event kind %s", kind)
			}
			if ev.Kind() != kind {
				t.Fatalf("sample kind %s", ev.Kind())
			}
			enc := events.MustEncode(ev)
			if !strings.HasPrefix(string(enc), `{"kind":"`+kind+`","id":`) {
				t.Fatalf("kind and id must come first: %s", enc)
			}
			checkGolden(t, "events", kind, enc, func(b []byte) (any, error) { return events.Decode(b) })
			back, err := events.Decode(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, ev) {
				t.Fatalf("decoded value differs:\n got %#v\nwant %#v", back, ev)
			}
		})
	}
}

func TestActionGoldens(t *testing.T) {
	samples := sampleActions()
	for _, kind := range events.ActionKinds() {
		t.Run(kind, func(t *testing.T) {
			a, ok := samples[kind]
			if !ok {
				t.Fatalf("no sample for action kind %s", kind)
			}
			enc := strictjson.MustMarshal(a)
			checkGolden(t, "actions", kind, enc, func(b []byte) (any, error) { return events.DecodeActionJSON(b) })
		})
	}
}

func TestObservationGoldens(t *testing.T) {
	samples := sampleObservations()
	for _, kind := range events.ObservationKinds() {
		t.Run(kind, func(t *testing.T) {
			o, ok := samples[kind]
			if !ok {
				t.Fatalf("no sample for observation kind %s", kind)
			}
			enc := strictjson.MustMarshal(o)
			checkGolden(t, "observations", kind, enc, func(b []byte) (any, error) { return events.DecodeObservation(b) })
		})
	}
}

func TestToolDefinitionGoldens(t *testing.T) {
	samples := sampleTools()
	if len(samples) != 28 {
		t.Fatalf("the spec names 28 tool definition kinds, have %d", len(samples))
	}
	for kind, def := range samples {
		t.Run(kind, func(t *testing.T) {
			enc := strictjson.MustMarshal(def)
			checkGolden(t, "tools", kind, enc, func(b []byte) (any, error) {
				var d events.ToolDefinition
				return d, strictjson.Unmarshal(b, &d)
			})
		})
	}
}

func TestSpecKindsAreComplete(t *testing.T) {
	want := map[string][]string{
		"events": {"Condensation", "CondensationRequest", "CondensationSummaryEvent", "ConversationErrorEvent",
			"ConversationStateUpdateEvent", "LLMCompletionLogEvent", "ActionEvent", "MessageEvent", "AgentErrorEvent",
			"ObservationEvent", "UserRejectObservation", "SystemPromptEvent", "TokenEvent", "PauseEvent"},
		"actions": {"MCPToolAction", "FinishAction", "ThinkAction", "BrowserAction", "BrowserClickAction", "BrowserCloseTabAction",
			"BrowserGetContentAction", "BrowserGetStateAction", "BrowserGetStorageAction", "BrowserGoBackAction",
			"BrowserListTabsAction", "BrowserNavigateAction", "BrowserScrollAction", "BrowserSetStorageAction",
			"BrowserStartRecordingAction", "BrowserStopRecordingAction", "BrowserSwitchTabAction", "BrowserTypeAction",
			"FileEditorAction", "EditAction", "ListDirectoryAction", "ReadFileAction", "WriteFileAction", "GlobAction",
			"GrepAction", "PlanningFileEditorAction", "TaskTrackerAction", "TerminalAction"},
		"observations": {"MCPToolObservation", "FinishObservation", "ThinkObservation", "BrowserObservation",
			"FileEditorObservation", "EditObservation", "ListDirectoryObservation", "ReadFileObservation",
			"WriteFileObservation", "GlobObservation", "GrepObservation", "PlanningFileEditorObservation",
			"TaskTrackerObservation", "TerminalObservation"},
	}
	have := map[string][]string{"events": events.Kinds(), "actions": events.ActionKinds(), "observations": events.ObservationKinds()}
	for group, kinds := range want {
		sort.Strings(kinds)
		if !reflect.DeepEqual(kinds, have[group]) {
			t.Errorf("%s: have %v, spec names %v", group, have[group], kinds)
		}
	}
}

func TestDefaultSources(t *testing.T) {
	cases := map[string]events.Source{
		"Condensation": "environment", "CondensationRequest": "environment", "CondensationSummaryEvent": "environment",
		"ConversationStateUpdateEvent": "environment", "LLMCompletionLogEvent": "environment", "ActionEvent": "agent",
		"AgentErrorEvent": "agent", "ObservationEvent": "environment", "UserRejectObservation": "environment",
		"SystemPromptEvent": "agent", "PauseEvent": "user",
		"ConversationErrorEvent": "", "MessageEvent": "", "TokenEvent": "",
	}
	samples := sampleEvents()
	for kind, want := range cases {
		var m map[string]any
		if err := json.Unmarshal(events.MustEncode(samples[kind]), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "source")
		b, _ := json.Marshal(m)
		ev, err := events.Decode(b)
		if want == "" {
			var es strictjson.Errors
			if !errors.As(err, &es) || es[0].Path() != "source" || es[0].Type != "missing" {
				t.Errorf("%s without source: want a missing-source error, got %v", kind, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", kind, err)
			continue
		}
		if ev.EventBase().Source != want {
			t.Errorf("%s default source %s, want %s", kind, ev.EventBase().Source, want)
		}
	}
}

func TestFieldDefaults(t *testing.T) {
	ev, err := events.Decode([]byte(`{"kind":"UserRejectObservation","id":"x","timestamp":"2026-01-01T00:00:00Z","tool_name":"t","tool_call_id":"c","action_id":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	r := ev.(*events.UserRejectObservation)
	if r.RejectionReason != "User rejected the action" || r.RejectionSource != "user" || r.Source != "environment" {
		t.Fatalf("defaults: %+v", r)
	}
	ev, err = events.Decode([]byte(`{"kind":"LLMCompletionLogEvent","id":"x","timestamp":"2026-01-01T00:00:00Z","filename":"f","log_data":"{}"}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := ev.(*events.LLMCompletionLogEvent); l.ModelName != "unknown" || l.UsageID != "default" {
		t.Fatalf("defaults: %+v", l)
	}
	ev, err = events.Decode([]byte(`{"kind":"ActionEvent","id":"x","timestamp":"2026-01-01T00:00:00Z","thought":[{"text":"t"}],"tool_name":"t","tool_call_id":"c","tool_call":{"id":"c","name":"t","arguments":"{}","origin":"completion"},"llm_response_id":"r"}`))
	if err != nil {
		t.Fatal(err)
	}
	a := ev.(*events.ActionEvent)
	if a.SecurityRisk != "UNKNOWN" || a.Action != nil || a.Thought[0].Type != "text" {
		t.Fatalf("defaults: %+v", a)
	}
	if enc := string(events.MustEncode(a)); !strings.Contains(enc, `"action":null`) {
		t.Fatalf("a non-executable action must encode action:null: %s", enc)
	}
}

func TestStrictDecoding(t *testing.T) {
	const ts = `"id":"x","timestamp":"2026-01-01T00:00:00Z"`
	action := func(a string) string {
		return `{"kind":"ActionEvent",` + ts + `,"thought":[],"tool_name":"t","tool_call_id":"c","tool_call":{"id":"c","name":"t","arguments":"{}","origin":"completion"},"llm_response_id":"r","action":` + a + `}`
	}
	cases := []struct {
		name, in, loc, errType string
	}{
		{"unknown field", `{"kind":"PauseEvent",` + ts + `,"parent_id":"p"}`, "parent_id", "extra_forbidden"},
		{"unknown kind", `{"kind":"NoSuchEvent",` + ts + `}`, "kind", "union_tag_invalid"},
		{"no kind", `{` + ts + `}`, "kind", "union_tag_not_found"},
		{"missing id", `{"kind":"PauseEvent","timestamp":"2026-01-01T00:00:00Z"}`, "id", "missing"},
		{"missing timestamp", `{"kind":"PauseEvent","id":"x"}`, "timestamp", "missing"},
		{"bad timestamp", `{"kind":"PauseEvent","id":"x","timestamp":"yesterday"}`, "timestamp", "datetime_parsing"},
		{"bad source", `{"kind":"PauseEvent",` + ts + `,"source":"robot"}`, "source", "enum"},
		{"missing required", `{"kind":"ConversationErrorEvent",` + ts + `,"source":"environment","code":"X"}`, "detail", "missing"},
		{"summary_offset < 0", `{"kind":"Condensation",` + ts + `,"llm_response_id":"r","summary_offset":-1}`, "summary_offset", "greater_than_equal"},
		{"critic score > 1", `{"kind":"MessageEvent",` + ts + `,"source":"agent","llm_message":{"role":"assistant"},"critic_result":{"score":1.5,"message":null}}`, "critic_result.score", "less_than_equal"},
		{"critic score < 0", `{"kind":"MessageEvent",` + ts + `,"source":"agent","llm_message":{"role":"assistant"},"critic_result":{"score":-0.1,"message":null}}`, "critic_result.score", "greater_than_equal"},
		{"critic message key required", `{"kind":"MessageEvent",` + ts + `,"source":"agent","llm_message":{"role":"assistant"},"critic_result":{"score":0.5}}`, "critic_result.message", "missing"},
		{"bad role", `{"kind":"MessageEvent",` + ts + `,"source":"user","llm_message":{"role":"boss"}}`, "llm_message.role", "enum"},
		{"bad content type", `{"kind":"MessageEvent",` + ts + `,"source":"user","llm_message":{"role":"user","content":[{"type":"audio"}]}}`, "llm_message.content[0].type", "union_tag_invalid"},
		{"bad security risk", `{"kind":"ActionEvent",` + ts + `,"thought":[],"tool_name":"t","tool_call_id":"c","tool_call":{"id":"c","name":"t","arguments":"{}","origin":"completion"},"llm_response_id":"r","security_risk":"EXTREME"}`, "security_risk", "enum"},
		{"bad origin", `{"kind":"ActionEvent",` + ts + `,"thought":[],"tool_name":"t","tool_call_id":"c","tool_call":{"id":"c","name":"t","arguments":"{}","origin":"chat"},"llm_response_id":"r"}`, "tool_call.origin", "enum"},
		{"tab_id of 3", action(`{"kind":"BrowserSwitchTabAction","tab_id":"abc"}`), "action.tab_id", "string_too_short"},
		{"tab_id of 5", action(`{"kind":"BrowserCloseTabAction","tab_id":"abcde"}`), "action.tab_id", "string_too_long"},
		{"click index < 0", action(`{"kind":"BrowserClickAction","index":-1}`), "action.index", "greater_than_equal"},
		{"type index < 0", action(`{"kind":"BrowserTypeAction","index":-2,"text":"x"}`), "action.index", "greater_than_equal"},
		{"start_from_char < 0", action(`{"kind":"BrowserGetContentAction","start_from_char":-5}`), "action.start_from_char", "greater_than_equal"},
		{"scroll direction", action(`{"kind":"BrowserScrollAction","direction":"left"}`), "action.direction", "enum"},
		{"storage_state not object", action(`{"kind":"BrowserSetStorageAction","storage_state":[]}`), "action.storage_state", "dict_type"},
		{"storage_state extra key", action(`{"kind":"BrowserSetStorageAction","storage_state":{"cookies":[],"junk":1}}`), "action.storage_state.junk", "extra_forbidden"},
		{"editor command", action(`{"kind":"FileEditorAction","command":"delete","path":"/a"}`), "action.command", "enum"},
		{"editor create needs file_text", action(`{"kind":"FileEditorAction","command":"create","path":"/a"}`), "action.file_text", "missing"},
		{"terminal timeout < 0", action(`{"kind":"TerminalAction","command":"ls","timeout":-1}`), "action.timeout", "greater_than_equal"},
		{"unknown action field", action(`{"kind":"TerminalAction","command":"ls","cwd":"/"}`), "action.cwd", "extra_forbidden"},
		{"observation kind", `{"kind":"ObservationEvent",` + ts + `,"tool_name":"t","tool_call_id":"c","action_id":"a","observation":{"kind":"Nope"}}`, "observation.kind", "union_tag_invalid"},
		{"tool kind", `{"kind":"SystemPromptEvent",` + ts + `,"system_prompt":{"text":"x"},"tools":[{"kind":"HammerTool","action_type":"TerminalAction","observation_type":"TerminalObservation","title":"x"}]}`, "tools[0].kind", "enum"},
		{"mcp tool needs mcp_tool", `{"kind":"SystemPromptEvent",` + ts + `,"system_prompt":{"text":"x"},"tools":[{"kind":"MCPToolDefinition","action_type":"MCPToolAction","observation_type":"MCPToolObservation","title":"x"}]}`, "tools[0].mcp_tool", "missing"},
		{"token ids type", `{"kind":"TokenEvent",` + ts + `,"source":"agent","prompt_token_ids":["a"],"response_token_ids":[]}`, "prompt_token_ids[0]", "int_type"},
		{"not json", `{"kind":`, "", "json_invalid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := events.Decode([]byte(tc.in))
			var es strictjson.Errors
			if !errors.As(err, &es) {
				t.Fatalf("want validation errors, got %v", err)
			}
			if es[0].Path() != tc.loc || es[0].Type != tc.errType {
				t.Fatalf("got %s (%s): %s; want %s (%s)", es[0].Path(), es[0].Type, es[0].Msg, tc.loc, tc.errType)
			}
			if tc.loc != "" && !strings.Contains(err.Error(), tc.loc) {
				t.Fatalf("error %q does not name the field %s", err, tc.loc)
			}
		})
	}
}

func TestTimestamps(t *testing.T) {
	cases := []struct{ in, want string }{
		{"2026-03-04T05:06:07Z", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04T05:06:07.1234567Z", "2026-03-04T05:06:07.123456Z"},
		{"2026-03-04T07:06:07.5+02:00", "2026-03-04T05:06:07.500000Z"},
		{"2026-03-04T05:06:07.123456", "2026-03-04T05:06:07.123456Z"}, // no zone: UTC
		{"2026-03-04T05:06:07", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04", "2026-03-04T00:00:00.000000Z"},
		{"2026-03-04t05:06:07z", "2026-03-04T05:06:07.000000Z"},
		// RFC 3339 allows a space (or "t") separator and "z", with a zone too.
		{"2026-03-04 05:06:07Z", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04 05:06:07z", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04 07:06:07+02:00", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04 03:06:07.25-02:00", "2026-03-04T05:06:07.250000Z"},
		{"2026-03-04t07:06:07+02:00", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04 05:06:07", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04 05:06:07.5", "2026-03-04T05:06:07.500000Z"},
		{"2026-03-04t05:06:07", "2026-03-04T05:06:07.000000Z"},
		{" 2026-03-04T05:06:07Z\n", "2026-03-04T05:06:07.000000Z"},
		// An unencoded "+" in a query string arrives as a space.
		{"2026-03-04T07:06:07 02:00", "2026-03-04T05:06:07.000000Z"},
		{"2026-03-04T07:06:07.123456 02:00", "2026-03-04T05:06:07.123456Z"},
		{"2026-03-04 07:06:07 02:00", "2026-03-04T05:06:07.000000Z"},
	}
	for _, tc := range cases {
		got, err := events.ParseTime(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if s := events.At(got).String(); s != tc.want {
			t.Errorf("%s: got %s want %s", tc.in, s, tc.want)
		}
	}
	for _, bad := range []string{
		"", "yesterday", "2026-13-01T00:00:00Z", "2026-03-04T25:00:00Z", "1700000000",
		"2026-03-04  05:06:07Z",      // two spaces
		"2026-03-04x05:06:07Z",       // unknown separator
		"2026-03-04 05:06:07 Z",      // space before the zone
		"2026-03-04T05:06:07 +02:00", // space before a signed offset
		"2026-03-04T05:06:07 -02:00",
		"2026-03-04T05:06:07 0200",   // space offset without colon
		"2026-03-04T05:06:07 2:00",   // space offset with one hour digit
		"2026-03-04T05:06:07 02:00Z", // space offset followed by more
		"2026-03-04T05:06:07 99:00",  // offset hour out of range
		"2026-03-04T05:06:07  02:00", // two spaces before the offset
		"2026-03-04 02:00",           // space offset after a bare date
		"2026-03-04T05:06 02:00",     // space offset after a time without seconds
		"2026-03-04T05:06:07+02:00 01:00",
		"2026-03-04T05:06:07ZZ",
	} {
		if _, err := events.ParseTime(bad); err == nil {
			t.Errorf("%q should not parse", bad)
		}
	}
	if s := events.At(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))).String(); s != "2026-01-02T02:04:05.000000Z" {
		t.Errorf("At must convert to UTC: %s", s)
	}
}

func TestResolveKind(t *testing.T) {
	for in, want := range map[string]string{
		"MessageEvent": "MessageEvent",
		"openhands.sdk.event.llm_convertible.message.MessageEvent":            "MessageEvent",
		"openhands.sdk.event.conversation_state.ConversationStateUpdateEvent": "ConversationStateUpdateEvent",
	} {
		if got, ok := events.ResolveKind(in); !ok || got != want {
			t.Errorf("%s: got %q %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "Message", "foo.MessageEvent", "openhands.sdk.event.MessageEvent"} {
		if _, ok := events.ResolveKind(bad); ok {
			t.Errorf("%q should not resolve", bad)
		}
	}
}

func TestSearchText(t *testing.T) {
	ev := sampleEvents()["MessageEvent"]
	text := events.SearchText(ev)
	for _, want := range []string{"fix the failing test", "git tips"} {
		if !strings.Contains(text, want) {
			t.Errorf("search text %q lacks %q", text, want)
		}
	}
	if events.SearchText(sampleEvents()["ActionEvent"]) != "" {
		t.Error("only message events are searchable by body")
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, ev := range sampleEvents() {
		f.Add(events.MustEncode(ev))
	}
	f.Add([]byte(`{"kind":"PauseEvent","id":"x","timestamp":"2026-01-01T00:00:00"}`))
	f.Add([]byte(`{"kind":"MessageEvent","id":"x","timestamp":"2026-01-01T00:00:00Z","source":"user","llm_message":{"role":"user","content":[{"text":"hi"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := events.Decode(data)
		if err != nil {
			var es strictjson.Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("decode error is not a validation error list: %v", err)
			}
			return
		}
		enc, err := events.Encode(ev)
		if err != nil {
			t.Fatalf("decoded event does not encode: %v", err)
		}
		back, err := events.Decode(enc)
		if err != nil {
			t.Fatalf("canonical encoding does not decode: %v\n%s", err, enc)
		}
		enc2, err := events.Encode(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("encoding is not a fixed point:\n%s\n%s", enc, enc2)
		}
	})
}
