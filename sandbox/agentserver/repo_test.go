package agentserver_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acs-project/acs/sandbox/llm/llmtest"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// The agent fixes a bug in a real repository: it reads the code, edits the
// function with str_replace, runs the test suite in the terminal and
// finishes; the git routes show the edit.
func TestAgentFixesABugInARepository(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go toolchain for the project's test suite")
	}
	e := newEnv(t)
	repo := filepath.Join(e.work, "calc")
	os.MkdirAll(repo, 0o755)
	files := map[string]string{
		"go.mod":  "module example.com/calc\n\ngo 1.22\n",
		"calc.go": "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n" +
			"\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644)
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "calc with a bug")

	calc := filepath.Join(repo, "calc.go")
	e.llm.Add(
		llmtest.Reply{Text: "Let me read the code.", ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{"command": "view", "path": calc}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "cd " + repo + " && go test ./... 2>&1 | tail -8", "timeout": 120}}}},
		llmtest.Reply{Text: "Add subtracts; fix it.", ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
			"command": "str_replace", "path": calc, "old_str": "\treturn a - b", "new_str": "\treturn a + b"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{"command": "go test ./...", "timeout": 120}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Fixed Add: it subtracted. Tests pass."}}}},
	)
	id := e.create(map[string]any{"initial_message": userMessage("The calc tests fail. Fix the bug.", true)}, "terminal", "file_editor")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertSequence(t, evs, seq(concat(toolStep("file_editor", "FileEditorObservation"), toolStep("terminal", "TerminalObservation"),
		toolStep("file_editor", "FileEditorObservation"), toolStep("terminal", "TerminalObservation"),
		toolStep("finish", "FinishObservation"), []string{"ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)

	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			ToolName    string `json:"tool_name"`
			Observation struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"is_error"`
			} `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	if len(page.Items) != 5 {
		t.Fatalf("observations: %s", r.body)
	}
	text := func(i int) string { return page.Items[i].Observation.Content[0].Text }
	if !strings.Contains(text(0), "return a - b") || !strings.Contains(text(0), "cat -n") {
		t.Fatalf("view: %s", text(0))
	}
	if !strings.Contains(text(1), "Add(2, 3) = -1, want 5") || !strings.Contains(text(1), "FAIL") {
		t.Fatalf("first test run: %q", text(1))
	}
	if page.Items[2].Observation.IsError || !strings.Contains(text(2), "has been edited") {
		t.Fatalf("str_replace: %s", text(2))
	}
	if !strings.Contains(text(3), "ok  \texample.com/calc") || !strings.Contains(text(3), "exit code 0") {
		t.Fatalf("second test run: %s", text(3))
	}

	r = e.call("GET", "/api/git/changes?path="+repo, nil)
	if r.status != 200 || string(r.body) != `[{"status":"UPDATED","path":"calc.go"}]` {
		t.Fatalf("git changes: %d %s", r.status, r.body)
	}
	var diff struct {
		Modified *string `json:"modified"`
		Original *string `json:"original"`
	}
	r = e.call("GET", "/api/git/diff?path="+calc, nil)
	r.json(t, &diff)
	if diff.Original == nil || diff.Modified == nil || !strings.Contains(*diff.Original, "a - b") || !strings.Contains(*diff.Modified, "a + b") {
		t.Fatalf("git diff: %s", r.body)
	}
	if r := e.do("GET", "/api/git/changes?path="+repo, nil, ""); r.status != 401 {
		t.Fatalf("git routes need the session key: %d", r.status)
	}
	// The workspace root was made a repository at conversation start; a new
	// untracked file there shows as ADDED, against the empty tree.
	os.WriteFile(filepath.Join(e.work, "notes.txt"), []byte("x"), 0o644)
	r = e.call("GET", "/api/git/changes?path="+e.work, nil)
	if !strings.Contains(string(r.body), `{"status":"ADDED","path":"notes.txt"}`) {
		t.Fatalf("workspace changes: %s", r.body)
	}
}

func TestFileUploadAndDownload(t *testing.T) {
	e := newEnv(t)
	e.create(nil)
	path := filepath.Join(e.work, "up", "data.bin")
	body := "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"data.bin\"\r\n\r\nhello bytes\r\n--B--\r\n"
	req := e.rawRequest("POST", "/api/file/upload?path="+path, body, "multipart/form-data; boundary=B")
	if req.status != 200 {
		t.Fatalf("upload: %d %s", req.status, req.body)
	}
	r := e.call("GET", "/api/file/download?path="+path, nil)
	if r.status != 200 || string(r.body) != "hello bytes" {
		t.Fatalf("download: %d %q", r.status, r.body)
	}
	if r := e.call("GET", "/api/file/download?path=/etc/passwd", nil); r.status != 403 {
		t.Fatalf("outside the workspace: %d", r.status)
	}
	if r := e.call("GET", "/api/file/download?path="+e.work+"/../../etc/passwd", nil); r.status != 403 {
		t.Fatalf("traversal: %d", r.status)
	}
	if r := e.call("GET", "/api/file/download?path=relative.txt", nil); r.status != 422 ||
		string(r.body) != `{"detail":[{"loc":["query","path"],"msg":"Value error, Path must be absolute","type":"value_error"}]}` {
		t.Fatalf("relative path: %d %s", r.status, r.body)
	}
}

func TestPlanningFileEditor(t *testing.T) {
	e := newEnv(t)
	plan := filepath.Join(e.work, ".agents_tmp", "PLAN.md")
	other := filepath.Join(e.work, "other.md")
	os.WriteFile(other, []byte("read me\n"), 0o644)
	e.llm.Add(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "planning_file_editor", Arguments: map[string]any{"command": "create", "path": plan, "file_text": "# Plan\n1. read\n"}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "planning_file_editor", Arguments: map[string]any{"command": "view", "path": other}}}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "planning_file_editor", Arguments: map[string]any{"command": "create", "path": filepath.Join(e.work, "sneaky.md"), "file_text": "x"}}}},
		llmtest.Reply{Text: "planned"},
	)
	id := e.create(map[string]any{"initial_message": userMessage("plan", true)}, "planning_file_editor")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	pfe := toolStep("planning_file_editor", "PlanningFileEditorObservation")
	assertSequence(t, evs, seq(concat(pfe, pfe, pfe,
		[]string{"ConversationStateUpdateEvent:stats", "MessageEvent:agent", "ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)
	if b, err := os.ReadFile(plan); err != nil || string(b) != "# Plan\n1. read\n" {
		t.Fatalf("plan: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.work, "sneaky.md")); !os.IsNotExist(err) {
		t.Fatal("planning editor wrote outside the plan file")
	}
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			Observation map[string]any `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	kinds := []bool{}
	for _, it := range page.Items {
		if it.Observation["kind"] != "PlanningFileEditorObservation" {
			t.Fatalf("observation kind %v", it.Observation["kind"])
		}
		kinds = append(kinds, it.Observation["is_error"].(bool))
	}
	if len(kinds) != 3 || kinds[0] || kinds[1] || !kinds[2] {
		t.Fatalf("is_error per call %v", kinds)
	}
}

func TestSystemPromptNamesSecretsNeverValues(t *testing.T) {
	e := newEnv(t, llmtest.Reply{Text: "ok"})
	id := e.create(map[string]any{"initial_message": userMessage("hi", true),
		"secrets": map[string]any{"GITHUB_TOKEN": "ghp_supersecretvalue", "DB_PASSWORD": map[string]any{"kind": "StaticSecret", "value": "pw-12345"}}}, "terminal")
	e.waitStatus(id, "finished")
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=SystemPromptEvent", nil)
	body := string(r.body)
	if !strings.Contains(body, "DB_PASSWORD, GITHUB_TOKEN") || !strings.Contains(body, `"dynamic_context"`) {
		t.Fatalf("dynamic context lacks the secret names: %s", body)
	}
	for _, leak := range []string{"ghp_supersecretvalue", "pw-12345"} {
		if strings.Contains(body, leak) {
			t.Fatal("a secret value reached the system prompt")
		}
		for _, req := range e.llm.Requests() {
			if strings.Contains(string(req.Body), leak) {
				t.Fatal("a secret value was sent to the LLM")
			}
		}
	}
	var tools []map[string]any
	var page struct {
		Items []struct {
			Tools []map[string]any `json:"tools"`
		} `json:"items"`
	}
	r.json(t, &page)
	tools = page.Items[0].Tools
	if tools[0]["kind"] != "TerminalTool" || tools[0]["title"] != "terminal" || tools[0]["action_type"] != "TerminalAction" ||
		tools[0]["observation_type"] != "TerminalObservation" || tools[0]["annotations"] == nil {
		t.Fatalf("tool definition shape %v", tools[0])
	}
	if _, ok := tools[0]["meta"]; !ok {
		t.Fatal("meta must be serialised (null)")
	}
}

func TestFileEditorInsertAndUndo(t *testing.T) {
	e := newEnv(t)
	path := filepath.Join(e.work, "list.txt")
	os.WriteFile(path, []byte("a\nc\n"), 0o644)
	step := func(args map[string]any) llmtest.Reply {
		if _, ok := args["path"]; !ok {
			args["path"] = path
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: args}}}
	}
	e.llm.Add(
		step(map[string]any{"command": "insert", "insert_line": 1, "new_str": "b"}),
		step(map[string]any{"command": "str_replace", "old_str": "c", "new_str": "d"}),
		step(map[string]any{"command": "undo_edit"}),
		step(map[string]any{"command": "str_replace", "old_str": "zzz", "new_str": "y"}),
		step(map[string]any{"command": "view", "path": "relative.txt"}),
		llmtest.Reply{Text: "done"},
	)
	id := e.create(map[string]any{"initial_message": userMessage("edit", true)}, "file_editor")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	fe := toolStep("file_editor", "FileEditorObservation")
	assertSequence(t, evs, seq(concat(fe, fe, fe, fe, fe,
		[]string{"ConversationStateUpdateEvent:stats", "MessageEvent:agent", "ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)
	if b, _ := os.ReadFile(path); string(b) != "a\nb\nc\n" {
		t.Fatalf("file after insert, replace, undo: %q", b)
	}
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			Observation struct {
				IsError bool   `json:"is_error"`
				Command string `json:"command"`
			} `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	var got []string
	for _, it := range page.Items {
		got = append(got, it.Observation.Command+map[bool]string{true: "!", false: ""}[it.Observation.IsError])
	}
	if strings.Join(got, ",") != "insert,str_replace,undo_edit,str_replace!,view!" {
		t.Fatalf("observations %v", got)
	}
	// The LLM saw the error prefix on the failed call.
	last := e.llm.Requests()[4].Messages
	if !strings.HasPrefix(last[len(last)-1].Text(), "[An error occurred during execution.]") {
		t.Fatalf("error observation to the LLM: %q", last[len(last)-1].Text())
	}
}

func TestFileToolsThroughTheLoop(t *testing.T) {
	e := newEnv(t)
	os.MkdirAll(filepath.Join(e.work, "src"), 0o755)
	os.WriteFile(filepath.Join(e.work, "src", "main.go"), []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644)
	os.WriteFile(filepath.Join(e.work, "src", "util.go"), []byte("package main\n\nfunc helper() {}\n"), 0o644)
	c := func(tool string, args map[string]any) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: tool, Arguments: args}}}
	}
	e.llm.Add(
		c("glob", map[string]any{"pattern": "**/*.go"}),
		c("grep", map[string]any{"pattern": "func main", "include": "*.go"}),
		c("list_directory", map[string]any{"dir_path": "src"}),
		c("read_file", map[string]any{"file_path": "src/main.go", "offset": 2, "limit": 1}),
		c("write_file", map[string]any{"file_path": "notes/todo.md", "content": "- fix\n"}),
		c("edit", map[string]any{"file_path": "src/util.go", "old_string": "func helper() {}", "new_string": "func helper() int { return 1 }"}),
		c("task_tracker", map[string]any{"command": "plan", "task_list": []map[string]any{{"title": "Fix util", "status": "done"}, {"title": "Ship", "status": "todo"}}}),
		c("task_tracker", map[string]any{"command": "view"}),
		c("read_file", map[string]any{"file_path": "../../etc/passwd"}),
		llmtest.Reply{Text: "done"},
	)
	id := e.create(map[string]any{"initial_message": userMessage("tour", true)},
		"glob", "grep", "list_directory", "read_file", "write_file", "edit", "task_tracker")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	assertSequence(t, evs, seq(concat(toolStep("glob", "GlobObservation"), toolStep("grep", "GrepObservation"),
		toolStep("list_directory", "ListDirectoryObservation"), toolStep("read_file", "ReadFileObservation"),
		toolStep("write_file", "WriteFileObservation"), toolStep("edit", "EditObservation"),
		toolStep("task_tracker", "TaskTrackerObservation"), toolStep("task_tracker", "TaskTrackerObservation"),
		toolStep("read_file", "ReadFileObservation"),
		[]string{"ConversationStateUpdateEvent:stats", "MessageEvent:agent", "ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			Observation map[string]any `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	if len(page.Items) != 9 {
		t.Fatalf("observations: %s", r.body)
	}
	obs := func(i int) map[string]any { return page.Items[i].Observation }
	want := []string{"GlobObservation", "GrepObservation", "ListDirectoryObservation", "ReadFileObservation", "WriteFileObservation",
		"EditObservation", "TaskTrackerObservation", "TaskTrackerObservation", "ReadFileObservation"}
	for i, k := range want {
		if obs(i)["kind"] != k || obs(i)["is_error"] != (i == 8) {
			t.Fatalf("observation %d: %v", i, obs(i))
		}
	}
	if files := obs(0)["files"].([]any); len(files) != 2 {
		t.Fatalf("glob files %v", files)
	}
	if m := obs(1)["matches"].([]any); len(m) != 1 || !strings.HasSuffix(m[0].(string), "src/main.go") {
		t.Fatalf("grep matches %v", m)
	}
	if n := obs(2)["total_count"].(float64); n != 2 {
		t.Fatalf("list_directory %v", obs(2))
	}
	if obs(3)["file_content"] != "\n" && !strings.Contains(obs(3)["file_content"].(string), "func main") {
		t.Fatalf("read_file %v", obs(3))
	}
	if b, _ := os.ReadFile(filepath.Join(e.work, "notes", "todo.md")); string(b) != "- fix\n" {
		t.Fatal("write_file did not write")
	}
	if b, _ := os.ReadFile(filepath.Join(e.work, "src", "util.go")); !strings.Contains(string(b), "return 1") {
		t.Fatal("edit did not edit")
	}
	if tl := obs(7)["task_list"].([]any); len(tl) != 2 {
		t.Fatalf("task list after view %v", obs(7))
	}
}

func TestBashAPIIsMountedWithAuth(t *testing.T) {
	e := newEnv(t)
	r := e.post("/api/bash/execute_bash_command", map[string]any{"command": "echo from bash && pwd"})
	var out map[string]any
	r.json(t, &out)
	if r.status != 200 || out["kind"] != "BashOutput" || out["exit_code"].(float64) != 0 || !strings.Contains(out["stdout"].(string), "from bash") {
		t.Fatalf("execute: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/bash/execute_bash_command", map[string]any{"command": "echo x"}, ""); r.status != 401 {
		t.Fatalf("without a key: %d", r.status)
	}
	r = e.call("GET", "/api/bash/bash_events/search?kind__eq=BashCommand", nil)
	if r.status != 200 || !strings.Contains(string(r.body), "echo from bash") {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	// A cwd that is not a directory is an invalid parameter.
	r = e.post("/api/bash/execute_bash_command", map[string]any{"command": "echo never", "cwd": filepath.Join(e.dir, "no-such-dir")})
	if r.status != 422 || !strings.Contains(string(r.body), `"loc":["body","cwd"]`) || !strings.Contains(string(r.body), "cwd does not exist") {
		t.Fatalf("bad cwd: %d %s", r.status, r.body)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "bash_events")); err != nil {
		t.Fatalf("bash events are not kept next to the conversations: %v", err)
	}
}

func TestTerminalTimeoutThenInput(t *testing.T) {
	e := newEnv(t)
	term := func(args map[string]any) llmtest.Reply {
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: args}}}
	}
	e.llm.Add(
		term(map[string]any{"command": "read answer; echo got:$answer", "timeout": 1}),
		term(map[string]any{"command": "forty-two", "is_input": true}),
		term(map[string]any{"command": "sleep 30 &", "summary": "background job"}),
		term(map[string]any{"command": "echo still responsive"}),
		llmtest.Reply{Text: "done"},
	)
	id := e.create(map[string]any{"initial_message": userMessage("interact", true)}, "terminal")
	e.waitStatus(id, "finished")
	evs := e.allEvents(id)
	term4 := toolStep("terminal", "TerminalObservation")
	assertSequence(t, evs, seq(concat(term4, term4, term4, term4,
		[]string{"ConversationStateUpdateEvent:stats", "MessageEvent:agent", "ConversationStateUpdateEvent:execution_status=finished"})...)...)
	assertLinked(t, evs, true)
	r := e.call("GET", "/api/conversations/"+id+"/events/search?kind=ObservationEvent", nil)
	var page struct {
		Items []struct {
			Observation struct {
				ExitCode *int `json:"exit_code"`
				Timeout  bool `json:"timeout"`
				Content  []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"observation"`
		} `json:"items"`
	}
	r.json(t, &page)
	if len(page.Items) != 4 {
		t.Fatalf("observations %s", r.body)
	}
	first, second := page.Items[0].Observation, page.Items[1].Observation
	if *first.ExitCode != -1 || !first.Timeout || !strings.Contains(first.Content[0].Text, "timed out after 1 seconds") {
		t.Fatalf("timeout observation %+v", first)
	}
	if *second.ExitCode != 0 || !strings.Contains(second.Content[0].Text, "got:forty-two") {
		t.Fatalf("input observation %+v", second)
	}
	if last := page.Items[3].Observation; *last.ExitCode != 0 || !strings.Contains(last.Content[0].Text, "still responsive") {
		t.Fatalf("after a background job %+v", last)
	}
}
