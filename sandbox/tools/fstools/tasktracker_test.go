package fstools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/tools/fstools"
)

func TestTaskTrackerPlanViewPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "TASKS.json")
	ctx := context.Background()
	tt, err := fstools.NewTaskTracker(path)
	if err != nil {
		t.Fatal(err)
	}

	// Empty at first, and nothing written by a view.
	o, err := tt.Execute(ctx, &events.TaskTrackerAction{})
	wantOK(t, o, err)
	if o.Command != "view" || len(o.TaskList) != 0 || obsText(o) != "No tasks in the task list." {
		t.Errorf("empty view: %q %v %q", o.Command, o.TaskList, obsText(o))
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("view created the file")
	}

	plan := []events.TaskItem{
		{Title: "Explore the code", Notes: "look at main.go\nand util.go", Status: "done"},
		{Title: "Fix the bug", Status: "in_progress"},
		{Title: "Write tests", Status: "todo"},
		{Title: "Default status"},
	}
	o, err = tt.Execute(ctx, &events.TaskTrackerAction{Command: "plan", TaskList: plan})
	wantOK(t, o, err)
	if o.Command != "plan" || obsText(o) != "Task list has been updated with 4 item(s)." {
		t.Errorf("plan: %q %q", o.Command, obsText(o))
	}
	wantList := slices.Clone(plan)
	wantList[3].Status = "todo"
	if !slices.Equal(o.TaskList, wantList) {
		t.Errorf("plan task list = %v", o.TaskList)
	}
	// The observation does not alias the caller's slice.
	plan[0].Title = "changed"

	wantView := "1. [x] Explore the code\n   look at main.go\n   and util.go\n2. [~] Fix the bug\n3. [ ] Write tests\n4. [ ] Default status"
	o, err = tt.Execute(ctx, &events.TaskTrackerAction{Command: "view"})
	wantOK(t, o, err)
	if obsText(o) != wantView || !slices.Equal(o.TaskList, wantList) {
		t.Errorf("view text:\n%s\nlist %v", obsText(o), o.TaskList)
	}

	// The file is valid JSON, private, and a new tracker (a restart) sees
	// the same list.
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("file: %v %v", fi, err)
	}
	var stored map[string]any
	if err := json.Unmarshal([]byte(readString(t, path)), &stored); err != nil {
		t.Errorf("stored file is not JSON: %v", err)
	}
	tt2, err := fstools.NewTaskTracker(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err = tt2.Execute(ctx, &events.TaskTrackerAction{Command: "view"})
	wantOK(t, o, err)
	if obsText(o) != wantView || !slices.Equal(o.TaskList, wantList) {
		t.Errorf("after restart:\n%s", obsText(o))
	}

	// Planning an empty list clears it, durably.
	o, err = tt2.Execute(ctx, &events.TaskTrackerAction{Command: "plan"})
	wantOK(t, o, err)
	if obsText(o) != "Task list has been updated with 0 item(s)." {
		t.Errorf("clear: %q", obsText(o))
	}
	tt3, err := fstools.NewTaskTracker(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err = tt3.Execute(ctx, &events.TaskTrackerAction{})
	wantOK(t, o, err)
	if len(o.TaskList) != 0 || obsText(o) != "No tasks in the task list." {
		t.Errorf("after clear: %v", o.TaskList)
	}
}

func TestTaskTrackerErrors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "TASKS.json")
	tt, err := fstools.NewTaskTracker(path)
	if err != nil {
		t.Fatal(err)
	}
	o, err := tt.Execute(ctx, &events.TaskTrackerAction{Command: "plan", TaskList: []events.TaskItem{{Title: "ok"}}})
	wantOK(t, o, err)

	cases := []struct {
		name   string
		action events.TaskTrackerAction
		frag   string
	}{
		{"unknown command", events.TaskTrackerAction{Command: "delete"}, "Unknown command"},
		{"missing title", events.TaskTrackerAction{Command: "plan", TaskList: []events.TaskItem{{Title: "a"}, {Title: "  "}}}, "Task 2 has no title"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := tt.Execute(ctx, &c.action)
			wantError(t, o, err, c.frag)
			// The list is unchanged.
			if len(o.TaskList) != 1 || o.TaskList[0].Title != "ok" {
				t.Errorf("task list = %v", o.TaskList)
			}
		})
	}

	// A corrupt file is a Go error.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := fstools.NewTaskTracker(path); err == nil {
		t.Error("NewTaskTracker accepted a corrupt file")
	}
	if _, err := fstools.NewTaskTracker(""); err == nil {
		t.Error("NewTaskTracker accepted an empty path")
	}
}

func TestTaskTrackerConcurrent(t *testing.T) {
	tt, err := fstools.NewTaskTracker(filepath.Join(t.TempDir(), "TASKS.json"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			cmd := events.TaskTrackerCommand("view")
			if i%2 == 0 {
				cmd = "plan"
			}
			if _, err := tt.Execute(ctx, &events.TaskTrackerAction{Command: cmd, TaskList: []events.TaskItem{{Title: "t"}}}); err != nil {
				t.Error(err)
			}
		}()
	}
	for range 8 {
		<-done
	}
}
