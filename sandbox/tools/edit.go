package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

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

// editArgs are the arguments of edit (events.EditAction).
type editArgs struct {
	FilePath             string `json:"file_path" jsonschema:"required" description:"The file to edit. Absolute, or relative to the working directory."`
	OldString            string `json:"old_string" jsonschema:"required" description:"The exact text to replace (including whitespace and indentation). An empty string creates a new file."`
	NewString            string `json:"new_string" jsonschema:"required" description:"The text to replace old_string with (the file's content when creating a file)."`
	ExpectedReplacements int    `json:"expected_replacements" jsonschema:"minimum=1,default=1" description:"How many occurrences of old_string the file must contain; all of them are replaced."`
}

var _ = events.EditAction(editArgs{})

type editTool struct{ fsTool }

func newEdit(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[editArgs]("EditTool", editDescription, nil))
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

func init() { Register("edit", newEdit) }
