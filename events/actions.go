package events

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/acs-project/acs/events/strictjson"
)

// Action is the payload of ActionEvent.action, discriminated by "kind".
// Concrete types are this package's *...Action types.
type Action interface {
	Kind() string
	isAction()
}

// MCPToolAction calls a tool of an MCP server with free-form arguments.
type MCPToolAction struct {
	Data json.RawMessage `json:"data" acs:"object,default={}"`
}

// FinishAction ends the task with a final message to the user.
type FinishAction struct {
	Message string `json:"message" acs:"required"`
}

// ThinkAction logs a thought.
type ThinkAction struct {
	Thought string `json:"thought" acs:"required"`
}

// BrowserAction is the base browser action; it has no fields.
type BrowserAction struct{}

// BrowserClickAction clicks the element with the given index of the state.
type BrowserClickAction struct {
	Index  int  `json:"index" acs:"required,ge=0"`
	NewTab bool `json:"new_tab"`
}

// BrowserCloseTabAction closes a tab by its 4-character id.
type BrowserCloseTabAction struct {
	TabID string `json:"tab_id" acs:"required,len=4"`
}

// BrowserGetContentAction returns the page content as text.
type BrowserGetContentAction struct {
	ExtractLinks  bool `json:"extract_links"`
	StartFromChar int  `json:"start_from_char" acs:"ge=0"`
}

// BrowserGetStateAction returns the interactive elements of the page.
type BrowserGetStateAction struct {
	IncludeScreenshot bool `json:"include_screenshot"`
}

// BrowserGetStorageAction returns cookies and origin storage.
type BrowserGetStorageAction struct{}

// BrowserGoBackAction goes back in history.
type BrowserGoBackAction struct{}

// BrowserListTabsAction lists the open tabs.
type BrowserListTabsAction struct{}

// BrowserNavigateAction opens a URL.
type BrowserNavigateAction struct {
	URL    string `json:"url" acs:"required"`
	NewTab bool   `json:"new_tab"`
}

// ScrollDirection is up or down.
type ScrollDirection string

// EnumValues implements strictjson.Enum.
func (ScrollDirection) EnumValues() []string { return []string{"up", "down"} }

// BrowserScrollAction scrolls the page.
type BrowserScrollAction struct {
	Direction ScrollDirection `json:"direction" acs:"default=down"`
}

// BrowserSetStorageAction restores cookies and origin storage.
type BrowserSetStorageAction struct {
	StorageState json.RawMessage `json:"storage_state" acs:"required,object"`
}

// ValidateStrict requires storage_state to hold only "cookies" and "origins",
// each a list.
func (a *BrowserSetStorageAction) ValidateStrict() []strictjson.Error {
	v, err := strictjson.Parse(a.StorageState)
	if err != nil {
		return []strictjson.Error{{Loc: []any{"storage_state"}, Msg: "Invalid JSON", Type: "json_invalid"}}
	}
	var errs []strictjson.Error
	for _, m := range v.Members {
		switch m.Key {
		case "cookies", "origins":
			if m.Value.Kind != strictjson.Array {
				errs = append(errs, strictjson.Error{Loc: []any{"storage_state", m.Key}, Msg: "Input should be a valid list", Type: "list_type"})
			}
		default:
			errs = append(errs, strictjson.Error{Loc: []any{"storage_state", m.Key}, Msg: "Extra inputs are not permitted (storage_state holds cookies and origins)", Type: "extra_forbidden"})
		}
	}
	return errs
}

// BrowserStartRecordingAction starts recording the session.
type BrowserStartRecordingAction struct{}

// BrowserStopRecordingAction stops recording and saves it.
type BrowserStopRecordingAction struct{}

// BrowserSwitchTabAction switches to a tab by its 4-character id.
type BrowserSwitchTabAction struct {
	TabID string `json:"tab_id" acs:"required,len=4"`
}

// BrowserTypeAction types text into the input element with the given index.
type BrowserTypeAction struct {
	Index int    `json:"index" acs:"required,ge=0"`
	Text  string `json:"text" acs:"required"`
}

// EditorCommand is a file_editor command.
type EditorCommand string

// The file editor commands.
const (
	EditorView       EditorCommand = "view"
	EditorCreate     EditorCommand = "create"
	EditorStrReplace EditorCommand = "str_replace"
	EditorInsert     EditorCommand = "insert"
	EditorUndoEdit   EditorCommand = "undo_edit"
)

// EnumValues implements strictjson.Enum.
func (EditorCommand) EnumValues() []string {
	return []string{"view", "create", "str_replace", "insert", "undo_edit"}
}

// FileEditorFields are the arguments of file_editor and planning_file_editor.
type FileEditorFields struct {
	Command    EditorCommand `json:"command" acs:"required"`
	Path       string        `json:"path" acs:"required"`
	FileText   *string       `json:"file_text"`
	OldStr     *string       `json:"old_str"`
	NewStr     *string       `json:"new_str"`
	InsertLine *int          `json:"insert_line" acs:"ge=0"`
	ViewRange  []int         `json:"view_range" acs:"nullable,len=2"`
}

// ValidateStrict requires the arguments each command needs.
func (f *FileEditorFields) ValidateStrict() []strictjson.Error {
	need := func(name string, ok bool) []strictjson.Error {
		if ok {
			return nil
		}
		return []strictjson.Error{{Loc: []any{name}, Msg: fmt.Sprintf("Field required for command %q", f.Command), Type: "missing"}}
	}
	switch f.Command {
	case EditorCreate:
		return need("file_text", f.FileText != nil)
	case EditorStrReplace:
		return need("old_str", f.OldStr != nil)
	case EditorInsert:
		return append(need("insert_line", f.InsertLine != nil), need("new_str", f.NewStr != nil)...)
	}
	return nil
}

// FileEditorAction views, creates and edits files.
type FileEditorAction struct{ FileEditorFields }

// PlanningFileEditorAction is FileEditorAction restricted to the plan file for
// edits.
type PlanningFileEditorAction struct{ FileEditorFields }

// EditAction replaces old_string with new_string in a file; an empty
// old_string creates the file.
type EditAction struct {
	FilePath             string `json:"file_path" acs:"required"`
	OldString            string `json:"old_string" acs:"required"`
	NewString            string `json:"new_string" acs:"required"`
	ExpectedReplacements int    `json:"expected_replacements" acs:"default=1,ge=1"`
}

// ListDirectoryAction lists a directory (recursive goes two levels deep).
type ListDirectoryAction struct {
	DirPath   string `json:"dir_path" acs:"default=."`
	Recursive bool   `json:"recursive"`
}

// ReadFileAction reads a file, optionally a range of lines.
type ReadFileAction struct {
	FilePath string `json:"file_path" acs:"required"`
	Offset   *int   `json:"offset" acs:"ge=0"`
	Limit    *int   `json:"limit" acs:"ge=1"`
}

// WriteFileAction writes a whole file.
type WriteFileAction struct {
	FilePath string `json:"file_path" acs:"required"`
	Content  string `json:"content" acs:"required"`
}

// GlobAction finds files by glob pattern.
type GlobAction struct {
	Pattern string  `json:"pattern" acs:"required"`
	Path    *string `json:"path"`
}

// GrepAction finds files whose content matches a regular expression.
type GrepAction struct {
	Pattern string  `json:"pattern" acs:"required"`
	Path    *string `json:"path"`
	Include *string `json:"include"`
}

// TaskStatus is the status of a task tracker item.
type TaskStatus string

// EnumValues implements strictjson.Enum.
func (TaskStatus) EnumValues() []string { return []string{"todo", "in_progress", "done"} }

// TaskItem is one task of the task tracker.
type TaskItem struct {
	Title  string     `json:"title" acs:"required"`
	Notes  string     `json:"notes"`
	Status TaskStatus `json:"status" acs:"default=todo"`
}

// TaskTrackerCommand is view or plan.
type TaskTrackerCommand string

// EnumValues implements strictjson.Enum.
func (TaskTrackerCommand) EnumValues() []string { return []string{"view", "plan"} }

// TaskTrackerAction views or replaces the task list.
type TaskTrackerAction struct {
	Command  TaskTrackerCommand `json:"command" acs:"default=view"`
	TaskList []TaskItem         `json:"task_list"`
}

// TerminalAction runs a command in the conversation's persistent shell, or
// sends input to the running one (IsInput).
type TerminalAction struct {
	Command string   `json:"command" acs:"required"`
	IsInput bool     `json:"is_input"`
	Timeout *float64 `json:"timeout" acs:"ge=0"`
	Reset   bool     `json:"reset"`
}

func (*MCPToolAction) Kind() string               { return "MCPToolAction" }
func (*FinishAction) Kind() string                { return "FinishAction" }
func (*ThinkAction) Kind() string                 { return "ThinkAction" }
func (*BrowserAction) Kind() string               { return "BrowserAction" }
func (*BrowserClickAction) Kind() string          { return "BrowserClickAction" }
func (*BrowserCloseTabAction) Kind() string       { return "BrowserCloseTabAction" }
func (*BrowserGetContentAction) Kind() string     { return "BrowserGetContentAction" }
func (*BrowserGetStateAction) Kind() string       { return "BrowserGetStateAction" }
func (*BrowserGetStorageAction) Kind() string     { return "BrowserGetStorageAction" }
func (*BrowserGoBackAction) Kind() string         { return "BrowserGoBackAction" }
func (*BrowserListTabsAction) Kind() string       { return "BrowserListTabsAction" }
func (*BrowserNavigateAction) Kind() string       { return "BrowserNavigateAction" }
func (*BrowserScrollAction) Kind() string         { return "BrowserScrollAction" }
func (*BrowserSetStorageAction) Kind() string     { return "BrowserSetStorageAction" }
func (*BrowserStartRecordingAction) Kind() string { return "BrowserStartRecordingAction" }
func (*BrowserStopRecordingAction) Kind() string  { return "BrowserStopRecordingAction" }
func (*BrowserSwitchTabAction) Kind() string      { return "BrowserSwitchTabAction" }
func (*BrowserTypeAction) Kind() string           { return "BrowserTypeAction" }
func (*FileEditorAction) Kind() string            { return "FileEditorAction" }
func (*PlanningFileEditorAction) Kind() string    { return "PlanningFileEditorAction" }
func (*EditAction) Kind() string                  { return "EditAction" }
func (*ListDirectoryAction) Kind() string         { return "ListDirectoryAction" }
func (*ReadFileAction) Kind() string              { return "ReadFileAction" }
func (*WriteFileAction) Kind() string             { return "WriteFileAction" }
func (*GlobAction) Kind() string                  { return "GlobAction" }
func (*GrepAction) Kind() string                  { return "GrepAction" }
func (*TaskTrackerAction) Kind() string           { return "TaskTrackerAction" }
func (*TerminalAction) Kind() string              { return "TerminalAction" }

func (*MCPToolAction) isAction()               {}
func (*FinishAction) isAction()                {}
func (*ThinkAction) isAction()                 {}
func (*BrowserAction) isAction()               {}
func (*BrowserClickAction) isAction()          {}
func (*BrowserCloseTabAction) isAction()       {}
func (*BrowserGetContentAction) isAction()     {}
func (*BrowserGetStateAction) isAction()       {}
func (*BrowserGetStorageAction) isAction()     {}
func (*BrowserGoBackAction) isAction()         {}
func (*BrowserListTabsAction) isAction()       {}
func (*BrowserNavigateAction) isAction()       {}
func (*BrowserScrollAction) isAction()         {}
func (*BrowserSetStorageAction) isAction()     {}
func (*BrowserStartRecordingAction) isAction() {}
func (*BrowserStopRecordingAction) isAction()  {}
func (*BrowserSwitchTabAction) isAction()      {}
func (*BrowserTypeAction) isAction()           {}
func (*FileEditorAction) isAction()            {}
func (*PlanningFileEditorAction) isAction()    {}
func (*EditAction) isAction()                  {}
func (*ListDirectoryAction) isAction()         {}
func (*ReadFileAction) isAction()              {}
func (*WriteFileAction) isAction()             {}
func (*GlobAction) isAction()                  {}
func (*GrepAction) isAction()                  {}
func (*TaskTrackerAction) isAction()           {}
func (*TerminalAction) isAction()              {}

var actionKinds = map[string]func() Action{
	"MCPToolAction":               func() Action { return &MCPToolAction{} },
	"FinishAction":                func() Action { return &FinishAction{} },
	"ThinkAction":                 func() Action { return &ThinkAction{} },
	"BrowserAction":               func() Action { return &BrowserAction{} },
	"BrowserClickAction":          func() Action { return &BrowserClickAction{} },
	"BrowserCloseTabAction":       func() Action { return &BrowserCloseTabAction{} },
	"BrowserGetContentAction":     func() Action { return &BrowserGetContentAction{} },
	"BrowserGetStateAction":       func() Action { return &BrowserGetStateAction{} },
	"BrowserGetStorageAction":     func() Action { return &BrowserGetStorageAction{} },
	"BrowserGoBackAction":         func() Action { return &BrowserGoBackAction{} },
	"BrowserListTabsAction":       func() Action { return &BrowserListTabsAction{} },
	"BrowserNavigateAction":       func() Action { return &BrowserNavigateAction{} },
	"BrowserScrollAction":         func() Action { return &BrowserScrollAction{} },
	"BrowserSetStorageAction":     func() Action { return &BrowserSetStorageAction{} },
	"BrowserStartRecordingAction": func() Action { return &BrowserStartRecordingAction{} },
	"BrowserStopRecordingAction":  func() Action { return &BrowserStopRecordingAction{} },
	"BrowserSwitchTabAction":      func() Action { return &BrowserSwitchTabAction{} },
	"BrowserTypeAction":           func() Action { return &BrowserTypeAction{} },
	"FileEditorAction":            func() Action { return &FileEditorAction{} },
	"PlanningFileEditorAction":    func() Action { return &PlanningFileEditorAction{} },
	"EditAction":                  func() Action { return &EditAction{} },
	"ListDirectoryAction":         func() Action { return &ListDirectoryAction{} },
	"ReadFileAction":              func() Action { return &ReadFileAction{} },
	"WriteFileAction":             func() Action { return &WriteFileAction{} },
	"GlobAction":                  func() Action { return &GlobAction{} },
	"GrepAction":                  func() Action { return &GrepAction{} },
	"TaskTrackerAction":           func() Action { return &TaskTrackerAction{} },
	"TerminalAction":              func() Action { return &TerminalAction{} },
}

// ActionKinds lists every action kind, sorted.
func ActionKinds() []string { return sortedKeys(actionKinds) }

// NewAction returns a zero action of the given kind, or false.
func NewAction(kind string) (Action, bool) {
	f, ok := actionKinds[kind]
	if !ok {
		return nil, false
	}
	return f(), true
}

// DecodeAction decodes an action strictly from JSON. Tools use it to turn
// LLM arguments into an action: kind may be given by the caller instead of the
// JSON (the LLM never sends it).
func DecodeAction(kind string, args []byte) (Action, error) {
	a, ok := NewAction(kind)
	if !ok {
		return nil, fmt.Errorf("unknown action kind %q", kind)
	}
	if err := strictjson.Unmarshal(args, a); err != nil {
		return nil, err
	}
	return a, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func init() {
	strictjson.RegisterUnion[Action](&strictjson.Union{
		Key: "kind", Tags: ActionKinds(),
		New: func(tag string) (any, bool) {
			a, ok := NewAction(tag)
			return a, ok
		},
	})
}
