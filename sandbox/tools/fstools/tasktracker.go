package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/acs-project/acs/events"
)

// TaskTracker keeps the agent's task list and persists it to a JSON file, so
// that the list survives a restart (a new TaskTracker on the same path).
// It is safe for concurrent use; two trackers must not share a file.
type TaskTracker struct {
	path string
	mu   sync.Mutex
	list []events.TaskItem
}

// taskFile is the persisted form of the task list.
type taskFile struct {
	TaskList []events.TaskItem `json:"task_list"`
}

// NewTaskTracker returns a tracker persisting to path, loaded from the file
// when it exists (the file is only created by the first plan). A file that
// cannot be read or decoded is an error.
func NewTaskTracker(path string) (*TaskTracker, error) {
	if path == "" {
		return nil, errors.New("fstools: task tracker needs a file path")
	}
	t := &TaskTracker{path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("fstools: load task list: %w", err)
	}
	var f taskFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("fstools: load task list %s: %w", path, err)
	}
	t.list = f.TaskList
	return t, nil
}

// Execute runs a task_tracker action. "view" (the default) shows the list;
// "plan" replaces the whole list with a.TaskList and persists it atomically
// before answering (the list is unchanged if persisting fails, which is a Go
// error). An item without a title or with an unknown status is an error the
// model can act on; an empty status means "todo".
func (t *TaskTracker) Execute(ctx context.Context, a *events.TaskTrackerAction) (*events.TaskTrackerObservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	cmd := a.Command
	if cmd == "" {
		cmd = "view"
	}
	obs := &events.TaskTrackerObservation{Command: cmd}
	fail := func(format string, args ...any) (*events.TaskTrackerObservation, error) {
		obs.IsError = true
		obs.TaskList = slices.Clone(t.list)
		obs.SetText(fmt.Sprintf(format, args...))
		return obs, nil
	}
	switch cmd {
	case "view":
		obs.TaskList = slices.Clone(t.list)
		obs.SetText(formatTasks(t.list))
		return obs, nil
	case "plan":
	default:
		return fail("Unknown command %q: use \"view\" or \"plan\".", cmd)
	}
	list := make([]events.TaskItem, len(a.TaskList))
	for i, it := range a.TaskList {
		if strings.TrimSpace(it.Title) == "" {
			return fail("Task %d has no title; every task needs one. The task list was not changed.", i+1)
		}
		switch it.Status {
		case "":
			it.Status = "todo"
		case "todo", "in_progress", "done":
		default:
			return fail("Task %d has the unknown status %q; use \"todo\", \"in_progress\" or \"done\". The task list was not changed.", i+1, it.Status)
		}
		list[i] = it
	}
	data, err := json.MarshalIndent(taskFile{TaskList: list}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := writeBytesAtomic(t.path, append(data, '\n')); err != nil {
		return nil, fmt.Errorf("fstools: save task list: %w", err)
	}
	t.list = list
	obs.TaskList = slices.Clone(list)
	obs.SetText(fmt.Sprintf("Task list has been updated with %d item(s).", len(list)))
	return obs, nil
}

// formatTasks renders the list as markdown: "1. [ ] title" ([~] in
// progress, [x] done) with the notes indented below.
func formatTasks(list []events.TaskItem) string {
	if len(list) == 0 {
		return "No tasks in the task list."
	}
	var b strings.Builder
	for i, it := range list {
		mark := " "
		switch it.Status {
		case "in_progress":
			mark = "~"
		case "done":
			mark = "x"
		}
		fmt.Fprintf(&b, "%d. [%s] %s\n", i+1, mark, it.Title)
		if notes := strings.TrimSpace(it.Notes); notes != "" {
			for _, l := range strings.Split(notes, "\n") {
				fmt.Fprintf(&b, "   %s\n", l)
			}
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
