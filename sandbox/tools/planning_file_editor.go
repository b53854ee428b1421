package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fileeditor"
)

const planningDescription = `Edit the plan file of this task. Use it to write and keep up to date a plan: the goal, the steps, what is done and what is left.
* ` + "`view`" + ` works on any file or directory in the workspace, so you can read code while planning.
* Every other command (` + "`create`, `str_replace`, `insert`, `undo_edit`" + `) only works on the plan file, ` + "`{{.PlanFile}}`" + ` under the working directory.
* Paths must be absolute.`

// PlanFile is where planning_file_editor keeps the plan, relative to the
// working directory.
const PlanFile = ".agents_tmp/PLAN.md"

// planningTool takes file_editor's arguments (fileEditorArgs) and edits only
// the plan file.
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
	return &planningTool{base: newBase[fileEditorArgs]("PlanningFileEditorTool", planningDescription, struct{ PlanFile string }{PlanFile}),
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
