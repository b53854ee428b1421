package tools

import (
	"context"
	"encoding/json"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

const grepDescription = `Finds the files whose content matches a regular expression.
* Lists the files containing at least one line that matches the pattern (not the matching lines: read the files to see them).
* Regular expression syntax (RE2): "log.*Error", "func\s+\w+", "TODO|FIXME", "^import ". Matching is case-sensitive: start the pattern with (?i) to ignore case. A match cannot span several lines. Look-around and back-references are not supported.
* ` + "`include`" + ` restricts the search to files whose name matches a glob, e.g. "*.go" or "*.{ts,tsx}".
* Returns absolute paths, the most recently modified first. At most {{.MaxResults}} paths are returned: when the response says the results are truncated, use a more specific pattern, path or include filter.
* Hidden files and directories (names starting with "."), binary files and files excluded by .gitignore are skipped.

Examples:
- Function definitions: pattern "def\s+\w+", include "*.py"
- Error messages in TypeScript: pattern "throw new \w*Error", include "*.{ts,tsx}"`

// grepArgs are the arguments of grep (events.GrepAction).
type grepArgs struct {
	Pattern string  `json:"pattern" jsonschema:"required" description:"The regular expression to search for in file contents."`
	Path    *string `json:"path" description:"The directory to search in. Defaults to the working directory. Absolute, or relative to the working directory."`
	Include *string `json:"include" description:"Only search files whose name matches this glob, e.g. \"*.js\" or \"*.{ts,tsx}\"."`
}

var _ = events.GrepAction(grepArgs{})

type grepTool struct{ fsTool }

func newGrep(_ context.Context, env Env, _ json.RawMessage) (Tool, error) {
	t, err := newFSTool(env, newBase[grepArgs]("GrepTool", grepDescription, searchLimits))
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

func init() { Register("grep", newGrep) }
