package events_test

import (
	"encoding/json"
	"time"

	"github.com/acs-project/acs/events"
)

func ptr[T any](v T) *T { return &v }

var sampleTime = events.At(time.Date(2026, 8, 22, 16, 34, 54, 123456000, time.UTC))

func base(id string, src events.Source) events.Base {
	return events.Base{ID: id, Timestamp: sampleTime, Source: src}
}

func sampleActions() map[string]events.Action {
	return map[string]events.Action{
		"MCPToolAction":               &events.MCPToolAction{Data: json.RawMessage(`{"query":"weather","days":3}`)},
		"FinishAction":                &events.FinishAction{Message: "Done: tests pass."},
		"ThinkAction":                 &events.ThinkAction{Thought: "The bug is in parse()."},
		"BrowserAction":               &events.BrowserAction{},
		"BrowserClickAction":          &events.BrowserClickAction{Index: 3, NewTab: true},
		"BrowserCloseTabAction":       &events.BrowserCloseTabAction{TabID: "a1b2"},
		"BrowserGetContentAction":     &events.BrowserGetContentAction{ExtractLinks: true, StartFromChar: 4000},
		"BrowserGetStateAction":       &events.BrowserGetStateAction{IncludeScreenshot: true},
		"BrowserGetStorageAction":     &events.BrowserGetStorageAction{},
		"BrowserGoBackAction":         &events.BrowserGoBackAction{},
		"BrowserListTabsAction":       &events.BrowserListTabsAction{},
		"BrowserNavigateAction":       &events.BrowserNavigateAction{URL: "http://127.0.0.1:8080/form", NewTab: false},
		"BrowserScrollAction":         &events.BrowserScrollAction{Direction: "up"},
		"BrowserSetStorageAction":     &events.BrowserSetStorageAction{StorageState: json.RawMessage(`{"cookies":[{"name":"sid","value":"x","domain":"127.0.0.1","path":"/"}],"origins":[]}`)},
		"BrowserStartRecordingAction": &events.BrowserStartRecordingAction{},
		"BrowserStopRecordingAction":  &events.BrowserStopRecordingAction{},
		"BrowserSwitchTabAction":      &events.BrowserSwitchTabAction{TabID: "c3d4"},
		"BrowserTypeAction":           &events.BrowserTypeAction{Index: 0, Text: "hello <world> & co"},
		"FileEditorAction": &events.FileEditorAction{FileEditorFields: events.FileEditorFields{
			Command: "str_replace", Path: "/workspace/app.py", OldStr: ptr("return a-b"), NewStr: ptr("return a+b")}},
		"PlanningFileEditorAction": &events.PlanningFileEditorAction{FileEditorFields: events.FileEditorFields{
			Command: "view", Path: "/workspace/.agents_tmp/PLAN.md", ViewRange: []int{1, -1}}},
		"EditAction":          &events.EditAction{FilePath: "/workspace/a.go", OldString: "x := 1", NewString: "x := 2", ExpectedReplacements: 1},
		"ListDirectoryAction": &events.ListDirectoryAction{DirPath: "/workspace", Recursive: true},
		"ReadFileAction":      &events.ReadFileAction{FilePath: "/workspace/README.md", Offset: ptr(10), Limit: ptr(20)},
		"WriteFileAction":     &events.WriteFileAction{FilePath: "/workspace/notes.txt", Content: "line 1\nline 2\n"},
		"GlobAction":          &events.GlobAction{Pattern: "**/*.go", Path: ptr("/workspace")},
		"GrepAction":          &events.GrepAction{Pattern: "func [A-Z]", Path: ptr("/workspace"), Include: ptr("*.go")},
		"TaskTrackerAction": &events.TaskTrackerAction{Command: "plan", TaskList: []events.TaskItem{
			{Title: "Reproduce", Notes: "run tests", Status: "done"}, {Title: "Fix", Status: "in_progress"}}},
		"TerminalAction": &events.TerminalAction{Command: "go test ./...", Timeout: ptr(30.0)},
	}
}

func obsBase(text string, isErr bool) events.ObservationBase {
	return events.ObservationBase{Content: []events.Content{events.TextItem(text)}, IsError: isErr}
}

func sampleObservations() map[string]events.Observation {
	return map[string]events.Observation{
		"MCPToolObservation": &events.MCPToolObservation{ObservationBase: events.ObservationBase{Content: []events.Content{
			events.TextItem("[Tool 'search' executed.]"), &events.ImageContent{Type: "image", ImageURLs: []string{"data:image/png;base64,iVBORw0KGgo="}}}}, ToolName: "search"},
		"FinishObservation":  &events.FinishObservation{ObservationBase: obsBase("Done: tests pass.", false)},
		"ThinkObservation":   &events.ThinkObservation{ObservationBase: obsBase("Your thought has been logged.", false)},
		"BrowserObservation": &events.BrowserObservation{ObservationBase: obsBase("Navigated to http://127.0.0.1:8080/form", false), ScreenshotData: ptr("iVBORw0KGgo=")},
		"FileEditorObservation": &events.FileEditorObservation{ObservationBase: obsBase("The file /workspace/app.py has been edited.", false),
			FileEditorResult: events.FileEditorResult{Command: "str_replace", Path: ptr("/workspace/app.py"), PrevExist: true,
				OldContent: ptr("return a-b\n"), NewContent: ptr("return a+b\n")}},
		"PlanningFileEditorObservation": &events.PlanningFileEditorObservation{ObservationBase: obsBase("Only PLAN.md can be edited.", true),
			FileEditorResult: events.FileEditorResult{Command: "create", Path: ptr("/workspace/other.md"), PrevExist: false}},
		"EditObservation": &events.EditObservation{ObservationBase: obsBase("Replaced 1 occurrence.", false),
			FilePath: ptr("/workspace/a.go"), ReplacementsMade: 1, OldContent: ptr("x := 1"), NewContent: ptr("x := 2")},
		"ListDirectoryObservation": &events.ListDirectoryObservation{ObservationBase: obsBase("2 entries", false), DirPath: ptr("/workspace"),
			Entries: []events.FileEntry{
				{Name: "a.go", Path: "/workspace/a.go", Size: 120, ModifiedTime: sampleTime},
				{Name: "pkg", Path: "/workspace/pkg", IsDirectory: true, Size: 4096, ModifiedTime: sampleTime}},
			TotalCount: 2},
		"ReadFileObservation": &events.ReadFileObservation{ObservationBase: obsBase("# ACS", false), FilePath: "/workspace/README.md",
			FileContent: "# ACS\n", LinesShown: []int{1, 1}, TotalLines: ptr(1)},
		"WriteFileObservation": &events.WriteFileObservation{ObservationBase: obsBase("Wrote /workspace/notes.txt", false),
			FilePath: ptr("/workspace/notes.txt"), IsNewFile: true, NewContent: ptr("line 1\nline 2\n")},
		"GlobObservation": &events.GlobObservation{ObservationBase: obsBase("/workspace/a.go", false),
			Files: []string{"/workspace/a.go"}, Pattern: "**/*.go", SearchPath: "/workspace"},
		"GrepObservation": &events.GrepObservation{ObservationBase: obsBase("/workspace/a.go", false),
			Matches: []string{"/workspace/a.go"}, Pattern: "func [A-Z]", SearchPath: "/workspace", IncludePattern: ptr("*.go"), Truncated: true},
		"TaskTrackerObservation": &events.TaskTrackerObservation{ObservationBase: obsBase("Task list has been updated with 1 item(s).", false),
			Command: "plan", TaskList: []events.TaskItem{{Title: "Fix", Status: "todo"}}},
		"TerminalObservation": &events.TerminalObservation{ObservationBase: obsBase("ok\tgithub.com/x/y\t0.01s", false),
			Command: ptr("go test ./..."), ExitCode: ptr(0),
			Metadata: events.TerminalMetadata{ExitCode: 0, PID: 4242, Username: ptr("acs"), Hostname: ptr("sandbox"),
				WorkingDir: ptr("/workspace"), Prefix: "", Suffix: "\n[Command finished with exit code 0]"}},
	}
}

func sampleTools() map[string]events.ToolDefinition {
	out := map[string]events.ToolDefinition{}
	for _, spec := range events.ToolSpecs() {
		if spec.Kind == "MCPToolDefinition" {
			def := events.ToolDefinition{
				Kind: "MCPToolDefinition", Description: "Search the web.", ActionType: "MCPToolAction",
				ObservationType: "MCPToolObservation", Title: "search",
				Annotations: &events.ToolAnnotations{Title: ptr("search"), ReadOnlyHint: ptr(true)},
				MCPTool: &events.MCPTool{Name: "search", Description: ptr("Search the web."),
					InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)},
			}
			out[string(spec.Kind)] = def
			continue
		}
		out[string(spec.Kind)] = events.NewToolDefinition(spec.Kind, "The "+spec.Name+" tool.")
	}
	return out
}

func sampleEvents() map[string]events.Event {
	call := events.MessageToolCall{ID: "call_1", Name: "terminal",
		Arguments: `{"command": "ls", "security_risk": "LOW", "summary": "list files"}`, Origin: "completion"}
	tools := sampleTools()
	return map[string]events.Event{
		"Condensation": &events.Condensation{Base: base("e-condensation", events.SourceEnvironment),
			ForgottenEventIDs: []string{"e1", "e2"}, Summary: ptr("The user asked for a fix; tests were run."), SummaryOffset: ptr(2), LLMResponseID: "chatcmpl-7"},
		"CondensationRequest":      &events.CondensationRequest{Base: base("e-condreq", events.SourceEnvironment)},
		"CondensationSummaryEvent": &events.CondensationSummaryEvent{Base: base("e-condensation-summary", events.SourceEnvironment), Summary: "Earlier: fixed parse()."},
		"ConversationErrorEvent": &events.ConversationErrorEvent{Base: base("e-converr", events.SourceEnvironment),
			Code: "MaxIterationsReached", Detail: "Agent reached the maximum of 500 iterations."},
		"ConversationStateUpdateEvent": &events.ConversationStateUpdateEvent{Base: base("e-state", events.SourceEnvironment),
			Key: "stats", Value: json.RawMessage(`{"usage_to_metrics":{"agent":{"model_name":"gpt-4o","accumulated_cost":0.0123}}}`)},
		"LLMCompletionLogEvent": &events.LLMCompletionLogEvent{Base: base("e-llmlog", events.SourceEnvironment),
			Filename: "gpt-4o-1755880494.123.json", LogData: `{"messages":[],"response":{}}`, ModelName: "gpt-4o", UsageID: "agent"},
		"ActionEvent": &events.ActionEvent{Base: base("e-action", events.SourceAgent),
			Thought:          []events.TextContent{events.Text("Listing files")},
			ReasoningContent: ptr("I should look around first."),
			ThinkingBlocks: []events.ThinkingItem{&events.ThinkingBlock{Type: "thinking", Thinking: "look around", Signature: ptr("sig")},
				&events.RedactedThinkingBlock{Type: "redacted_thinking", Data: "b64data"}},
			ResponsesReasoningItem: &events.ReasoningItemModel{ID: ptr("rs_1"), Summary: []string{"looked"}, Content: nil, Status: ptr("completed")},
			Action:                 &events.TerminalAction{Command: "ls"},
			ToolName:               "terminal", ToolCallID: "call_1", ToolCall: call, LLMResponseID: "chatcmpl-9",
			SecurityRisk: "LOW", CriticResult: &events.CriticResult{Score: 0.75, Message: nil, Metadata: json.RawMessage(`{"event_ids":["e1"]}`)},
			Summary: ptr("list files")},
		"MessageEvent": &events.MessageEvent{Base: base("e-message", events.SourceUser),
			LLMMessage: events.Message{Role: "user", Content: []events.Content{events.TextItem("Fix the failing test, then run it."),
				&events.ImageContent{Type: "image", ImageURLs: []string{"https://example.com/screenshot.png"}}}},
			ActivatedSkills: []string{"git"}, ExtendedContent: []events.TextContent{events.Text("<EXTRA_INFO>git tips</EXTRA_INFO>")}},
		"AgentErrorEvent": &events.AgentErrorEvent{Base: base("e-agenterr", events.SourceAgent),
			ToolName: "no_such_tool", ToolCallID: "call_2", Error: "Tool 'no_such_tool' not found. Available: terminal, file_editor, think, finish"},
		"ObservationEvent": &events.ObservationEvent{Base: base("e-observation", events.SourceEnvironment),
			ToolName: "terminal", ToolCallID: "call_1", ActionID: "e-action",
			Observation: sampleObservations()["TerminalObservation"]},
		"UserRejectObservation": &events.UserRejectObservation{Base: base("e-reject", events.SourceEnvironment),
			ToolName: "terminal", ToolCallID: "call_3", RejectionReason: "Not now.", RejectionSource: "user", ActionID: "e-action"},
		"SystemPromptEvent": &events.SystemPromptEvent{Base: base("e-system", events.SourceAgent),
			SystemPrompt: events.Text("You are ACS, a coding agent."),
			Tools:        []events.ToolDefinition{tools["TerminalTool"], tools["FinishTool"], tools["MCPToolDefinition"]},
			DynamicContext: &events.TextContent{Type: "text",
				Text: "Working directory: /workspace\nAvailable secrets (names only): GITHUB_TOKEN"}},
		"TokenEvent": &events.TokenEvent{Base: base("e-token", events.SourceAgent), PromptTokenIDs: []int{1, 2, 3}, ResponseTokenIDs: []int{4, 5}},
		"PauseEvent": &events.PauseEvent{Base: base("e-pause", events.SourceUser)},
	}
}
