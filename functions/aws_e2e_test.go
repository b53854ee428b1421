package functions_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
)

var workDirRE = regexp.MustCompile(`Working directory: (\S+)`)

// script is the scripted agent: run a shell command, create a file, finish.
func script() []llmtest.Reply {
	return []llmtest.Reply{
		{ToolCalls: []llmtest.ToolCall{{Name: "terminal", Arguments: map[string]any{
			"command": "echo shell says hi on aws && pwd", "security_risk": "LOW", "summary": "say hi"}}}, Text: "Let me look around."},
		{Respond: func(req *llmtest.Request) llmtest.Reply {
			wd := workDirRE.FindStringSubmatch(req.SystemText())
			path := "/missing-working-directory/result.md"
			if wd != nil {
				path = filepath.Join(wd[1], "notes", "result.md")
			}
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "file_editor", Arguments: map[string]any{
				"command": "create", "path": path, "file_text": "# Result\n\nThe agent was here, on AWS.\n"}}}}
		}},
		{ToolCalls: []llmtest.ToolCall{{Name: "finish", Arguments: map[string]any{"message": "Ran a command and wrote notes/result.md."}}}},
	}
}

type taskJSON struct {
	ID                string  `json:"id"`
	Status            string  `json:"status"`
	Detail            *string `json:"detail"`
	AppConversationID *string `json:"app_conversation_id"`
	SandboxID         *string `json:"sandbox_id"`
	Steps             []struct {
		Status string `json:"status"`
	} `json:"steps"`
}

type conversationJSON struct {
	ID              string  `json:"id"`
	SandboxID       string  `json:"sandbox_id"`
	SandboxStatus   string  `json:"sandbox_status"`
	ExecutionStatus *string `json:"execution_status"`
	Title           *string `json:"title"`
}

var allSteps = "WORKING,WAITING_FOR_SANDBOX,PREPARING_REPOSITORY,RUNNING_SETUP_SCRIPT,SETTING_UP_GIT_HOOKS,SETTING_UP_SKILLS,STARTING_CONVERSATION,READY"

// waitReady polls the task in the table (directly, so that the polling
// consumes nothing the measurements see) until it is done.
func (e *awsEnv) waitReady(id string, timeout time.Duration) acs.StartTask {
	e.t.Helper()
	var tk acs.StartTask
	testwait.For(e.t, timeout, "start task "+id+" to finish", func() bool {
		var err error
		if tk, err = e.store.GetStartTask(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return tk.Status.Done()
	})
	if tk.Status != acs.TaskReady {
		detail := ""
		if tk.Detail != nil {
			detail = *tk.Detail
		}
		e.t.Fatalf("start task %s ended %s: %s\nprovisioner:\n%s", id, tk.Status, detail, e.fns["provisioner"].Stderr())
	}
	return tk
}

func stepsOf(tk acs.StartTask) string {
	var s []string
	for _, st := range tk.Steps {
		s = append(s, string(st.Status))
	}
	return strings.Join(s, ",")
}

func msg(text string) map[string]any {
	return map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": text}}, "run": true}
}

// TestAWSEndToEnd drives the AWS deployment through API Gateway: start →
// READY → the agent works and finishes → the transcript read back through
// the event-search function; then every route's function once, the
// reconciler, and the figures (cold starts, DynamoDB capacity).
func TestAWSEndToEnd(t *testing.T) {
	t.Parallel()
	e := newAWSEnv(t, envOptions{replies: script()})

	// Gateway answers in the V1 shape.
	for _, c := range []struct {
		name, method, path, key string
		want                    int
	}{
		{"no key", "GET", "/api/v1/users/me", "", 401},
		{"unknown key", "GET", "/api/v1/users/me", "acs_not-a-key-0123456789", 401},
		{"unknown route", "GET", "/api/v1/nothing-here", adminKey, 404},
	} {
		r := e.call(c.method, c.path, nil, c.key)
		var body struct {
			Detail string `json:"detail"`
		}
		r.into(t, &body)
		if r.status != c.want || body.Detail == "" {
			t.Errorf("%s: %d %s, want %d with a detail", c.name, r.status, r.body, c.want)
		}
	}

	// Start → READY, measuring what DynamoDB serves for it.
	e.ddb.snapshot()
	var tk taskJSON
	if r := e.admin("POST", "/api/v1/app-conversations", map[string]any{"initial_message": msg("Say hi in the shell and write notes/result.md")}); r.status != 200 {
		t.Fatalf("start: %d %s", r.status, r.body)
	} else {
		r.into(t, &tk)
	}
	ready := e.waitReady(tk.ID, 90*time.Second)
	startOps, startRCU, startWCU := e.ddb.snapshot()
	if got := stepsOf(ready); got != allSteps {
		t.Fatalf("recorded steps %s", got)
	}
	if ready.AppConversationID == nil || ready.SandboxID == nil {
		t.Fatalf("READY task lacks ids: %+v", ready)
	}
	convID, sbID := ready.AppConversationID, *ready.SandboxID
	t.Logf("one start flow (POST to READY): DynamoDB %.1f RCU, %.1f WCU as DynamoDB Local reports; operations %v", startRCU, startWCU, startOps)

	var conv conversationJSON
	testwait.For(t, 90*time.Second, "the agent to finish", func() bool {
		var cs []*conversationJSON
		e.admin("GET", "/api/v1/app-conversations?ids="+*convID, nil).into(t, &cs)
		if len(cs) != 1 || cs[0] == nil {
			t.Fatalf("conversation %s not served", *convID)
		}
		conv = *cs[0]
		return conv.ExecutionStatus != nil && *conv.ExecutionStatus == "finished"
	})
	if conv.SandboxStatus != "RUNNING" || conv.SandboxID != sbID {
		t.Fatalf("conversation %+v", conv)
	}
	if b, err := os.ReadFile(filepath.Join(e.rtRoot, sbID, "workspace", "notes", "result.md")); err != nil || !strings.Contains(string(b), "on AWS") {
		t.Fatalf("the agent's file in the sandbox: %q %v", b, err)
	}

	// The transcript, through the event-search function (one page
	// measured).
	e.ddb.snapshot()
	page := e.admin("GET", "/api/v1/conversation/"+*convID+"/events/search?limit=100", nil)
	pageOps, pageRCU, _ := e.ddb.snapshot()
	var events struct {
		Items      []map[string]any `json:"items"`
		NextPageID *string          `json:"next_page_id"`
	}
	page.into(t, &events)
	t.Logf("one events page (%d events): DynamoDB %.1f RCU as DynamoDB Local reports; operations %v", len(events.Items), pageRCU, pageOps)
	transcript, _ := json.Marshal(events.Items)
	for _, want := range []string{`"kind":"ActionEvent"`, "shell says hi on aws", `"kind":"ObservationEvent"`, "FinishAction", "notes/result.md"} {
		if !bytes.Contains(transcript, []byte(want)) {
			t.Errorf("transcript lacks %s:\n%s", want, transcript)
		}
	}

	routesOnce(t, e, *convID, sbID, tk.ID)

	// The reconciler, as the schedule runs it.
	var report map[string]any
	if err := e.fns["reconciler"].InvokeJSON(context.Background(), map[string]any{"source": "aws.events", "detail-type": "Scheduled Event"}, &report); err != nil {
		t.Fatalf("reconciler: %v\n%s", err, e.fns["reconciler"].Stderr())
	}
	for _, k := range []string{"paused", "cleaned_up", "failed", "expired_tasks", "dead_lettered_tasks"} {
		if _, ok := report[k]; !ok {
			t.Errorf("reconciler report lacks %s: %v", k, report)
		}
	}

	// Every function ran through the Runtime API, none crashed.
	for name, f := range e.fns {
		if f.Invocations() == 0 {
			t.Errorf("function %s was never invoked", name)
		}
		if f.Restarts() != 0 {
			t.Errorf("function %s restarted %d times:\n%s", name, f.Restarts(), f.Stderr())
		}
		if strings.Contains(f.Stderr(), "Needs does not declare") {
			t.Errorf("function %s used an adapter it does not declare:\n%s", name, f.Stderr())
		}
	}
	names, durs := e.initDurations()
	sorted := append([]time.Duration(nil), durs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("cold-start init (exec to first /next) over %d functions: median %s, min %s, max %s",
		len(sorted), sorted[len(sorted)/2], sorted[0], sorted[len(sorted)-1])
	for i, n := range names {
		t.Logf("  init %-26s %s", n, durs[i])
	}
}

// routesOnce calls every route through its function, checking statuses
// and the effects a user relies on.
func routesOnce(t *testing.T, e *awsEnv, convID, sbID, taskID string) {
	want := func(r resp, code int, what string) resp {
		t.Helper()
		if r.status != code {
			t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, code)
		}
		return r
	}
	// Users and keys; another user sees none of the admin's work.
	var me map[string]any
	want(e.admin("GET", "/api/v1/users/me", nil), 200, "get_me").into(t, &me)
	if me["id"] != api.AdminID || me["admin"] != true {
		t.Fatalf("me %v", me)
	}
	var bob struct {
		Key struct{ Key string } `json:"key"`
	}
	want(e.admin("POST", "/api/v1/users", map[string]any{"name": "bob"}), 201, "create_user").into(t, &bob)
	var seen []*conversationJSON
	want(e.call("GET", "/api/v1/app-conversations?ids="+convID, nil, bob.Key.Key), 200, "bob's get").into(t, &seen)
	if len(seen) != 1 || seen[0] != nil {
		t.Fatalf("bob sees the admin's conversation: %s", mustJSON(seen))
	}
	want(e.call("GET", "/api/v1/conversation/"+convID+"/events/search", nil, bob.Key.Key), 404, "bob's events")
	var key struct{ ID, Key string }
	want(e.admin("POST", "/api/v1/keys", map[string]any{"name": "ci"}), 201, "create_key").into(t, &key)
	want(e.call("GET", "/api/v1/keys", nil, key.Key), 200, "list_keys with the new key")
	want(e.admin("DELETE", "/api/v1/keys/"+key.ID, nil), 200, "delete_key")
	want(e.call("GET", "/api/v1/users/me", nil, key.Key), 401, "a deleted key")

	// Settings and secrets.
	want(e.admin("GET", "/api/v1/settings", nil), 200, "get_settings")
	want(e.admin("POST", "/api/v1/settings", map[string]any{"llm_model": "openai/e2e-model"}), 200, "update_settings")
	want(e.admin("POST", "/api/v1/secrets", map[string]any{"name": "NPM_TOKEN", "value": "npm-secret-987"}), 201, "create_secret")
	list := want(e.admin("GET", "/api/v1/secrets", nil), 200, "list_secrets")
	want(e.admin("PUT", "/api/v1/secrets/NPM_TOKEN", map[string]any{"value": "npm-secret-654"}), 200, "update_secret")
	got := want(e.admin("GET", "/api/v1/secrets/NPM_TOKEN", nil), 200, "get_secret")
	if bytes.Contains(list.body, []byte("npm-secret")) || bytes.Contains(got.body, []byte("npm-secret")) {
		t.Fatalf("a secret value was served: %s %s", list.body, got.body)
	}
	want(e.admin("DELETE", "/api/v1/secrets/NPM_TOKEN", nil), 200, "delete_secret")
	want(e.admin("GET", "/api/v1/secrets/NPM_TOKEN", nil), 404, "deleted secret")

	// Start tasks and conversations.
	want(e.admin("GET", "/api/v1/app-conversations/start-tasks?ids="+taskID, nil), 200, "get_start_tasks")
	want(e.admin("GET", "/api/v1/app-conversations/start-tasks/search", nil), 200, "search_start_tasks")
	want(e.admin("GET", "/api/v1/app-conversations/start-tasks/count", nil), 200, "count_start_tasks")
	want(e.admin("GET", "/api/v1/app-conversations/search", nil), 200, "search_conversations")
	var n int
	want(e.admin("GET", "/api/v1/app-conversations/count", nil), 200, "count_conversations").into(t, &n)
	if n != 1 {
		t.Fatalf("count_conversations %d, want 1", n)
	}
	var patched conversationJSON
	want(e.admin("PATCH", "/api/v1/app-conversations/"+convID, map[string]any{"title": "Renamed on AWS"}), 200, "update_conversation").into(t, &patched)
	if patched.Title == nil || *patched.Title != "Renamed on AWS" {
		t.Fatalf("patched %+v", patched)
	}

	// Review endpoints, through the sandbox's agent server.
	var file string
	want(e.admin("GET", "/api/v1/app-conversations/"+convID+"/file?file_path=notes/result.md", nil), 200, "read_file").into(t, &file)
	if !strings.Contains(file, "on AWS") {
		t.Fatalf("read_file %v", file)
	}
	for _, p := range []string{"/git/changes", "/git/diff?path=notes/result.md", "/skills", "/hooks"} {
		if r := e.admin("GET", "/api/v1/app-conversations/"+convID+p, nil); r.status >= 500 {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}

	// Events by count and id, and the download.
	var count int
	want(e.admin("GET", "/api/v1/conversation/"+convID+"/events/count", nil), 200, "count_events").into(t, &count)
	var p struct {
		Items []struct{ ID string } `json:"items"`
	}
	want(e.admin("GET", "/api/v1/conversation/"+convID+"/events/search?limit=1", nil), 200, "search_events").into(t, &p)
	var byID []*map[string]any
	want(e.admin("GET", "/api/v1/conversation/"+convID+"/events?id="+p.Items[0].ID, nil), 200, "get_events").into(t, &byID)
	if len(byID) != 1 || byID[0] == nil {
		t.Fatalf("get_events %s", mustJSON(byID))
	}
	dl := want(e.admin("GET", "/api/v1/app-conversations/"+convID+"/download", nil), 200, "download_conversation")
	zr, err := zip.NewReader(bytes.NewReader(dl.body), int64(len(dl.body)))
	if err != nil {
		t.Fatalf("download is not a zip (%d bytes, %s): %v", len(dl.body), dl.header.Get("Content-Type"), err)
	}
	if len(zr.File) != count+1 {
		t.Fatalf("download holds %d files, want %d events + meta.json", len(zr.File), count)
	}

	// Messages.
	want(e.admin("POST", "/api/v1/app-conversations/"+convID+"/send-message",
		map[string]any{"role": "user", "content": []map[string]any{{"type": "text", "text": "noted"}}, "run": false}), 200, "send_message")
	want(e.admin("POST", "/api/v1/conversations/"+convID+"/pending-messages",
		map[string]any{"content": []map[string]any{{"type": "text", "text": "and one more"}}}), 201, "add_pending_message")

	// Specs and sandboxes.
	want(e.admin("GET", "/api/v1/sandbox-specs/search", nil), 200, "search_sandbox_specs")
	want(e.admin("GET", "/api/v1/sandbox-specs?id=acs-default", nil), 200, "get_sandbox_specs")
	want(e.admin("GET", "/api/v1/sandboxes/search", nil), 200, "search_sandboxes")
	want(e.admin("GET", "/api/v1/sandboxes?id="+sbID, nil), 200, "get_sandboxes")
	newSandbox := func() string {
		var sb struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		want(e.admin("POST", "/api/v1/sandboxes", map[string]any{}), 200, "create_sandbox").into(t, &sb)
		testwait.For(t, 60*time.Second, "sandbox "+sb.ID+" to run", func() bool {
			var got []*struct {
				Status string `json:"status"`
			}
			e.admin("GET", "/api/v1/sandboxes?id="+sb.ID, nil).into(t, &got)
			return got[0] != nil && got[0].Status == "RUNNING"
		})
		return sb.ID
	}
	sb2 := newSandbox()
	want(e.admin("POST", "/api/v1/sandboxes/"+sb2+"/pause", nil), 200, "pause_sandbox")
	want(e.admin("POST", "/api/v1/sandboxes/"+sb2+"/resume", nil), 200, "resume_sandbox")
	want(e.admin("DELETE", "/api/v1/sandboxes/"+sb2, nil), 200, "delete_sandbox")
	arch, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String("archives/" + sb2 + "/")})
	if err != nil || len(arch.Contents) != 1 {
		t.Fatalf("workspace archive of a deleted sandbox in S3: %v %v", arch, err)
	}
	sb3 := newSandbox()
	want(e.admin("DELETE", "/api/v1/sandboxes?sandbox_id="+sb3, nil), 200, "delete_sandbox_by_query")

	// Stream-start ends with a well-formed array through the gateway, then
	// that conversation is deleted with its sandbox.
	var states []taskJSON
	want(e.admin("POST", "/api/v1/app-conversations/stream-start", map[string]any{}), 200, "stream_start_conversation").into(t, &states)
	if len(states) == 0 || states[0].Status != "WORKING" {
		t.Fatalf("stream-start states %s", mustJSON(states))
	}
	done := e.waitReady(states[0].ID, 90*time.Second)
	want(e.admin("DELETE", "/api/v1/app-conversations/"+*done.AppConversationID, nil), 200, "delete_conversation")
	want(e.admin("GET", "/api/v1/conversation/"+*done.AppConversationID+"/events/search", nil), 404, "a deleted conversation's events")
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAWSProvisionerCrashes: the provisioner dies right after each start
// step once (the message is redelivered each time); the start still ends
// READY with exactly one sandbox and one conversation.
func TestAWSProvisionerCrashes(t *testing.T) {
	t.Parallel()
	var points []string
	steps := strings.Split(allSteps, ",")
	for _, st := range steps[:len(steps)-1] {
		points = append(points, "provisioner.after."+st)
	}
	marks := t.TempDir()
	e := newAWSEnv(t, envOptions{provisionerEnv: []string{"ACS_FAILPOINTS=" + strings.Join(points, ","), "ACS_FAILPOINT_DIR=" + marks}})

	var tk taskJSON
	r := e.admin("POST", "/api/v1/app-conversations", map[string]any{})
	if r.status != 200 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	r.into(t, &tk)
	ready := e.waitReady(tk.ID, 180*time.Second)
	// The last point fires after READY is stored: READY can be seen first.
	var fired []os.DirEntry
	testwait.Until(10*time.Second, func() bool {
		fired, _ = os.ReadDir(marks)
		return len(fired) == len(points) && e.fns["provisioner"].Restarts() >= len(points)
	})
	if len(fired) != len(points) || e.fns["provisioner"].Restarts() < len(points) {
		t.Fatalf("%d of %d failpoints fired, %d provisioner restarts:\n%s", len(fired), len(points), e.fns["provisioner"].Restarts(), e.fns["provisioner"].Stderr())
	}
	if got := stepsOf(ready); got != allSteps {
		t.Fatalf("steps after redeliveries %s, want each once: %s", got, allSteps)
	}
	var n int
	e.admin("GET", "/api/v1/app-conversations/count", nil).into(t, &n)
	var sbs struct {
		Items []struct{ ID string } `json:"items"`
	}
	e.admin("GET", "/api/v1/sandboxes/search", nil).into(t, &sbs)
	convs, err := e.store.ListConversationsBySandbox(context.Background(), *ready.SandboxID)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || len(sbs.Items) != 1 || len(convs) != 1 || len(e.sandboxDirs()) != 1 {
		t.Fatalf("after crashes: %d conversations, %d sandboxes (%d in the runtime), %d on the sandbox; want 1 each",
			n, len(sbs.Items), len(e.sandboxDirs()), len(convs))
	}
}

// TestAWSDynamoDBFailuresAre503: a throttled or failing DynamoDB call is a
// 503 with Retry-After, and the write it refused is not half done: a retry
// succeeds and nothing else was stored.
func TestAWSDynamoDBFailuresAre503(t *testing.T) {
	t.Parallel()
	e := newAWSEnv(t, envOptions{})
	writes := []string{"PutItem", "TransactWriteItems", "UpdateItem", "DeleteItem", "BatchWriteItem"}
	check503 := func(r resp, what string) {
		t.Helper()
		var body struct {
			Detail string `json:"detail"`
		}
		r.into(t, &body)
		if r.status != 503 || r.header.Get("Retry-After") == "" || body.Detail == "" {
			t.Fatalf("%s while DynamoDB throttles: %d Retry-After=%q %s", what, r.status, r.header.Get("Retry-After"), r.body)
		}
	}
	want(t, e.admin("GET", "/api/v1/users/me", nil), 200, "warm-up")

	e.ddb.setThrottle(writes...)
	check503(e.admin("POST", "/api/v1/secrets", map[string]any{"name": "TOKEN", "value": "s3cr3t-value"}), "create_secret")
	check503(e.admin("POST", "/api/v1/app-conversations", map[string]any{"initial_message": msg("hello")}), "start")
	check503(e.admin("POST", "/api/v1/settings", map[string]any{"llm_model": "openai/other"}), "update_settings")
	// The authorizer's reads fail too: the gateway answers 503, never 401.
	e.ddb.setThrottle("GetItem")
	check503(e.admin("GET", "/api/v1/users/me", nil), "authorizer")
	e.ddb.setThrottle()
	e.ddb.mu.Lock()
	refused := e.ddb.refused
	e.ddb.mu.Unlock()
	if refused == 0 {
		t.Fatal("the proxy refused nothing: the test did not throttle")
	}

	// Nothing half-written: the refused writes are absent and retrying them
	// works.
	want(t, e.admin("GET", "/api/v1/secrets/TOKEN", nil), 404, "refused secret")
	want(t, e.admin("POST", "/api/v1/secrets", map[string]any{"name": "TOKEN", "value": "s3cr3t-value"}), 201, "retried secret")
	var n int
	want(t, e.admin("GET", "/api/v1/app-conversations/start-tasks/count", nil), 200, "count").into(t, &n)
	if n != 0 {
		t.Fatalf("a refused start left %d start tasks", n)
	}
	var settings map[string]any
	want(t, e.admin("GET", "/api/v1/settings", nil), 200, "settings").into(t, &settings)
	if fmt.Sprint(settings["llm_model"]) == "openai/other" {
		t.Fatalf("a refused settings update was stored: %v", settings)
	}
	var tk taskJSON
	want(t, e.admin("POST", "/api/v1/app-conversations", map[string]any{}), 200, "retried start").into(t, &tk)
	e.waitReady(tk.ID, 90*time.Second)
}

func want(t *testing.T, r resp, code int, what string) resp {
	t.Helper()
	if r.status != code {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, code)
	}
	return r
}

// TestAWSDeadLetteredStartEndsInError: a start whose every delivery kills
// the provisioner reaches the dead-letter queue, and the reconciler ends
// it ERROR with a detail instead of leaving it WORKING forever.
func TestAWSDeadLetteredStartEndsInError(t *testing.T) {
	t.Parallel()
	e := newAWSEnv(t, envOptions{provisionerEnv: []string{"ACS_FAILPOINTS=provisioner.receive"}})
	var tk taskJSON
	want(t, e.admin("POST", "/api/v1/app-conversations", map[string]any{}), 200, "start").into(t, &tk)
	var report map[string][]string
	testwait.For(t, 90*time.Second, "the start to be dead-lettered and ended", func() bool {
		if err := e.fns["reconciler"].InvokeJSON(context.Background(), map[string]any{}, &report); err != nil {
			t.Fatalf("reconciler: %v", err)
		}
		return len(report["dead_lettered_tasks"]) > 0
	})
	if fmt.Sprint(report["dead_lettered_tasks"]) != "["+tk.ID+"]" {
		t.Fatalf("dead-lettered %v, want [%s]", report["dead_lettered_tasks"], tk.ID)
	}
	var tasks []taskJSON
	want(t, e.admin("GET", "/api/v1/app-conversations/start-tasks?ids="+tk.ID, nil), 200, "get_start_tasks").into(t, &tasks)
	if tasks[0].Status != "ERROR" || tasks[0].Detail == nil || !strings.Contains(*tasks[0].Detail, "failed repeatedly at WORKING") {
		t.Fatalf("dead-lettered task %+v", tasks[0])
	}
	if e.fns["provisioner"].Restarts() < 3 {
		t.Fatalf("the provisioner died %d times, want at least the queue's 3 receives", e.fns["provisioner"].Restarts())
	}
}
