package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fileeditor"
)

const fileEditorDescription = `Custom editing tool for viewing, creating and editing files in plain-text format.
* State is persistent across command calls and discussions with the user.
* If ` + "`path`" + ` is a text file, ` + "`view`" + ` displays the result of applying ` + "`cat -n`" + `. If ` + "`path`" + ` is a directory, ` + "`view`" + ` lists non-hidden files and directories up to 2 levels deep.
* The ` + "`create`" + ` command cannot be used if the specified ` + "`path`" + ` already exists as a file.
* If a ` + "`command`" + ` generates a long output, it will be truncated and marked with ` + "`<response clipped>`" + `.
* The ` + "`undo_edit`" + ` command will revert the last edit made to the file at ` + "`path`" + `.

Before using this tool:
1. Use the view command to understand the file's contents and context.
2. Verify the directory path is correct (only applicable when creating new files).

When making edits:
- Ensure the edit results in idiomatic, correct code.
- Do not leave the code in a broken state.
- Always use absolute file paths (starting with /).

CRITICAL REQUIREMENTS FOR USING THIS TOOL:
1. EXACT MATCHING: The ` + "`old_str`" + ` parameter must match EXACTLY one or more consecutive lines from the file, including all whitespace and indentation.
2. UNIQUENESS: The ` + "`old_str`" + ` must uniquely identify a single instance in the file: include enough context (3-5 lines) before and after the change point.
3. REPLACEMENT: The ` + "`new_str`" + ` parameter should contain the edited lines that replace the ` + "`old_str`" + `. Both strings must be different.`

// fileEditorArgs are the arguments of file_editor and planning_file_editor
// (events.FileEditorFields).
type fileEditorArgs struct {
	Command    events.EditorCommand "json:\"command\" jsonschema:\"required\" description:\"The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`.\""
	Path       string               "json:\"path\" jsonschema:\"required\" description:\"Absolute path to file or directory, e.g. `/workspace/file.py` or `/workspace`.\""
	FileText   *string              "json:\"file_text\" description:\"Required parameter of `create` command, with the content of the file to be created.\""
	OldStr     *string              "json:\"old_str\" description:\"Required parameter of `str_replace` command containing the string in `path` to replace.\""
	NewStr     *string              "json:\"new_str\" description:\"Optional parameter of `str_replace` command containing the new string (if not given, no string will be added). Required parameter of `insert` command containing the string to insert.\""
	InsertLine *int                 "json:\"insert_line\" description:\"Required parameter of `insert` command. The `new_str` will be inserted AFTER the line `insert_line` of `path`.\""
	ViewRange  []int                "json:\"view_range\" description:\"Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file.\""
}

var _ = events.FileEditorFields(fileEditorArgs{})

type fileEditorTool struct {
	base
	ed *fileeditor.Editor
}

func newFileEditor(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	ed, err := fileeditor.New(fileeditor.Options{Root: env.WorkDir, HistoryDir: filepath.Join(env.StateDir, "editor_history")})
	if err != nil {
		return nil, err
	}
	return &fileEditorTool{base: newBase[fileEditorArgs]("FileEditorTool", fileEditorDescription, nil), ed: ed}, nil
}

func (t *fileEditorTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	fa, ok := a.(*events.FileEditorAction)
	if !ok {
		return nil, fmt.Errorf("file_editor: unexpected action %T", a)
	}
	obs, err := t.ed.Execute(ctx, &fa.FileEditorFields)
	if err != nil {
		return nil, err
	}
	return obs, nil
}

func (t *fileEditorTool) Close() error { return t.ed.Close() }

func init() { Register("file_editor", newFileEditor) }
