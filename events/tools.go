package events

import (
	"encoding/json"
	"slices"

	"github.com/acs-project/acs/events/strictjson"
)

// ToolKind is the kind of a ToolDefinition: one per tool.
type ToolKind string

// ToolSpec describes one built-in tool kind: the name the LLM calls it by and
// its action and observation kinds.
type ToolSpec struct {
	Kind            ToolKind
	Name            string
	ActionType      string
	ObservationType string
	ReadOnly        bool
}

// toolSpecs lists every tool kind of the specification.
var toolSpecs = []ToolSpec{
	{"MCPToolDefinition", "", "MCPToolAction", "MCPToolObservation", false},
	{"FinishTool", "finish", "FinishAction", "FinishObservation", true},
	{"ThinkTool", "think", "ThinkAction", "ThinkObservation", true},
	{"BrowserClickTool", "browser_click", "BrowserClickAction", "BrowserObservation", false},
	{"BrowserCloseTabTool", "browser_close_tab", "BrowserCloseTabAction", "BrowserObservation", false},
	{"BrowserGetContentTool", "browser_get_content", "BrowserGetContentAction", "BrowserObservation", true},
	{"BrowserGetStateTool", "browser_get_state", "BrowserGetStateAction", "BrowserObservation", true},
	{"BrowserGetStorageTool", "browser_get_storage", "BrowserGetStorageAction", "BrowserObservation", true},
	{"BrowserGoBackTool", "browser_go_back", "BrowserGoBackAction", "BrowserObservation", false},
	{"BrowserListTabsTool", "browser_list_tabs", "BrowserListTabsAction", "BrowserObservation", true},
	{"BrowserNavigateTool", "browser_navigate", "BrowserNavigateAction", "BrowserObservation", false},
	{"BrowserScrollTool", "browser_scroll", "BrowserScrollAction", "BrowserObservation", true},
	{"BrowserSetStorageTool", "browser_set_storage", "BrowserSetStorageAction", "BrowserObservation", false},
	{"BrowserStartRecordingTool", "browser_start_recording", "BrowserStartRecordingAction", "BrowserObservation", false},
	{"BrowserStopRecordingTool", "browser_stop_recording", "BrowserStopRecordingAction", "BrowserObservation", false},
	{"BrowserSwitchTabTool", "browser_switch_tab", "BrowserSwitchTabAction", "BrowserObservation", false},
	{"BrowserToolSet", "browser_tool_set", "BrowserAction", "BrowserObservation", false},
	{"BrowserTypeTool", "browser_type", "BrowserTypeAction", "BrowserObservation", false},
	{"FileEditorTool", "file_editor", "FileEditorAction", "FileEditorObservation", false},
	{"EditTool", "edit", "EditAction", "EditObservation", false},
	{"ListDirectoryTool", "list_directory", "ListDirectoryAction", "ListDirectoryObservation", true},
	{"ReadFileTool", "read_file", "ReadFileAction", "ReadFileObservation", true},
	{"WriteFileTool", "write_file", "WriteFileAction", "WriteFileObservation", false},
	{"GlobTool", "glob", "GlobAction", "GlobObservation", true},
	{"GrepTool", "grep", "GrepAction", "GrepObservation", true},
	{"PlanningFileEditorTool", "planning_file_editor", "PlanningFileEditorAction", "PlanningFileEditorObservation", false},
	{"TaskTrackerTool", "task_tracker", "TaskTrackerAction", "TaskTrackerObservation", false},
	{"TerminalTool", "terminal", "TerminalAction", "TerminalObservation", false},
}

// ToolSpecs returns the table of built-in tool kinds.
func ToolSpecs() []ToolSpec { return slices.Clone(toolSpecs) }

// ToolSpecByName finds a tool kind by the name the LLM uses, e.g. "terminal".
func ToolSpecByName(name string) (ToolSpec, bool) {
	for _, s := range toolSpecs {
		if s.Name == name && name != "" {
			return s, true
		}
	}
	return ToolSpec{}, false
}

// EnumValues implements strictjson.Enum.
func (ToolKind) EnumValues() []string {
	out := make([]string, len(toolSpecs))
	for i, s := range toolSpecs {
		out[i] = string(s.Kind)
	}
	return out
}

// ToolAnnotations are MCP-style hints about a tool.
type ToolAnnotations struct {
	Title           *string `json:"title"`
	ReadOnlyHint    *bool   `json:"readOnlyHint"`
	DestructiveHint *bool   `json:"destructiveHint"`
	IdempotentHint  *bool   `json:"idempotentHint"`
	OpenWorldHint   *bool   `json:"openWorldHint"`
}

// MCPTool is the MCP server's own description of a tool.
type MCPTool struct {
	Name         string          `json:"name" acs:"required,minlen=1"`
	Title        *string         `json:"title"`
	Description  *string         `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema" acs:"required,object"`
	OutputSchema json.RawMessage `json:"outputSchema" acs:"object,nullable"`
	Annotations  json.RawMessage `json:"annotations" acs:"object,nullable"`
	Meta         json.RawMessage `json:"_meta" acs:"object,nullable"`
}

// ToolDefinition describes a tool offered to the LLM, as serialised inside
// SystemPromptEvent.tools. Consumers read the tool's name from Title.
type ToolDefinition struct {
	Kind            ToolKind         `json:"kind" acs:"required"`
	Description     string           `json:"description"`
	ActionType      string           `json:"action_type" acs:"required"`
	ObservationType string           `json:"observation_type" acs:"required"`
	Annotations     *ToolAnnotations `json:"annotations"`
	Meta            json.RawMessage  `json:"meta" acs:"object,emitnull"`
	Title           string           `json:"title" acs:"required"`
	MCPTool         *MCPTool         `json:"mcp_tool"`
}

// ValidateStrict checks the action and observation types and that mcp_tool is
// present exactly for MCPToolDefinition.
func (t *ToolDefinition) ValidateStrict() []strictjson.Error {
	var errs []strictjson.Error
	if _, ok := actionKinds[t.ActionType]; !ok {
		errs = append(errs, strictjson.Error{Loc: []any{"action_type"}, Msg: strictjson.EnumMessage(ActionKinds()), Type: "enum"})
	}
	if _, ok := observationKinds[t.ObservationType]; !ok {
		errs = append(errs, strictjson.Error{Loc: []any{"observation_type"}, Msg: strictjson.EnumMessage(ObservationKinds()), Type: "enum"})
	}
	switch {
	case t.Kind == "MCPToolDefinition" && t.MCPTool == nil:
		errs = append(errs, strictjson.Error{Loc: []any{"mcp_tool"}, Msg: "Field required for MCPToolDefinition", Type: "missing"})
	case t.Kind != "MCPToolDefinition" && t.MCPTool != nil:
		errs = append(errs, strictjson.Error{Loc: []any{"mcp_tool"}, Msg: "Only MCPToolDefinition has mcp_tool", Type: "extra_forbidden"})
	}
	return errs
}

// NewToolDefinition builds the definition of a built-in tool kind with its
// description and default annotations.
func NewToolDefinition(kind ToolKind, description string) ToolDefinition {
	var spec ToolSpec
	for _, s := range toolSpecs {
		if s.Kind == kind {
			spec = s
		}
	}
	title := spec.Name
	readOnly, destructive := spec.ReadOnly, !spec.ReadOnly
	idempotent, openWorld := spec.ReadOnly, kind == "TerminalTool" || spec.ActionType != "" && spec.ObservationType == "BrowserObservation"
	return ToolDefinition{
		Kind: kind, Description: description,
		ActionType: spec.ActionType, ObservationType: spec.ObservationType,
		Annotations: &ToolAnnotations{
			Title: &title, ReadOnlyHint: &readOnly, DestructiveHint: &destructive,
			IdempotentHint: &idempotent, OpenWorldHint: &openWorld,
		},
		Title: title,
	}
}
