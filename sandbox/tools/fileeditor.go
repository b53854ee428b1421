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

func fileEditorParams() map[string]any {
	return object([]string{"command", "path"}, map[string]any{
		"command": map[string]any{"type": "string", "enum": []string{"view", "create", "str_replace", "insert", "undo_edit"},
			"description": "The commands to run. Allowed options are: `view`, `create`, `str_replace`, `insert`, `undo_edit`."},
		"path":        prop("string", "Absolute path to file or directory, e.g. `/workspace/file.py` or `/workspace`."),
		"file_text":   prop("string", "Required parameter of `create` command, with the content of the file to be created."),
		"old_str":     prop("string", "Required parameter of `str_replace` command containing the string in `path` to replace."),
		"new_str":     prop("string", "Optional parameter of `str_replace` command containing the new string (if not given, no string will be added). Required parameter of `insert` command containing the string to insert."),
		"insert_line": prop("integer", "Required parameter of `insert` command. The `new_str` will be inserted AFTER the line `insert_line` of `path`."),
		"view_range": map[string]any{"type": "array", "items": map[string]any{"type": "integer"},
			"description": "Optional parameter of `view` command when `path` points to a file. If none is given, the full file is shown. If provided, the file will be shown in the indicated line number range, e.g. [11, 12] will show lines 11 and 12. Indexing at 1 to start. Setting `[start_line, -1]` shows all lines from `start_line` to the end of the file."},
	})
}

type fileEditorTool struct {
	base
	ed *fileeditor.Editor
}

func newFileEditor(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	ed, err := fileeditor.New(fileeditor.Options{Root: env.WorkDir, HistoryDir: filepath.Join(env.StateDir, "editor_history")})
	if err != nil {
		return nil, err
	}
	return &fileEditorTool{base: base{kind: "FileEditorTool", description: fileEditorDescription, params: fileEditorParams()}, ed: ed}, nil
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

const planningDescription = `Edit the plan file of this task. Use it to write and keep up to date a plan: the goal, the steps, what is done and what is left.
* ` + "`view`" + ` works on any file or directory in the workspace, so you can read code while planning.
* Every other command (` + "`create`, `str_replace`, `insert`, `undo_edit`" + `) only works on the plan file, ` + "`.agents_tmp/PLAN.md`" + ` under the working directory.
* Paths must be absolute.`

// PlanFile is where planning_file_editor keeps the plan, relative to the
// working directory.
const PlanFile = ".agents_tmp/PLAN.md"

type planningTool struct {
	base
	ed   *fileeditor.Editor
	plan string
}

func newPlanningEditor(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	ed, err := fileeditor.New(fileeditor.Options{Root: env.WorkDir, HistoryDir: filepath.Join(env.StateDir, "planning_history")})
	if err != nil {
		return nil, err
	}
	return &planningTool{base: base{kind: "PlanningFileEditorTool", description: planningDescription, params: fileEditorParams()},
		ed: ed, plan: filepath.Join(env.WorkDir, PlanFile)}, nil
}

func (t *planningTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	pa, ok := a.(*events.PlanningFileEditorAction)
	if !ok {
		return nil, fmt.Errorf("planning_file_editor: unexpected action %T", a)
	}
	obs, err := t.ed.ExecutePlanning(ctx, &pa.FileEditorFields, t.plan)
	if err != nil {
		return nil, err
	}
	return obs, nil
}

func (t *planningTool) Close() error { return t.ed.Close() }

func init() { Register("planning_file_editor", newPlanningEditor) }
