package tools

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

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

// taskTrackerArgs are the arguments of task_tracker
// (events.TaskTrackerAction).
type taskTrackerArgs struct {
	Command  events.TaskTrackerCommand "json:\"command\" jsonschema:\"default=view\" description:\"`view` shows the task list; `plan` replaces it with task_list.\""
	TaskList []taskItemArgs            "json:\"task_list\" description:\"The complete task list. Required by `plan`.\""
}

// taskItemArgs are one task of task_list (events.TaskItem).
type taskItemArgs struct {
	Title  string            `json:"title" jsonschema:"required" description:"A short, actionable description of the task."`
	Notes  string            `json:"notes" description:"Optional details: approach, findings, what blocks it."`
	Status events.TaskStatus `json:"status" jsonschema:"default=todo" description:"todo (not started), in_progress (being worked on) or done (completed)."`
}

var _ = events.TaskItem(taskItemArgs{})

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
	return &taskTrackerTool{base: newBase[taskTrackerArgs]("TaskTrackerTool", taskTrackerDescription, nil),
		tracker: tr, mask: env.Mask}, nil
}

func (t *taskTrackerTool) Execute(ctx context.Context, a events.Action) (events.Observation, error) {
	return execute(ctx, "task_tracker", a, t.mask, t.tracker.Execute)
}

func init() { Register("task_tracker", newTaskTracker) }
