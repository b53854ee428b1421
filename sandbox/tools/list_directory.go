package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

const listDirectoryDescription = `Lists the contents of a directory.
* For each entry: its name, absolute path, whether it is a directory, its size in bytes and its last modification time.
* By default only the immediate contents are listed; with recursive=true the contents of subdirectories are listed too, {{.Depth}} levels deep.
* Directories come first, then files, each sorted by name. Hidden entries (names starting with ".") are not listed. At most {{.MaxEntries}} entries are returned.
* To find files by name across many directories, use the glob tool.`

// listDirectoryArgs are the arguments of list_directory
// (events.ListDirectoryAction).
type listDirectoryArgs struct {
	DirPath   string `json:"dir_path" jsonschema:"default=." description:"The directory to list. Defaults to the working directory. Absolute, or relative to the working directory."`
	Recursive bool   `json:"recursive" jsonschema:"default=false" description:"Also list the contents of subdirectories, {{.Depth}} levels deep."`
}

var _ = events.ListDirectoryAction(listDirectoryArgs{})

// listDirectoryLimits are the limits list_directory's description states.
var listDirectoryLimits = struct{ Depth, MaxEntries int }{fstools.RecursiveListDepth, fstools.MaxListEntries}

type listDirectoryTool struct{ fsTool }

func newListDirectory(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[listDirectoryArgs]("ListDirectoryTool", listDirectoryDescription, listDirectoryLimits))
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

func init() { Register("list_directory", newListDirectory) }
