package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

const globDescription = `Finds files by name with a glob pattern.
* ` + "`*`" + ` and ` + "`?`" + ` match within one path component, ` + "`**`" + ` matches any number of directories, ` + "`[abc]`" + ` is a character class and ` + "`{a,b}`" + ` lists alternatives.
* The pattern is matched against paths relative to the search directory: "*.go" finds Go files at its top level only; "**/*.go" finds them at every level.
* Returns the absolute paths of matching files (never directories), the most recently modified first. At most {{.MaxResults}} paths are returned: when the response says the results are truncated, use a more specific pattern or path.
* Hidden files and directories (names starting with ".") and directories excluded by .gitignore are skipped unless the pattern names them, e.g. ".github/**/*.yml" or "node_modules/react/**/*.js".
* To search inside files, use the grep tool.

Examples:
- All Go files: "**/*.go"
- Python tests under src: "src/**/test_*.py"
- Configuration files: "**/*.{json,yaml,yml,toml}"`

// globArgs are the arguments of glob (events.GlobAction).
type globArgs struct {
	Pattern string  `json:"pattern" jsonschema:"required" description:"The glob pattern to match file paths against, e.g. \"**/*.js\" or \"src/**/*.ts\"."`
	Path    *string `json:"path" description:"The directory to search in. Defaults to the working directory. Absolute, or relative to the working directory."`
}

var _ = events.GlobAction(globArgs{})

// searchLimits are the limits glob's and grep's descriptions state.
var searchLimits = struct{ MaxResults int }{fstools.MaxSearchResults}

type globTool struct{ fsTool }

func newGlob(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[globArgs]("GlobTool", globDescription, searchLimits))
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

func init() { Register("glob", newGlob) }
