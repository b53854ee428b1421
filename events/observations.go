package events

import "github.com/acs-project/acs/events/strictjson"

// Observation is the payload of ObservationEvent.observation, discriminated by
// "kind". Every observation has content and is_error (ObservationBase).
type Observation interface {
	Kind() string
	Common() *ObservationBase
}

// ObservationBase holds what every observation has: the content the LLM sees
// and whether the tool failed in a way the model can act on.
type ObservationBase struct {
	Content []Content `json:"content"`
	IsError bool      `json:"is_error"`
}

// Common implements Observation.
func (o *ObservationBase) Common() *ObservationBase { return o }

// Text concatenates the observation's text content.
func (o *ObservationBase) Text() string {
	m := Message{Content: o.Content}
	return m.Text()
}

// SetText replaces the content with one text block.
func (o *ObservationBase) SetText(s string) { o.Content = []Content{TextItem(s)} }

// MCPToolObservation is the result of an MCP tool call.
type MCPToolObservation struct {
	ObservationBase
	ToolName string `json:"tool_name" acs:"required"`
}

// FinishObservation echoes the final message.
type FinishObservation struct{ ObservationBase }

// ThinkObservation acknowledges a thought.
type ThinkObservation struct{ ObservationBase }

// BrowserObservation is the result of a browser action.
type BrowserObservation struct {
	ObservationBase
	ScreenshotData    *string `json:"screenshot_data"`
	FullOutputSaveDir *string `json:"full_output_save_dir"`
}

// FileEditorResult is what file_editor and planning_file_editor report.
type FileEditorResult struct {
	Command    EditorCommand `json:"command" acs:"required"`
	Path       *string       `json:"path"`
	PrevExist  bool          `json:"prev_exist" acs:"default=true"`
	OldContent *string       `json:"old_content"`
	NewContent *string       `json:"new_content"`
}

// FileEditorObservation is the result of a file_editor command.
type FileEditorObservation struct {
	ObservationBase
	FileEditorResult
}

// PlanningFileEditorObservation is the result of a planning_file_editor
// command.
type PlanningFileEditorObservation struct {
	ObservationBase
	FileEditorResult
}

// EditObservation is the result of an edit.
type EditObservation struct {
	ObservationBase
	FilePath         *string `json:"file_path"`
	IsNewFile        bool    `json:"is_new_file"`
	ReplacementsMade int     `json:"replacements_made" acs:"ge=0"`
	OldContent       *string `json:"old_content"`
	NewContent       *string `json:"new_content"`
}

// FileEntry is one entry of a directory listing.
type FileEntry struct {
	Name         string `json:"name" acs:"required"`
	Path         string `json:"path" acs:"required"`
	IsDirectory  bool   `json:"is_directory"`
	Size         int64  `json:"size" acs:"ge=0"`
	ModifiedTime Time   `json:"modified_time" acs:"required"`
}

// ListDirectoryObservation is a directory listing.
type ListDirectoryObservation struct {
	ObservationBase
	DirPath     *string     `json:"dir_path"`
	Entries     []FileEntry `json:"entries"`
	TotalCount  int         `json:"total_count" acs:"ge=0"`
	IsTruncated bool        `json:"is_truncated"`
}

// ReadFileObservation is the content of a file, or a range of its lines.
type ReadFileObservation struct {
	ObservationBase
	FilePath    string `json:"file_path" acs:"required"`
	FileContent string `json:"file_content"`
	IsTruncated bool   `json:"is_truncated"`
	LinesShown  []int  `json:"lines_shown" acs:"nullable,len=2"`
	TotalLines  *int   `json:"total_lines" acs:"ge=0"`
}

// WriteFileObservation is the result of writing a file.
type WriteFileObservation struct {
	ObservationBase
	FilePath   *string `json:"file_path"`
	IsNewFile  bool    `json:"is_new_file"`
	OldContent *string `json:"old_content"`
	NewContent *string `json:"new_content"`
}

// GlobObservation lists files matching a pattern (at most 100).
type GlobObservation struct {
	ObservationBase
	Files      []string `json:"files"`
	Pattern    string   `json:"pattern" acs:"required"`
	SearchPath string   `json:"search_path" acs:"required"`
	Truncated  bool     `json:"truncated"`
}

// GrepObservation lists files whose content matches (at most 100).
type GrepObservation struct {
	ObservationBase
	Matches        []string `json:"matches"`
	Pattern        string   `json:"pattern" acs:"required"`
	SearchPath     string   `json:"search_path" acs:"required"`
	IncludePattern *string  `json:"include_pattern"`
	Truncated      bool     `json:"truncated"`
}

// TaskTrackerObservation is the task list after a view or plan.
type TaskTrackerObservation struct {
	ObservationBase
	Command  TaskTrackerCommand `json:"command" acs:"default=view"`
	TaskList []TaskItem         `json:"task_list"`
}

// TerminalMetadata describes the shell after a command.
type TerminalMetadata struct {
	ExitCode          int     `json:"exit_code" acs:"default=-1"`
	PID               int     `json:"pid" acs:"default=-1"`
	Username          *string `json:"username"`
	Hostname          *string `json:"hostname"`
	WorkingDir        *string `json:"working_dir"`
	PyInterpreterPath *string `json:"py_interpreter_path"`
	Prefix            string  `json:"prefix"`
	Suffix            string  `json:"suffix"`
}

// TerminalObservation is the output of a terminal command. ExitCode -1 means
// the command is still running (a timeout).
type TerminalObservation struct {
	ObservationBase
	Command           *string          `json:"command"`
	ExitCode          *int             `json:"exit_code"`
	Timeout           bool             `json:"timeout"`
	Metadata          TerminalMetadata `json:"metadata"`
	FullOutputSaveDir *string          `json:"full_output_save_dir"`
}

func (*MCPToolObservation) Kind() string            { return "MCPToolObservation" }
func (*FinishObservation) Kind() string             { return "FinishObservation" }
func (*ThinkObservation) Kind() string              { return "ThinkObservation" }
func (*BrowserObservation) Kind() string            { return "BrowserObservation" }
func (*FileEditorObservation) Kind() string         { return "FileEditorObservation" }
func (*PlanningFileEditorObservation) Kind() string { return "PlanningFileEditorObservation" }
func (*EditObservation) Kind() string               { return "EditObservation" }
func (*ListDirectoryObservation) Kind() string      { return "ListDirectoryObservation" }
func (*ReadFileObservation) Kind() string           { return "ReadFileObservation" }
func (*WriteFileObservation) Kind() string          { return "WriteFileObservation" }
func (*GlobObservation) Kind() string               { return "GlobObservation" }
func (*GrepObservation) Kind() string               { return "GrepObservation" }
func (*TaskTrackerObservation) Kind() string        { return "TaskTrackerObservation" }
func (*TerminalObservation) Kind() string           { return "TerminalObservation" }

var observationKinds = map[string]func() Observation{
	"MCPToolObservation":            func() Observation { return &MCPToolObservation{} },
	"FinishObservation":             func() Observation { return &FinishObservation{} },
	"ThinkObservation":              func() Observation { return &ThinkObservation{} },
	"BrowserObservation":            func() Observation { return &BrowserObservation{} },
	"FileEditorObservation":         func() Observation { return &FileEditorObservation{} },
	"PlanningFileEditorObservation": func() Observation { return &PlanningFileEditorObservation{} },
	"EditObservation":               func() Observation { return &EditObservation{} },
	"ListDirectoryObservation":      func() Observation { return &ListDirectoryObservation{} },
	"ReadFileObservation":           func() Observation { return &ReadFileObservation{} },
	"WriteFileObservation":          func() Observation { return &WriteFileObservation{} },
	"GlobObservation":               func() Observation { return &GlobObservation{} },
	"GrepObservation":               func() Observation { return &GrepObservation{} },
	"TaskTrackerObservation":        func() Observation { return &TaskTrackerObservation{} },
	"TerminalObservation":           func() Observation { return &TerminalObservation{} },
}

// ObservationKinds lists every observation kind, sorted.
func ObservationKinds() []string { return sortedKeys(observationKinds) }

// NewObservation returns a zero observation of the given kind, or false.
func NewObservation(kind string) (Observation, bool) {
	f, ok := observationKinds[kind]
	if !ok {
		return nil, false
	}
	return f(), true
}

func init() {
	strictjson.RegisterUnion[Observation](&strictjson.Union{
		Key: "kind", Tags: ObservationKinds(),
		New: func(tag string) (any, bool) {
			o, ok := NewObservation(tag)
			return o, ok
		},
	})
}
