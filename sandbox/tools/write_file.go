package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

const writeFileDescription = `Writes a whole file: creates it (and its missing parent directories) or replaces all of its content.
* Use it to create new files or to rewrite a file completely. For targeted changes to an existing file, prefer the edit tool.
* The content is written exactly as given: end it with a newline if the file should end with one.
* An existing file keeps its permissions.`

// writeFileArgs are the arguments of write_file (events.WriteFileAction).
type writeFileArgs struct {
	FilePath string `json:"file_path" jsonschema:"required" description:"The file to write. Absolute, or relative to the working directory."`
	Content  string `json:"content" jsonschema:"required" description:"The complete content to write to the file."`
}

var _ = events.WriteFileAction(writeFileArgs{})

type writeFileTool struct{ fsTool }

func newWriteFile(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[writeFileArgs]("WriteFileTool", writeFileDescription, nil))
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

func init() { Register("write_file", newWriteFile) }
