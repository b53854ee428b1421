package tools

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

// The file tools (glob, grep, list_directory, read_file, write_file, edit)
// and the task tracker, adapted from package fstools. The file tools are
// confined to the conversation's working directory: relative paths resolve
// against it and no path may lead outside it (symbolic links included).

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

// newFSTool confines the tool b describes to env's working directory, which
// must be absolute.
func newFSTool(env Env, b base) (fsTool, error) {
	if env.WorkDir == "" || !filepath.IsAbs(env.WorkDir) {
		return fsTool{}, fmt.Errorf("working directory %q must be an absolute path", env.WorkDir)
	}
	return fsTool{base: b, root: fstools.Root{Root: env.WorkDir, WorkDir: env.WorkDir}, mask: env.Mask}, nil
}
