package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

const readFileDescription = `Reads a text file and returns its lines, numbered from 1.
* By default the whole file is returned, up to {{.MaxLines}} lines (and {{.MaxKiB}} KiB). When the file is longer, the response says so and gives the offset to read on from.
* ` + "`offset`" + ` is the 0-based index of the first line to return and ` + "`limit`" + ` the number of lines; use them to read a large file in parts, e.g. offset={{.MaxLines}}, limit={{.MaxLines}}.
* Binary files cannot be read.
* The line numbers are not part of the file: leave them out when you copy text into an edit.`

// readFileArgs are the arguments of read_file (events.ReadFileAction).
type readFileArgs struct {
	FilePath string `json:"file_path" jsonschema:"required" description:"The file to read. Absolute, or relative to the working directory."`
	Offset   *int   `json:"offset" jsonschema:"minimum=0" description:"The 0-based line number to start reading from. Use it with limit to read a large file in parts."`
	Limit    *int   `json:"limit" jsonschema:"minimum=1" description:"The maximum number of lines to read (at most {{.MaxLines}})."`
}

var _ = events.ReadFileAction(readFileArgs{})

// readFileLimits are the limits read_file's description states.
var readFileLimits = struct{ MaxLines, MaxKiB int }{fstools.MaxReadLines, fstools.MaxReadBytes >> 10}

type readFileTool struct{ fsTool }

func newReadFile(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[readFileArgs]("ReadFileTool", readFileDescription, readFileLimits))
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

func init() { Register("read_file", newReadFile) }
