package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

// The file tools (glob, grep, list_directory, read_file, write_file, edit)
// and the task tracker, adapted from package fstools. The file tools are
// confined to the conversation's working directory: relative paths resolve
// against it and no path may lead outside it (symbolic links included).

const globDescription = `Finds files by name with a glob pattern.
* ` + "`*`" + ` and ` + "`?`" + ` match within one path component, ` + "`**`" + ` matches any number of directories, ` + "`[abc]`" + ` is a character class and ` + "`{a,b}`" + ` lists alternatives.
* The pattern is matched against paths relative to the search directory: "*.go" finds Go files at its top level only; "**/*.go" finds them at every level.
* Returns the absolute paths of matching files (never directories), the most recently modified first. At most 100 paths are returned: when the response says the results are truncated, use a more specific pattern or path.
* Hidden files and directories (names starting with ".") and directories excluded by .gitignore are skipped unless the pattern names them, e.g. ".github/**/*.yml" or "node_modules/react/**/*.js".
* To search inside files, use the grep tool.

Examples:
- All Go files: "**/*.go"
- Python tests under src: "src/**/test_*.py"
- Configuration files: "**/*.{json,yaml,yml,toml}"`

const grepDescription = `Finds the files whose content matches a regular expression.
* Lists the files containing at least one line that matches the pattern (not the matching lines: read the files to see them).
* Regular expression syntax (RE2): "log.*Error", "func\s+\w+", "TODO|FIXME", "^import ". Matching is case-sensitive: start the pattern with (?i) to ignore case. A match cannot span several lines. Look-around and back-references are not supported.
* ` + "`include`" + ` restricts the search to files whose name matches a glob, e.g. "*.go" or "*.{ts,tsx}".
* Returns absolute paths, the most recently modified first. At most 100 paths are returned: when the response says the results are truncated, use a more specific pattern, path or include filter.
* Hidden files and directories (names starting with "."), binary files and files excluded by .gitignore are skipped.

Examples:
- Function definitions: pattern "def\s+\w+", include "*.py"
- Error messages in TypeScript: pattern "throw new \w*Error", include "*.{ts,tsx}"`

const listDirectoryDescription = `Lists the contents of a directory.
* For each entry: its name, absolute path, whether it is a directory, its size in bytes and its last modification time.
* By default only the immediate contents are listed; with recursive=true the contents of subdirectories are listed too, 2 levels deep.
* Directories come first, then files, each sorted by name. Hidden entries (names starting with ".") are not listed. At most 1000 entries are returned.
* To find files by name across many directories, use the glob tool.`

const readFileDescription = `Reads a text file and returns its lines, numbered from 1.
* By default the whole file is returned, up to 2000 lines (and 256 KiB). When the file is longer, the response says so and gives the offset to read on from.
* ` + "`offset`" + ` is the 0-based index of the first line to return and ` + "`limit`" + ` the number of lines; use them to read a large file in parts, e.g. offset=2000, limit=2000.
* Binary files cannot be read.
* The line numbers are not part of the file: leave them out when you copy text into an edit.`

const writeFileDescription = `Writes a whole file: creates it (and its missing parent directories) or replaces all of its content.
* Use it to create new files or to rewrite a file completely. For targeted changes to an existing file, prefer the edit tool.
* The content is written exactly as given: end it with a newline if the file should end with one.
* An existing file keeps its permissions.`

const editDescription = `Replaces text in a file: every occurrence of old_string becomes new_string.
* old_string must match the file exactly, including whitespace and indentation, and occur exactly expected_replacements times (default 1). Otherwise nothing is changed and the response says how many occurrences were found.
* Include enough surrounding context (3-5 lines) in old_string to single out the place to change, or set expected_replacements to change several identical occurrences at once.
* old_string and new_string must differ.
* To create a file, use an empty old_string: new_string becomes the file's content (the file must not exist, or be empty).
* Read the file with read_file first to copy the exact text. For large rewrites, use write_file.

Examples:
- Replace one occurrence: file_path "app.py", old_string "return x", new_string "return x + 1"
- Rename everywhere in a file: old_string "oldName", new_string "newName", expected_replacements 3
- Create a file: file_path "docs/notes.md", old_string "", new_string "# Notes\n"`

const taskTrackerDescription = `Keeps a structured task list for multi-step work, so that progress stays visible to you and the user.

Use it when the work has several steps or parts, when the user asks for a plan or gives several requirements, and to record tasks you discover on the way. Skip it for a single simple step or a pure question.

Commands:
* ` + "`view`" + ` shows the current list.
* ` + "`plan`" + ` replaces the whole list with task_list: always send every task, including the finished ones (view the list first if you are unsure of it).

Each task has a title, optional notes and a status:
* todo: not started;
* in_progress: being worked on (keep only one task in progress at a time);
* done: completed. Mark a task done only when it is fully achieved (tests passing, nothing left unresolved); otherwise keep it in progress and add a task for what blocks it.

Update the list as you go: mark a task in_progress before starting it and done as soon as it is finished.`

// withKeys adds JSON Schema keywords to a property.
func withKeys(p map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

const pathNote = " Absolute, or relative to the working directory."

func globParams() map[string]any {
	return object([]string{"pattern"}, map[string]any{
		"pattern": prop("string", `The glob pattern to match file paths against, e.g. "**/*.js" or "src/**/*.ts".`),
		"path":    prop("string", "The directory to search in. Defaults to the working directory."+pathNote),
	})
}

func grepParams() map[string]any {
	return object([]string{"pattern"}, map[string]any{
		"pattern": prop("string", "The regular expression to search for in file contents."),
		"path":    prop("string", "The directory to search in. Defaults to the working directory."+pathNote),
		"include": prop("string", `Only search files whose name matches this glob, e.g. "*.js" or "*.{ts,tsx}".`),
	})
}

func listDirectoryParams() map[string]any {
	return object(nil, map[string]any{
		"dir_path":  withKeys(prop("string", "The directory to list. Defaults to the working directory."+pathNote), "default", "."),
		"recursive": withKeys(prop("boolean", "Also list the contents of subdirectories, 2 levels deep."), "default", false),
	})
}

func readFileParams() map[string]any {
	return object([]string{"file_path"}, map[string]any{
		"file_path": prop("string", "The file to read."+pathNote),
		"offset":    withKeys(prop("integer", "The 0-based line number to start reading from. Use it with limit to read a large file in parts."), "minimum", 0),
		"limit":     withKeys(prop("integer", "The maximum number of lines to read (at most 2000)."), "minimum", 1),
	})
}

func writeFileParams() map[string]any {
	return object([]string{"file_path", "content"}, map[string]any{
		"file_path": prop("string", "The file to write."+pathNote),
		"content":   prop("string", "The complete content to write to the file."),
	})
}

func editParams() map[string]any {
	return object([]string{"file_path", "old_string", "new_string"}, map[string]any{
		"file_path":  prop("string", "The file to edit."+pathNote),
		"old_string": prop("string", "The exact text to replace (including whitespace and indentation). An empty string creates a new file."),
		"new_string": prop("string", "The text to replace old_string with (the file's content when creating a file)."),
		"expected_replacements": withKeys(prop("integer", "How many occurrences of old_string the file must contain; all of them are replaced."),
			"minimum", 1, "default", 1),
	})
}

func taskTrackerParams() map[string]any {
	item := object([]string{"title"}, map[string]any{
		"title": prop("string", "A short, actionable description of the task."),
		"notes": prop("string", "Optional details: approach, findings, what blocks it."),
		"status": map[string]any{"type": "string", "enum": []string{"todo", "in_progress", "done"},
			"description": "todo (not started), in_progress (being worked on) or done (completed).", "default": "todo"},
	})
	return object(nil, map[string]any{
		"command": map[string]any{"type": "string", "enum": []string{"view", "plan"}, "default": "view",
			"description": "`view` shows the task list; `plan` replaces it with task_list."},
		"task_list": map[string]any{"type": "array", "items": item,
			"description": "The complete task list. Required by `plan`."},
	})
}

// execute type-asserts the action and runs f, never returning a typed nil
// observation inside the interface.
func execute[A events.Action, O events.Observation](ctx context.Context, name string, a events.Action, mask func(string) string, f func(context.Context, A) (O, error)) (events.Observation, error) {
	act, ok := a.(A)
	if !ok {
		return nil, fmt.Errorf("%s: unexpected action %T", name, a)
	}
	obs, err := f(ctx, act)
	if err != nil {
		return nil, err
	}
	maskText(obs, mask)
	return obs, nil
}

// maskText applies the environment's secret mask to the text the LLM sees.
func maskText(o events.Observation, mask func(string) string) {
	if mask == nil {
		return
	}
	for _, c := range o.Common().Content {
		if t, ok := c.(*events.TextContent); ok {
			t.Text = mask(t.Text)
		}
	}
	if rf, ok := o.(*events.ReadFileObservation); ok {
		rf.FileContent = mask(rf.FileContent)
	}
}

// fsTool is a file tool confined to the working directory.
type fsTool struct {
	base
	root fstools.Root
	mask func(string) string
}

func newFSTool(env Env, kind events.ToolKind, description string, params map[string]any) (fsTool, error) {
	if env.WorkDir == "" || !filepath.IsAbs(env.WorkDir) {
		return fsTool{}, fmt.Errorf("working directory %q must be an absolute path", env.WorkDir)
	}
	return fsTool{base: base{kind: kind, description: description, params: params},
		root: fstools.Root{Root: env.WorkDir, WorkDir: env.WorkDir}, mask: env.Mask}, nil
}

type globTool struct{ fsTool }

func newGlob(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "GlobTool", globDescription, globParams())
	if err != nil {
		return nil, err
	}
	return &globTool{t}, nil
}

func (t *globTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "glob", a, t.mask, func(ctx context.Context, a *events.GlobAction) (*events.GlobObservation, error) {
		return fstools.Glob(ctx, t.root, a)
	})
}

type grepTool struct{ fsTool }

func newGrep(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "GrepTool", grepDescription, grepParams())
	if err != nil {
		return nil, err
	}
	return &grepTool{t}, nil
}

func (t *grepTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "grep", a, t.mask, func(ctx context.Context, a *events.GrepAction) (*events.GrepObservation, error) {
		return fstools.Grep(ctx, t.root, a)
	})
}

type listDirectoryTool struct{ fsTool }

func newListDirectory(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "ListDirectoryTool", listDirectoryDescription, listDirectoryParams())
	if err != nil {
		return nil, err
	}
	return &listDirectoryTool{t}, nil
}

func (t *listDirectoryTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "list_directory", a, t.mask, func(ctx context.Context, a *events.ListDirectoryAction) (*events.ListDirectoryObservation, error) {
		return fstools.ListDirectory(ctx, t.root, a)
	})
}

type readFileTool struct{ fsTool }

func newReadFile(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "ReadFileTool", readFileDescription, readFileParams())
	if err != nil {
		return nil, err
	}
	return &readFileTool{t}, nil
}

func (t *readFileTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "read_file", a, t.mask, func(ctx context.Context, a *events.ReadFileAction) (*events.ReadFileObservation, error) {
		return fstools.ReadFile(ctx, t.root, a)
	})
}

type writeFileTool struct{ fsTool }

func newWriteFile(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "WriteFileTool", writeFileDescription, writeFileParams())
	if err != nil {
		return nil, err
	}
	return &writeFileTool{t}, nil
}

func (t *writeFileTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "write_file", a, t.mask, func(ctx context.Context, a *events.WriteFileAction) (*events.WriteFileObservation, error) {
		return fstools.WriteFile(ctx, t.root, a)
	})
}

type editTool struct{ fsTool }

func newEdit(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, "EditTool", editDescription, editParams())
	if err != nil {
		return nil, err
	}
	return &editTool{t}, nil
}

func (t *editTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "edit", a, t.mask, func(ctx context.Context, a *events.EditAction) (*events.EditObservation, error) {
		return fstools.Edit(ctx, t.root, a)
	})
}

// taskTrackerTool persists the task list in the conversation's state
// directory (TASKS.json), so that it survives a restart.
type taskTrackerTool struct {
	base
	tracker *fstools.TaskTracker
	mask    func(string) string
}

func newTaskTracker(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	if env.StateDir == "" {
		return nil, errors.New("task_tracker needs a state directory")
	}
	tr, err := fstools.NewTaskTracker(filepath.Join(env.StateDir, "TASKS.json"))
	if err != nil {
		return nil, err
	}
	return &taskTrackerTool{base: base{kind: "TaskTrackerTool", description: taskTrackerDescription, params: taskTrackerParams()},
		tracker: tr, mask: env.Mask}, nil
}

func (t *taskTrackerTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "task_tracker", a, t.mask, t.tracker.Execute)
}

func init() {
	Register("glob", newGlob)
	Register("grep", newGrep)
	Register("list_directory", newListDirectory)
	Register("read_file", newReadFile)
	Register("write_file", newWriteFile)
	Register("edit", newEdit)
	Register("task_tracker", newTaskTracker)
}
