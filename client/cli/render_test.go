package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
)

func ptr[T any](v T) *T { return &v }

func TestRenderer(t *testing.T) {
	base := func(src events.Source) events.Base {
		return events.Base{ID: events.NewID(), Timestamp: events.Now(), Source: src}
	}
	old, new := "a\nb\nc\n", "a\nB\nc\n"
	for _, tc := range []struct {
		name string
		ev   events.Event
		want string
	}{
		{"user message", &events.MessageEvent{Base: base("user"), LLMMessage: events.Message{Role: "user", Content: []events.Content{events.TextItem("Fix the bug\nin main.go")}}},
			"user: Fix the bug\n  in main.go\n"},
		{"agent message", &events.MessageEvent{Base: base("agent"), LLMMessage: events.Message{Role: "assistant", Content: []events.Content{events.TextItem("Done.")}}},
			"agent: Done.\n"},
		{"command with a thought", &events.ActionEvent{Base: base("agent"), Thought: []events.TextContent{{Text: "Let me look."}},
			Action: &events.TerminalAction{Command: "ls -la"}, ToolName: "terminal"},
			"agent: Let me look.\nagent $ ls -la\n"},
		{"command output", &events.ObservationEvent{Base: base("environment"), ToolName: "terminal",
			Observation: &events.TerminalObservation{ObservationBase: events.ObservationBase{Content: []events.Content{events.TextItem("one\ntwo\n")}}, ExitCode: ptr(2)}},
			"  one\n  two\n  [exit 2]\n"},
		{"file edit as a diff", &events.ObservationEvent{Base: base("environment"), ToolName: "file_editor",
			Observation: &events.FileEditorObservation{FileEditorResult: events.FileEditorResult{Command: "str_replace", Path: ptr("/w/x.txt"),
				PrevExist: true, OldContent: &old, NewContent: &new}}},
			"  --- a/w/x.txt\n  +++ b/w/x.txt\n  @@ -1,3 +1,3 @@\n   a\n  -b\n  +B\n   c\n"},
		{"file created", &events.ObservationEvent{Base: base("environment"), ToolName: "file_editor",
			Observation: &events.FileEditorObservation{FileEditorResult: events.FileEditorResult{Command: "create", Path: ptr("/w/n.md"), NewContent: ptr("hi\n")}}},
			"  --- /dev/null\n  +++ b/w/n.md\n  @@ -0,0 +1 @@\n  +hi\n"},
		{"failed edit shows its error", &events.ObservationEvent{Base: base("environment"), ToolName: "file_editor",
			Observation: &events.FileEditorObservation{ObservationBase: events.ObservationBase{Content: []events.Content{events.TextItem("no such file")}, IsError: true},
				FileEditorResult: events.FileEditorResult{Command: "str_replace", Path: ptr("/w/x")}}},
			"  no such file\n"},
		{"other tool", &events.ActionEvent{Base: base("agent"), Action: &events.GlobAction{Pattern: "*.go"}, ToolName: "glob",
			ToolCall: events.MessageToolCall{Arguments: `{"pattern":"*.go"}`}},
			"tool: glob {\"pattern\":\"*.go\"}\n"},
		{"finish", &events.ActionEvent{Base: base("agent"), Action: &events.FinishAction{Message: "All done."}, ToolName: "finish"},
			"agent (done): All done.\n"},
		{"finish observation is silent", &events.ObservationEvent{Base: base("environment"), ToolName: "finish",
			Observation: &events.FinishObservation{ObservationBase: events.ObservationBase{Content: []events.Content{events.TextItem("All done.")}}}}, ""},
		{"agent error", &events.AgentErrorEvent{Base: base("agent"), ToolName: "terminal", Error: "bad arguments"}, "error: terminal: bad arguments\n"},
		{"conversation error", &events.ConversationErrorEvent{Base: base("environment"), Code: "LLMError", Detail: "rate limited"}, "conversation error: LLMError: rate limited\n"},
		{"status change", &events.ConversationStateUpdateEvent{Base: base("environment"), Key: "execution_status", Value: json.RawMessage(`"running"`)}, "— running\n"},
		{"full state", &events.ConversationStateUpdateEvent{Base: base("environment"), Key: "full_state", Value: json.RawMessage(`{"execution_status":"finished","x":1}`)}, "— finished\n"},
		{"other state keys are silent", &events.ConversationStateUpdateEvent{Base: base("environment"), Key: "stats", Value: json.RawMessage(`{}`)}, ""},
		{"system prompt is silent", &events.SystemPromptEvent{Base: base("agent"), SystemPrompt: events.TextContent{Text: "You are..."}}, ""},
		{"rejection", &events.UserRejectObservation{Base: base("environment"), RejectionReason: "not now", RejectionSource: "user"}, "rejected: not now (user)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			NewRenderer(&b, false).Render(tc.ev)
			if b.String() != tc.want {
				t.Fatalf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}

func TestRendererStatusOnlyWhenItChanges(t *testing.T) {
	var b strings.Builder
	r := NewRenderer(&b, false)
	for _, v := range []string{`"running"`, `"running"`, `"finished"`} {
		r.Render(&events.ConversationStateUpdateEvent{Key: "execution_status", Value: json.RawMessage(v)})
	}
	if b.String() != "— running\n— finished\n" || r.Status != "finished" {
		t.Fatalf("got %q (status %q)", b.String(), r.Status)
	}
}

func TestRendererColors(t *testing.T) {
	ev := &events.ActionEvent{Action: &events.TerminalAction{Command: "ls"}, ToolName: "terminal"}
	var plain, colored strings.Builder
	NewRenderer(&plain, false).Render(ev)
	NewRenderer(&colored, true).Render(ev)
	if strings.Contains(plain.String(), "\x1b[") || !strings.Contains(colored.String(), "\x1b[") {
		t.Fatalf("plain %q colored %q", plain.String(), colored.String())
	}
}

func TestRendererBoundsLongOutput(t *testing.T) {
	var b strings.Builder
	out := strings.Repeat("line\n", maxOutputLines+10)
	NewRenderer(&b, false).Render(&events.ObservationEvent{ToolName: "terminal",
		Observation: &events.TerminalObservation{ObservationBase: events.ObservationBase{Content: []events.Content{events.TextItem(out)}}}})
	if n := strings.Count(b.String(), "  line\n"); n != maxOutputLines || !strings.HasSuffix(b.String(), "… 10 more lines\n") {
		t.Fatalf("%d lines shown:\n%s", n, b.String())
	}
}

func TestColorOn(t *testing.T) {
	for _, tc := range []struct {
		tty  bool
		env  map[string]string
		want bool
	}{
		{true, nil, true},
		{false, nil, false},
		{true, map[string]string{"NO_COLOR": "1"}, false},
		{true, map[string]string{"TERM": "dumb"}, false},
	} {
		got := colorOn(IO{StdoutTTY: tc.tty, Getenv: func(k string) string { return tc.env[k] }})
		if got != tc.want {
			t.Errorf("tty %v env %v: %v, want %v", tc.tty, tc.env, got, tc.want)
		}
	}
}

func TestUnifiedDiff(t *testing.T) {
	for _, tc := range []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"created", "", "a\nb\n", "--- f\n+++ g\n@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{"deleted", "a\n", "", "--- f\n+++ g\n@@ -1 +0,0 @@\n-a\n"},
		{"no newline at end", "a\n", "a\nb", "--- f\n+++ g\n@@ -1 +1,2 @@\n a\n+b\n\\ No newline at end of file\n"},
		{"two hunks with context", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\nELEVEN\n12\n",
			"--- f\n+++ g\n@@ -1,5 +1,5 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+ELEVEN\n 12\n"},
		{"close changes share a hunk", "1\n2\n3\n4\n5\n", "1\nX\n3\nY\n5\n",
			"--- f\n+++ g\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n-4\n+Y\n 5\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnifiedDiff("f", "g", tc.a, tc.b); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
