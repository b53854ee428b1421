package tools_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/events"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/tools"
)

var fileToolNames = []string{"glob", "grep", "list_directory", "read_file", "write_file", "edit", "task_tracker"}

func buildFileTools(t *testing.T, env tools.Env) map[string]tools.Tool {
	t.Helper()
	var refs []agentwire.ToolRef
	for _, n := range fileToolNames {
		refs = append(refs, agentwire.ToolRef{Name: n})
	}
	ts, err := tools.Build(context.Background(), env, refs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(func() { tools.CloseAll(ts) })
	byName := map[string]tools.Tool{}
	for _, tl := range ts {
		byName[tl.Name()] = tl
	}
	return byName
}

func TestFileToolsBuild(t *testing.T) {
	env := tools.Env{ConversationID: "c1", WorkDir: t.TempDir(), StateDir: t.TempDir()}
	byName := buildFileTools(t, env)
	for _, name := range fileToolNames {
		t.Run(name, func(t *testing.T) {
			tl, ok := byName[name]
			if !ok {
				t.Fatalf("tool %s not built", name)
			}
			spec, ok := events.ToolSpecByName(name)
			if !ok {
				t.Fatalf("no spec for %s", name)
			}
			if tl.Name() != name || tl.ActionKind() != spec.ActionType || tl.ReadOnly() != spec.ReadOnly {
				t.Errorf("name %q action kind %q read-only %v; spec %+v", tl.Name(), tl.ActionKind(), tl.ReadOnly(), spec)
			}
			def := tl.Definition()
			if def.Kind != spec.Kind || def.Title != name || def.ActionType != spec.ActionType || def.ObservationType != spec.ObservationType {
				t.Errorf("definition %+v, spec %+v", def, spec)
			}
			if strings.TrimSpace(def.Description) == "" {
				t.Error("empty description")
			}
			params := tl.Parameters()
			if params["type"] != "object" {
				t.Errorf("parameters type %v", params["type"])
			}
			props, _ := params["properties"].(map[string]any)
			req, _ := params["required"].([]string)
			for _, r := range req {
				if _, ok := props[r]; !ok {
					t.Errorf("required %q is not a property", r)
				}
			}
			if _, err := json.Marshal(params); err != nil {
				t.Errorf("parameters are not JSON: %v", err)
			}
		})
	}
}

func TestFileToolsExecute(t *testing.T) {
	work, state := t.TempDir(), t.TempDir()
	env := tools.Env{ConversationID: "c1", WorkDir: work, StateDir: state}
	byName := buildFileTools(t, env)
	ctx := context.Background()
	run := func(name string, a events.Action) events.Observation {
		t.Helper()
		o, err := byName[name].Execute(ctx, a)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.Kind() != byName[name].Definition().ObservationType {
			t.Errorf("%s: observation kind %s", name, o.Kind())
		}
		if o.Common().IsError {
			t.Fatalf("%s: %s", name, o.Common().Text())
		}
		return o
	}
	run("write_file", &events.WriteFileAction{FilePath: "pkg/a.go", Content: "package pkg\n\nfunc Hello() {}\n"})
	run("edit", &events.EditAction{FilePath: "pkg/a.go", OldString: "Hello", NewString: "Bye", ExpectedReplacements: 1})
	if o := run("read_file", &events.ReadFileAction{FilePath: filepath.Join(work, "pkg", "a.go")}).(*events.ReadFileObservation); !strings.Contains(o.FileContent, "func Bye()") {
		t.Errorf("read_file: %q", o.FileContent)
	}
	if o := run("glob", &events.GlobAction{Pattern: "**/*.go"}).(*events.GlobObservation); len(o.Files) != 1 {
		t.Errorf("glob: %v", o.Files)
	}
	if o := run("grep", &events.GrepAction{Pattern: `func \w+`}).(*events.GrepObservation); len(o.Matches) != 1 {
		t.Errorf("grep: %v", o.Matches)
	}
	if o := run("list_directory", &events.ListDirectoryAction{DirPath: ".", Recursive: true}).(*events.ListDirectoryObservation); len(o.Entries) != 2 {
		t.Errorf("list_directory: %v", o.Entries)
	}
	run("task_tracker", &events.TaskTrackerAction{Command: "plan", TaskList: []events.TaskItem{{Title: "ship", Status: "in_progress"}}})
	if _, err := os.Stat(filepath.Join(state, "TASKS.json")); err != nil {
		t.Errorf("task list not persisted in the state directory: %v", err)
	}

	// A restarted conversation sees the same task list.
	again := buildFileTools(t, env)
	o, err := again["task_tracker"].Execute(ctx, &events.TaskTrackerAction{Command: "view"})
	if err != nil || o.Common().Text() != "1. [~] ship" {
		t.Errorf("after restart: %v %v", o, err)
	}

	// Paths outside the working directory are refused.
	o, err = byName["read_file"].Execute(ctx, &events.ReadFileAction{FilePath: "../x"})
	if err != nil || !o.Common().IsError {
		t.Errorf("outside path: %v %v", o, err)
	}
}

func TestFileToolsErrors(t *testing.T) {
	env := tools.Env{ConversationID: "c1", WorkDir: t.TempDir(), StateDir: t.TempDir()}
	byName := buildFileTools(t, env)
	for _, name := range fileToolNames {
		t.Run(name, func(t *testing.T) {
			// The wrong action type is a Go error.
			if o, err := byName[name].Execute(context.Background(), &events.ThinkAction{Thought: "x"}); err == nil || o != nil {
				t.Errorf("wrong action: %v %v", o, err)
			}
		})
	}
	// A Go error comes with a nil interface, not a typed nil pointer.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, err := byName["read_file"].Execute(ctx, &events.ReadFileAction{FilePath: "x"})
	if err == nil || o != nil {
		t.Errorf("cancelled: observation %#v error %v", o, err)
	}

	// Masking applies to the text the LLM sees.
	masked := env
	masked.Mask = func(s string) string { return strings.ReplaceAll(s, "hunter2", "****") }
	mt := buildFileTools(t, masked)
	if err := os.WriteFile(filepath.Join(env.WorkDir, "secret.txt"), []byte("pw=hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ro, err := mt["read_file"].Execute(context.Background(), &events.ReadFileAction{FilePath: "secret.txt"})
	if err != nil || strings.Contains(ro.Common().Text(), "hunter2") || strings.Contains(ro.(*events.ReadFileObservation).FileContent, "hunter2") {
		t.Errorf("secret not masked: %v %v", ro, err)
	}

	// A relative working directory cannot be confined.
	if _, err := tools.Build(context.Background(), tools.Env{WorkDir: "rel", StateDir: t.TempDir()}, []agentwire.ToolRef{{Name: "glob"}}); err == nil {
		t.Error("relative working directory accepted")
	}
}
