package functions_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/acs-project/acs/client"
	acsevents "github.com/acs-project/acs/events"
	"github.com/acs-project/acs/internal/testwait"
	"github.com/acs-project/acs/sandbox/agentwire"
	"github.com/acs-project/acs/sandbox/llm/llmtest"
	"github.com/acs-project/acs/shared/acs"
	"github.com/acs-project/acs/shared/api"
	"github.com/acs-project/acs/shared/v1wire"
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

func msg(text string) *agentwire.SendMessageRequest {
	return &agentwire.SendMessageRequest{Role: "user", Content: []acsevents.Content{&acsevents.TextContent{Text: text}}, Run: true}
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
		// Raw on purpose: the Gateway's own answers (no function ran)
		// must have the V1 body shape.
		r := e.call(c.method, c.path, nil, c.key)
		var body v1wire.DetailBody
		r.into(t, &body)
		if r.status != c.want || body.Detail == "" {
			t.Errorf("%s: %d %s, want %d with a detail", c.name, r.status, r.body, c.want)
		}
	}

	// Start → READY, measuring what DynamoDB serves for it.
	e.ddb.snapshot()
	ctx := t.Context()
	admin := e.api(adminKey)
	// And how many queue deliveries (provisioner invocations, one message
	// each here) it takes.
	inv0 := e.fns["provisioner"].Invocations()
	tk, err := admin.StartConversation(ctx, &v1wire.StartRequest{InitialMessage: msg("Say hi in the shell and write notes/result.md")})
	e.ok(err, 200, "start")
	ready := e.waitReady(tk.ID, 90*time.Second)
	startOps, startRCU, startWCU := e.ddb.snapshot()
	deliveries := e.fns["provisioner"].Invocations() - inv0
	t.Logf("one start flow (POST to READY): %d queue deliveries for %d steps (one delivery per step, as before steps due at once shared a delivery, would be %d plus the same waits)",
		deliveries, len(ready.Steps)-1, len(ready.Steps)-1)
	if got := stepsOf(ready); got != allSteps {
		t.Fatalf("recorded steps %s", got)
	}
	if ready.AppConversationID == nil || ready.SandboxID == nil {
		t.Fatalf("READY task lacks ids: %+v", ready)
	}
	convID, sbID := ready.AppConversationID, *ready.SandboxID
	t.Logf("one start flow (POST to READY): DynamoDB %.1f RCU, %.1f WCU as DynamoDB Local reports; operations %v", startRCU, startWCU, startOps)

	var conv v1wire.Conversation
	testwait.For(t, 90*time.Second, "the agent to finish", func() bool {
		cs, err := admin.GetConversations(ctx, *convID)
		if err != nil || len(cs) != 1 || cs[0] == nil {
			t.Fatalf("conversation %s not served: %v", *convID, err)
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
	page, err := admin.SearchEvents(ctx, *convID, client.Filter{"limit": {"100"}})
	e.ok(err, 200, "search_events")
	pageOps, pageRCU, _ := e.ddb.snapshot()
	t.Logf("one events page (%d events): DynamoDB %.1f RCU as DynamoDB Local reports; operations %v", len(page.Items), pageRCU, pageOps)
	var transcript []byte
	for _, ev := range page.Items {
		transcript = append(transcript, acsevents.MustEncode(ev)...)
	}
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
	ctx := t.Context()
	admin := e.api(adminKey)
	// Users and keys; another user sees none of the admin's work.
	me, err := admin.Me(ctx)
	e.ok(err, 200, "get_me")
	if me.ID != api.AdminID || !me.Admin {
		t.Fatalf("me %+v", me)
	}
	bob, err := admin.CreateUser(ctx, "bob")
	e.ok(err, 201, "create_user")
	asBob := e.api(bob.Key.Key)
	seen, err := asBob.GetConversations(ctx, convID)
	e.ok(err, 200, "bob's get")
	if len(seen) != 1 || seen[0] != nil {
		t.Fatalf("bob sees the admin's conversation: %s", mustJSON(seen))
	}
	_, err = asBob.SearchEvents(ctx, convID, nil)
	e.fails(err, 404, "bob's events")
	key, err := admin.CreateKey(ctx, "ci")
	e.ok(err, 201, "create_key")
	_, err = e.api(key.Key).ListKeys(ctx)
	e.ok(err, 200, "list_keys with the new key")
	e.ok(admin.DeleteKey(ctx, key.ID), 200, "delete_key")
	_, err = e.api(key.Key).Me(ctx)
	e.fails(err, 401, "a deleted key")

	// Settings and secrets.
	_, err = admin.GetSettings(ctx)
	e.ok(err, 200, "get_settings")
	_, err = admin.UpdateSettings(ctx, &v1wire.SettingsRequest{LLMModel: client.Set("openai/e2e-model")})
	e.ok(err, 200, "update_settings")
	_, err = admin.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "NPM_TOKEN", Value: "npm-secret-987"})
	e.ok(err, 201, "create_secret")
	list, err := admin.ListSecrets(ctx)
	e.ok(err, 200, "list_secrets")
	v := "npm-secret-654"
	_, err = admin.UpdateSecret(ctx, "NPM_TOKEN", &v1wire.UpdateSecretRequest{Value: &v})
	e.ok(err, 200, "update_secret")
	got, err := admin.GetSecret(ctx, "NPM_TOKEN")
	e.ok(err, 200, "get_secret")
	if strings.Contains(mustJSON(list), "npm-secret") || strings.Contains(mustJSON(got), "npm-secret") {
		t.Fatalf("a secret value was served: %s %s", mustJSON(list), mustJSON(got))
	}
	e.ok(admin.DeleteSecret(ctx, "NPM_TOKEN"), 200, "delete_secret")
	_, err = admin.GetSecret(ctx, "NPM_TOKEN")
	e.fails(err, 404, "deleted secret")

	// Start tasks and conversations.
	_, err = admin.GetStartTasks(ctx, taskID)
	e.ok(err, 200, "get_start_tasks")
	_, err = admin.SearchStartTasks(ctx, nil)
	e.ok(err, 200, "search_start_tasks")
	_, err = admin.CountStartTasks(ctx, nil)
	e.ok(err, 200, "count_start_tasks")
	_, err = admin.SearchConversations(ctx, nil)
	e.ok(err, 200, "search_conversations")
	n, err := admin.CountConversations(ctx, nil)
	e.ok(err, 200, "count_conversations")
	if n != 1 {
		t.Fatalf("count_conversations %d, want 1", n)
	}
	patched, err := admin.UpdateConversation(ctx, convID, &v1wire.UpdateRequest{Title: client.Set("Renamed on AWS")})
	e.ok(err, 200, "update_conversation")
	if patched.Title == nil || *patched.Title != "Renamed on AWS" {
		t.Fatalf("patched %+v", patched)
	}

	// Review endpoints, through the sandbox's agent server.
	file, err := admin.ReadFile(ctx, convID, "notes/result.md")
	e.ok(err, 200, "read_file")
	if !strings.Contains(file, "on AWS") {
		t.Fatalf("read_file %v", file)
	}
	for _, r := range []struct {
		name string
		call func() error
	}{
		{"git/changes", func() error { _, err := admin.GitChanges(ctx, convID, ""); return err }},
		{"git/diff", func() error { _, err := admin.GitDiff(ctx, convID, "notes/result.md"); return err }},
		{"skills", func() error { _, err := admin.Skills(ctx, convID); return err }},
		{"hooks", func() error { _, err := admin.Hooks(ctx, convID); return err }},
	} {
		if err := r.call(); client.StatusOf(err) >= 500 || (err != nil && client.StatusOf(err) == 0) {
			t.Fatalf("%s: %v", r.name, err)
		}
	}

	// Events by count and id, and the download.
	count, err := admin.CountEvents(ctx, convID, nil)
	e.ok(err, 200, "count_events")
	p, err := admin.SearchEvents(ctx, convID, client.Filter{"limit": {"1"}})
	e.ok(err, 200, "search_events")
	byID, err := admin.GetEvents(ctx, convID, p.Items[0].EventBase().ID)
	e.ok(err, 200, "get_events")
	if len(byID) != 1 || byID[0] == nil {
		t.Fatalf("get_events %v", byID)
	}
	dl, err := admin.DownloadConversation(ctx, convID)
	e.ok(err, 200, "download_conversation")
	zr, err := zip.NewReader(bytes.NewReader(dl), int64(len(dl)))
	if err != nil {
		t.Fatalf("download is not a zip (%d bytes): %v", len(dl), err)
	}
	if len(zr.File) != count+1 {
		t.Fatalf("download holds %d files, want %d events + meta.json", len(zr.File), count)
	}

	// Messages.
	_, err = admin.SendMessage(ctx, convID, &v1wire.SendMessageRequest{Role: "user", Content: msg("noted").Content, Run: false})
	e.ok(err, 200, "send_message")
	_, err = admin.AddPendingMessage(ctx, convID, &v1wire.PendingMessageRequest{Content: msg("and one more").Content})
	e.ok(err, 201, "add_pending_message")

	// Specs and sandboxes.
	_, err = admin.SearchSandboxSpecs(ctx, nil)
	e.ok(err, 200, "search_sandbox_specs")
	_, err = admin.GetSandboxSpecs(ctx, "acs-default")
	e.ok(err, 200, "get_sandbox_specs")
	_, err = admin.SearchSandboxes(ctx, nil)
	e.ok(err, 200, "search_sandboxes")
	_, err = admin.GetSandboxes(ctx, sbID)
	e.ok(err, 200, "get_sandboxes")
	newSandbox := func() string {
		sb, err := admin.CreateSandbox(ctx, "")
		e.ok(err, 200, "create_sandbox")
		testwait.For(t, 60*time.Second, "sandbox "+sb.ID+" to run", func() bool {
			got, err := admin.GetSandboxes(ctx, sb.ID)
			if err != nil {
				t.Fatal(err)
			}
			return got[0] != nil && got[0].Status == "RUNNING"
		})
		return sb.ID
	}
	sb2 := newSandbox()
	e.ok(admin.PauseSandbox(ctx, sb2), 200, "pause_sandbox")
	e.ok(admin.ResumeSandbox(ctx, sb2), 200, "resume_sandbox")
	e.ok(admin.DeleteSandbox(ctx, sb2), 200, "delete_sandbox")
	arch, err := e.s3.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(e.bucket), Prefix: aws.String("archives/" + sb2 + "/")})
	if err != nil || len(arch.Contents) != 1 {
		t.Fatalf("workspace archive of a deleted sandbox in S3: %v %v", arch, err)
	}
	sb3 := newSandbox()
	want(t, e.admin("DELETE", "/api/v1/sandboxes?sandbox_id="+sb3, nil), 200, "delete_sandbox_by_query")

	// Stream-start ends with a well-formed array through the gateway, then
	// that conversation is deleted with its sandbox.
	var states []v1wire.StartTask
	for st, err := range admin.StreamStart(ctx, &v1wire.StartRequest{}) {
		if err != nil {
			t.Fatalf("stream_start_conversation: %v", err)
		}
		states = append(states, st)
	}
	if e.status.get() != 200 || len(states) == 0 || states[0].Status != "WORKING" {
		t.Fatalf("stream-start: HTTP %d, states %s", e.status.get(), mustJSON(states))
	}
	done := e.waitReady(states[0].ID, 90*time.Second)
	e.ok(admin.DeleteConversation(ctx, *done.AppConversationID), 200, "delete_conversation")
	_, err = admin.SearchEvents(ctx, *done.AppConversationID, nil)
	e.fails(err, 404, "a deleted conversation's events")

	webClientRoutesOnce(t, e)
	signInRoutesOnce(t, e)
}

// webClientRoutesOnce calls the routes of the OpenHands web frontend:
// its configuration, the settings schemas, LLM profiles, secret and skill
// search, git providers and the git pickers.
func webClientRoutesOnce(t *testing.T, e *awsEnv) {
	ctx := t.Context()
	admin := e.api(adminKey)

	cfg, err := e.api("").WebClientConfig(ctx)
	e.ok(err, 200, "get_web_client_config without a key")
	if cfg.AppMode != "oss" || cfg.AuthURL == nil || *cfg.AuthURL != "/login" || len(cfg.ProvidersConfigured) != 0 {
		t.Fatalf("web client config %s", mustJSON(cfg))
	}
	as, err := admin.AgentSettingsSchema(ctx)
	e.ok(err, 200, "get_agent_schema")
	if len(as.Sections) == 0 {
		t.Fatalf("agent schema without sections: %s", mustJSON(as))
	}
	cs, err := admin.ConversationSettingsSchema(ctx)
	e.ok(err, 200, "get_conversation_schema")
	if len(cs.Sections) == 0 {
		t.Fatalf("conversation schema without sections: %s", mustJSON(cs))
	}

	// LLM profiles: save the current LLM settings, read, rename, activate,
	// delete.
	saved, err := admin.SaveLLMProfile(ctx, "e2e", nil)
	e.ok(err, 201, "save_profile")
	if saved.Name != "e2e" {
		t.Fatalf("save_profile %+v", saved)
	}
	pl, err := admin.ListLLMProfiles(ctx)
	e.ok(err, 200, "list_profiles")
	if len(pl.Profiles) != 1 || pl.Profiles[0].Name != "e2e" || pl.Profiles[0].Model == nil || *pl.Profiles[0].Model != "openai/e2e-model" {
		t.Fatalf("list_profiles %s", mustJSON(pl))
	}
	pd, err := admin.GetLLMProfile(ctx, "e2e")
	e.ok(err, 200, "get_profile")
	if pd.Name != "e2e" || !strings.Contains(string(pd.Config), "openai/e2e-model") || strings.Contains(string(pd.Config), "sk-e2e") {
		t.Fatalf("get_profile %s", mustJSON(pd))
	}
	renamed, err := admin.RenameLLMProfile(ctx, "e2e", "e2e-renamed")
	e.ok(err, 200, "rename_profile")
	if renamed.Name != "e2e-renamed" {
		t.Fatalf("rename_profile %+v", renamed)
	}
	_, err = admin.GetLLMProfile(ctx, "e2e")
	e.fails(err, 404, "a renamed profile's old name")
	act, err := admin.ActivateLLMProfile(ctx, "e2e-renamed")
	e.ok(err, 200, "activate_profile")
	if act.Model == nil || *act.Model != "openai/e2e-model" {
		t.Fatalf("activate_profile %s", mustJSON(act))
	}
	_, err = admin.DeleteLLMProfile(ctx, "e2e-renamed")
	e.ok(err, 200, "delete_profile")
	if pl, err = admin.ListLLMProfiles(ctx); err != nil || len(pl.Profiles) != 0 {
		t.Fatalf("profiles after delete_profile: %s %v", mustJSON(pl), err)
	}

	// Secret and skill search.
	_, err = admin.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "SEARCH_ME", Value: "searched-value-123"})
	e.ok(err, 201, "create_secret")
	found, err := admin.SearchSecrets(ctx, client.Filter{"name__contains": {"SEARCH"}})
	e.ok(err, 200, "search_secrets")
	if len(found.Items) != 1 || found.Items[0].Name != "SEARCH_ME" || strings.Contains(mustJSON(found), "searched-value") {
		t.Fatalf("search_secrets %s", mustJSON(found))
	}
	e.ok(admin.DeleteSecret(ctx, "SEARCH_ME"), 200, "delete_secret")
	skills, err := admin.SearchSkills(ctx, nil)
	e.ok(err, 200, "search_skills")
	if skills.Items == nil && !strings.Contains(mustJSON(skills), `"items":[]`) {
		t.Fatalf("search_skills %s", mustJSON(skills))
	}

	// The git pickers without a provider token: 401 from the function.
	github := client.Filter{"provider": {"github"}}
	_, err = admin.SearchGitRepositories(ctx, github)
	e.fails(err, 401, "search_git_repositories without a token")
	_, err = admin.SearchGitBranches(ctx, client.Filter{"provider": {"github"}, "repository": {"acme/widgets"}})
	e.fails(err, 401, "search_git_branches without a token")
	_, err = admin.SearchGitInstallations(ctx, github)
	e.fails(err, 401, "search_git_installations without a token")

	// Git provider tokens: stored sealed (read from the table), unset and
	// deleted; the web client config (an open route, which resolves the
	// caller's key itself) lists them.
	providers := func() string {
		t.Helper()
		st, err := e.store.GetSettings(context.Background(), api.AdminID)
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, p := range st.ProviderTokens {
			if strings.Contains(p.Sealed, "ghp_") {
				t.Fatalf("a provider token stored unsealed: %s", mustJSON(st.ProviderTokens))
			}
			ps = append(ps, p.Provider)
		}
		cfg, err := admin.WebClientConfig(ctx)
		e.ok(err, 200, "get_web_client_config with a key")
		if got := fmt.Sprint(cfg.ProvidersConfigured); got != fmt.Sprint(ps) {
			t.Fatalf("web client config lists providers %s, stored %v", got, ps)
		}
		return fmt.Sprint(ps)
	}
	tok := "ghp_e2e-token-0123456789"
	_, err = admin.SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: &tok}})
	e.ok(err, 200, "set_git_providers")
	if got := providers(); got != "[github]" {
		t.Fatalf("providers after set_git_providers: %s", got)
	}
	_, err = admin.UnsetGitProviders(ctx)
	e.ok(err, 200, "unset_git_providers")
	if got := providers(); got != "[]" {
		t.Fatalf("providers after unset_git_providers: %s", got)
	}
	_, err = admin.SetGitProviders(ctx, map[string]v1wire.ProviderTokenIn{"github": {Token: &tok}})
	e.ok(err, 200, "set_git_providers again")
	want(t, e.admin("DELETE", "/api/v1/secrets/git-providers", nil), 200, "delete_git_providers")
	if got := providers(); got != "[]" {
		t.Fatalf("providers after delete_git_providers: %s", got)
	}
}

// browser sends a request through the gateway as a browser would: with
// headers (a cookie, an Origin, a form's content type) and without
// following redirects.
func (e *awsEnv) browser(method, path, form string, header map[string]string) resp {
	e.t.Helper()
	var body io.Reader
	if form != "" {
		body = strings.NewReader(form)
	}
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

// page checks an HTML page's status and that it shows text.
func page(t *testing.T, r resp, code int, text, what string) {
	t.Helper()
	if r.status != code || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.body), text) {
		t.Fatalf("%s: %d %s %s, want %d HTML showing %q", what, r.status, r.header.Get("Content-Type"), r.body, code, text)
	}
}

// signInRoutesOnce signs a browser in with the admin key, uses the
// session through the gateway, and ends it (revoke_sessions), then signs
// in and out again.
func signInRoutesOnce(t *testing.T, e *awsEnv) {
	ctx := t.Context()
	page(t, e.browser("GET", "/login", "", nil), 200, `name="api_key"`, "login_page")
	page(t, e.browser("GET", "/login/oidc", "", nil), 404, "not configured", "login_oidc without an issuer")
	page(t, e.browser("GET", "/login/oidc/callback?code=x", "", nil), 401, "did not start here", "login_oidc_callback without state")
	page(t, e.browser("GET", "/logout", "", nil), 200, "not signed in", "logout_page")

	origin := map[string]string{"Origin": e.url}
	form := url.Values{"api_key": {adminKey}, "next": {"/somewhere"}}.Encode()
	page(t, e.browser("POST", "/login", form, nil), 403, "Cross-site", "login without an Origin")
	signIn := func() string {
		t.Helper()
		r := e.browser("POST", "/login", form, origin)
		var session string
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == api.SessionCookie {
				session = c.Value
			}
		}
		if r.status != 303 || r.header.Get("Location") != "/somewhere" || session == "" {
			t.Fatalf("login: %d %v %s, want 303 to /somewhere with an %s cookie", r.status, r.header, r.body, api.SessionCookie)
		}
		return api.SessionCookie + "=" + session
	}
	cookie := map[string]string{"Cookie": signIn()}

	// The session authenticates API requests through the gateway.
	r := e.browser("GET", "/api/v1/users/me", "", cookie)
	var me v1wire.User
	r.into(t, &me)
	if r.status != 200 || me.ID != api.AdminID {
		t.Fatalf("get_me with the session cookie: %d %s", r.status, r.body)
	}
	page(t, e.browser("GET", "/logout", "", cookie), 200, `id="user">admin<`, "logout_page signed in")
	n, err := e.api(adminKey).RevokeSessions(ctx, "me")
	e.ok(err, 200, "revoke_sessions")
	if n != 1 {
		t.Fatalf("revoke_sessions ended %d sessions, want 1", n)
	}
	if r := e.browser("GET", "/api/v1/users/me", "", cookie); r.status != 401 {
		t.Fatalf("get_me with a revoked session: %d %s, want 401", r.status, r.body)
	}

	// Sign in again and out with the button.
	cookie = map[string]string{"Cookie": signIn(), "Origin": e.url}
	r = e.browser("POST", "/logout", "", cookie)
	if r.status != 303 || r.header.Get("Location") != "/login?signed_out=1" || !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), "\n"), api.SessionCookie+"=;") {
		t.Fatalf("logout: %d %v %s, want 303 to /login?signed_out=1 clearing the cookie", r.status, r.header, r.body)
	}
	if r := e.browser("GET", "/api/v1/users/me", "", cookie); r.status != 401 {
		t.Fatalf("get_me after logout: %d %s, want 401", r.status, r.body)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAWSProvisionerCrashes: the provisioner dies right after each start
// step it runs, once (the message is redelivered each time); the start
// still ends READY with exactly one sandbox and one conversation. (Without
// a repository the preparation, setup-script and hooks steps have nothing
// to do and the skills are loaded once the sandbox answers: they are
// recorded in the waiting step's write, after which it crashes.)
func TestAWSProvisionerCrashes(t *testing.T) {
	t.Parallel()
	var points []string
	steps := strings.Split(allSteps, ",")
	for _, st := range steps[:len(steps)-1] {
		switch acs.StartTaskStatus(st) {
		case acs.TaskPreparingRepository, acs.TaskRunningSetupScript, acs.TaskSettingUpGitHooks, acs.TaskSettingUpSkills:
			continue
		}
		points = append(points, "provisioner.after."+st)
	}
	marks := t.TempDir()
	e := newAWSEnv(t, envOptions{provisionerEnv: []string{"ACS_FAILPOINTS=" + strings.Join(points, ","), "ACS_FAILPOINT_DIR=" + marks}})

	ctx := t.Context()
	admin := e.api(adminKey)
	tk, err := admin.StartConversation(ctx, &v1wire.StartRequest{})
	e.ok(err, 200, "start")
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
	n, err := admin.CountConversations(ctx, nil)
	e.ok(err, 200, "count_conversations")
	sbs, err := admin.SearchSandboxes(ctx, nil)
	e.ok(err, 200, "search_sandboxes")
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
	ctx := t.Context()
	admin := e.api(adminKey)
	check503 := func(err error, what string) {
		t.Helper()
		var ae *acs.Error
		if client.StatusOf(err) != 503 || !errors.As(err, &ae) || ae.Code != acs.EUNAVAILABLE || ae.Message == "" { // EUNAVAILABLE: with Retry-After
			t.Fatalf("%s while DynamoDB throttles: %v (HTTP %d), want 503 with Retry-After and a detail", what, err, client.StatusOf(err))
		}
	}
	_, err := admin.Me(ctx)
	e.ok(err, 200, "warm-up")

	e.ddb.setThrottle(writes...)
	_, err = admin.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "TOKEN", Value: "s3cr3t-value"})
	check503(err, "create_secret")
	_, err = admin.StartConversation(ctx, &v1wire.StartRequest{InitialMessage: msg("hello")})
	check503(err, "start")
	_, err = admin.UpdateSettings(ctx, &v1wire.SettingsRequest{LLMModel: client.Set("openai/other")})
	check503(err, "update_settings")
	// The authorizer's reads fail too: the gateway answers 503, never 401.
	e.ddb.setThrottle("GetItem")
	_, err = admin.Me(ctx)
	check503(err, "authorizer")
	e.ddb.setThrottle()
	e.ddb.mu.Lock()
	refused := e.ddb.refused
	e.ddb.mu.Unlock()
	if refused == 0 {
		t.Fatal("the proxy refused nothing: the test did not throttle")
	}

	// Nothing half-written: the refused writes are absent and retrying them
	// works.
	_, err = admin.GetSecret(ctx, "TOKEN")
	e.fails(err, 404, "refused secret")
	_, err = admin.CreateSecret(ctx, &v1wire.CreateSecretRequest{Name: "TOKEN", Value: "s3cr3t-value"})
	e.ok(err, 201, "retried secret")
	n, err := admin.CountStartTasks(ctx, nil)
	e.ok(err, 200, "count")
	if n != 0 {
		t.Fatalf("a refused start left %d start tasks", n)
	}
	settings, err := admin.GetSettings(ctx)
	e.ok(err, 200, "settings")
	if settings.LLMModel != nil && *settings.LLMModel == "openai/other" {
		t.Fatalf("a refused settings update was stored: %+v", settings)
	}
	tk, err := admin.StartConversation(ctx, &v1wire.StartRequest{})
	e.ok(err, 200, "retried start")
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
	ctx := t.Context()
	admin := e.api(adminKey)
	tk, err := admin.StartConversation(ctx, &v1wire.StartRequest{})
	e.ok(err, 200, "start")
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
	tasks, err := admin.GetStartTasks(ctx, tk.ID)
	e.ok(err, 200, "get_start_tasks")
	if tasks[0].Status != "ERROR" || tasks[0].Detail == nil || !strings.Contains(*tasks[0].Detail, "failed repeatedly at WORKING") {
		t.Fatalf("dead-lettered task %+v", tasks[0])
	}
	if e.fns["provisioner"].Restarts() < 3 {
		t.Fatalf("the provisioner died %d times, want at least the queue's 3 receives", e.fns["provisioner"].Restarts())
	}
}
